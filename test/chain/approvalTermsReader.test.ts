/**
 * The service's reader of ApprovalEnforcer terms (src/chain/Approvals.ts `decodeApprovalTerms`,
 * and the summary written from it) against the contract on the run's local chain (h48d item 3):
 * terms in the old per-transfer encoding and in the per-period one (the version byte 0x00) read
 * back as signed and decide as the contract does; terms the service never builds but a chain
 * would hold (a token named twice, an approver named twice) read as the contract enforces them,
 * never with a limit the contract does not apply; a forged version byte or kind, and terms cut
 * short anywhere, are refused by both (the contract: `invalid-terms`).
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { type Address, BaseError, ContractFunctionRevertedError, encodePacked, type Hex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { approvalTerms, type ApprovalRule, decodeApprovalTerms, needsApproval } from "../../src/chain/Approvals.ts"
import { Chain } from "../../src/chain/Chain.ts"
import { approvalEnforcerAbi } from "../../src/chain/contracts/Approvals.ts"
import { Network } from "../../src/chain/Network.ts"
import { grantTermsOf, makeGrant } from "../../src/delegations/Grant.ts"
import { makePolicySet } from "../../src/delegations/Policy.ts"
import { decodeSignedTerms } from "../../src/delegations/SignedTerms.ts"
import { humanSummary } from "../../src/delegations/Summary.ts"
import type { Token } from "../../src/tokens/TokenRegistry.ts"
import { summaryEnvironment } from "../delegations/summaryOf.ts"
import { approvalEnforcer as enforcer, client, net, packed, transferOf } from "./approvalFixtures.ts"

const usdc = net.tokens.usd.address.toLowerCase() as Address
const bob = privateKeyToAccount(generatePrivateKey()).address
const [a1, a2] = [privateKeyToAccount(generatePrivateKey()).address.toLowerCase() as Address, privateKeyToAccount(generatePrivateKey()).address.toLowerCase() as Address]
const USDC: Token = { chainId: 31337, symbol: "USDC", name: "USD Coin", address: usdc, decimals: 6 }
const M = 1_000_000n

const reasonOf = (e: unknown) => {
  const revert = e instanceof BaseError ? e.walk((x) => x instanceof ContractFunctionRevertedError) : undefined
  return revert instanceof ContractFunctionRevertedError ? revert.reason ?? revert.shortMessage : String(e)
}

/** The contract's own decision for a transfer of `units` USDC to bob: `true`/`false`, or its revert reason. */
const onChain = (terms: Hex, units: bigint) =>
  Effect.promise(() =>
    client.readContract({ address: enforcer, abi: approvalEnforcerAbi, functionName: "needsApproval", args: [terms, packed(transferOf(usdc, bob, units))] })
      .then((b) => b, reasonOf)
  )

/** The reader's decision for the same transfer, or `invalid-terms` where it reads no rule. */
const offChain = (terms: Hex, units: bigint) => {
  const rule = decodeApprovalTerms(terms)
  return rule === undefined ? "ApprovalEnforcer:invalid-terms" : needsApproval(rule, transferOf(usdc, bob, units))
}

/** Per-transfer terms as bytes: m ‖ n ‖ approvers ‖ (token ‖ threshold)…, written by hand (the service never builds duplicates). */
const raw = (m: number, approvers: ReadonlyArray<Address>, thresholds: ReadonlyArray<readonly [Address, bigint]>): Hex =>
  encodePacked(
    ["uint8", "uint8", ...approvers.map(() => "address" as const), ...thresholds.flatMap(() => ["address", "uint256"] as const)],
    [m, approvers.length, ...approvers, ...thresholds.flatMap(([t, u]) => [t, u] as const)]
  )
const perDay = (kind: number, body: Hex): Hex => `${encodePacked(["uint8", "uint8", "uint64", "uint64"], [0, kind, 86_400n, 1n])}${body.slice(2)}`

/** The summary a grant whose ApprovalEnforcer caveat holds `terms` gets (the build's words, from the caveats read back). */
const summaryWith = (terms: Hex): string => {
  const made = makePolicySet({
    chainId: 31337,
    budgets: [{ token: { symbol: "USDC" }, amount: 5000 }],
    perActionMax: { token: { symbol: "USDC" }, amount: 5000 },
    approval: { required: 1, approvers: [a1], thresholds: [{ token: { symbol: "USDC" }, amount: 1 }] }
  } as never, [USDC], new Date("2026-01-01T00:00:00.000Z"))
  if (made._tag !== "Ok") throw new Error(made.message)
  const parties = { delegator: a2, delegate: bob.toLowerCase() as Address, salt: "0x01" as Hex }
  const grant = makeGrant(summaryEnvironment, grantTermsOf(made.policy, () => 6, parties, new Date("2026-01-01T00:00:00.000Z"))!)
  if (grant._tag === "Invalid") throw new Error(grant.message)
  const at = summaryEnvironment.caveatEnforcers["ApprovalEnforcer"]!.toLowerCase()
  const delegation = { ...grant.delegation, caveats: grant.delegation.caveats.map((c) => (c.enforcer.toLowerCase() === at ? { ...c, terms } : c)) }
  const signed = decodeSignedTerms(delegation as never, summaryEnvironment)
  if ("problem" in signed) return `problem: ${signed.problem}`
  return humanSummary(signed, (a) => (a.toLowerCase() === usdc ? USDC : undefined), undefined, 1_767_225_600)
}

const ChainLive = Chain.layer.pipe(Layer.provide(Layer.succeed(Network, net)))

layer(ChainLive)("the service's reader of ApprovalEnforcer terms, against the contract", (it) => {
  it.effect("old (per transfer) and new (version byte 0x00, per period) encodings read back as signed and decide as the contract does", () =>
    Effect.gen(function*() {
      const old: ApprovalRule = { required: 1, approvers: [a1, a2], thresholds: [{ token: usdc, units: 5n * M }] }
      const periodic: ApprovalRule = { ...old, window: { seconds: 86_400, startSeconds: 1, perRecipient: true } }
      for (const rule of [old, periodic]) {
        const terms = approvalTerms(rule)
        assert.deepStrictEqual(decodeApprovalTerms(terms), rule)
        for (const units of [1n, 5n * M, 5n * M + 1n]) assert.strictEqual(offChain(terms, units), yield* onChain(terms, units), `${terms} ${units}`)
      }
      assert.strictEqual(approvalTerms(old).slice(0, 4), "0x01", "the old encoding starts with m ≥ 1")
      assert.strictEqual(approvalTerms(periodic).slice(0, 6), "0x0002", "the new one with 0x00 and its kind")
      assert.include(summaryWith(approvalTerms(old)), "The approval threshold is per transfer")
      assert.include(summaryWith(approvalTerms(periodic)), "cumulative per token and recipient")
    }))

  it.effect("a token named twice: the contract reads its first threshold, and so do the reader and the summary (never the other)", () =>
    Effect.gen(function*() {
      for (const [first, second] of [[1000n * M, 5n * M], [5n * M, 1000n * M]] as const) {
        for (const terms of [raw(1, [a1], [[usdc, first], [usdc, second]]), perDay(1, raw(1, [a1], [[usdc, first], [usdc, second]]))]) {
          for (const units of [5n * M, 100n * M, 1001n * M]) {
            assert.strictEqual(offChain(terms, units), yield* onChain(terms, units), `${first}/${second}: ${units}`)
          }
          assert.deepStrictEqual(decodeApprovalTerms(terms)?.thresholds, [{ token: usdc, units: first }], "only the threshold the contract reads")
          const words = summaryWith(terms)
          const shown = first === 1000n * M ? "1000 USDC" : "5 USDC"
          const never = first === 1000n * M ? "5 USDC" : "1000 USDC"
          assert.include(words, `more than ${shown}`.replace("more than", terms.startsWith("0x00") ? "above" : "more than"), words)
          assert.notInclude(words, ` ${never}`, `the summary states a threshold the contract does not apply: ${words}`)
        }
      }
    }))

  it.effect("an approver named twice counts once on chain: the reader states each approver once, and no rule where the contract can never be satisfied", () =>
    Effect.gen(function*() {
      // 1 of [a1, a1]: a1 alone approves; 2 of [a1, a1, a2]: a1 and a2; 2 of [a1, a1]: never (a1 counts once).
      const one = raw(1, [a1, a1], [[usdc, 5n * M]])
      assert.deepStrictEqual(decodeApprovalTerms(one)?.approvers, [a1])
      const words = summaryWith(one)
      assert.strictEqual(words.split(a1).length - 1, 1, words)
      const two = raw(2, [a1, a1, a2], [[usdc, 5n * M]])
      assert.deepStrictEqual([decodeApprovalTerms(two)?.required, decodeApprovalTerms(two)?.approvers], [2, [a1, a2]])
      const never = raw(2, [a1, a1], [[usdc, 5n * M]])
      assert.isUndefined(decodeApprovalTerms(never), "2 distinct approvals of one approver can never be given")
      assert.match(summaryWith(never), /^problem: /)
      // The contract holds the same terms (its shape is valid) and decides transfers as before; the approvals are counted per distinct approver (test/approvals/flow.test.ts: duplicate-approver).
      for (const terms of [one, two, never]) assert.strictEqual(yield* onChain(terms, 1n), false)
    }))

  it.effect("a forged version byte or kind, and terms cut short anywhere, are refused by the contract and read as no rule", () =>
    Effect.gen(function*() {
      const body = raw(1, [a1, a2], [[usdc, 5n * M]])
      const periodic = perDay(2, body)
      const forged: Array<Hex> = [
        perDay(3, body), // an unknown kind after the version byte
        perDay(0, body),
        perDay(255, body),
        `0x00${body.slice(2)}` as Hex // the version byte put before per-transfer terms (no header)
      ]
      const cut: Array<Hex> = []
      for (const terms of [body, periodic]) {
        for (let bytes = 1; bytes < (terms.length - 2) / 2; bytes++) {
          const short = terms.slice(0, 2 + 2 * bytes) as Hex
          // A cut that ends exactly after the approvers is still valid terms (no thresholds: everything needs approvals).
          if (decodeApprovalTerms(short) !== undefined) continue
          cut.push(short)
        }
      }
      assert.isAbove(cut.length, 40)
      for (const terms of [...forged, ...cut]) {
        assert.isUndefined(decodeApprovalTerms(terms), terms)
        assert.strictEqual(yield* onChain(terms, 1n), "ApprovalEnforcer:invalid-terms", terms)
      }
      // The valid prefixes the reader does read (no thresholds) decide as the contract: every transfer needs approvals.
      for (const terms of [raw(1, [a1, a2], []), perDay(2, raw(1, [a1, a2], []))]) {
        assert.deepStrictEqual(decodeApprovalTerms(terms)?.thresholds, [])
        assert.strictEqual(offChain(terms, 1n), yield* onChain(terms, 1n))
        assert.isTrue(offChain(terms, 1n) as boolean)
      }
    }))
})
