/**
 * The approval terms' version byte, around the service (h48d item 3): the delegate holds the
 * owner's signed grant with an approval threshold, in the old per-transfer encoding and in the
 * new per-period one (version byte 0x00), and redeems 30 USDC above the 5 USDC threshold itself,
 * with no approvals, after rewriting the ApprovalEnforcer caveat's terms: the version byte flipped
 * (per period read as per transfer and back), an unknown kind, the threshold raised, its own key
 * named approver, an approver named twice, the terms cut short, the caveat dropped. The chain
 * refuses each (straight to the bundler and by its own handleOps) and nothing moves: the owner
 * signed the terms, so any change is a delegation the owner never signed. The terms as signed are
 * refused for want of approvals (`ApprovalEnforcer:not-enough-approvals`), and a transfer below the
 * threshold goes through under both encodings.
 */
import { assert, layer } from "@effect/vitest"
import type { Delegation } from "@metamask/smart-accounts-kit"
import { Duration, Effect } from "effect"
import { type Address, concat, type Hex, sliceHex } from "viem"
import { approvalTerms, decodeApprovalTerms } from "../../src/chain/Approvals.ts"
import { Network } from "../../src/chain/Network.ts"
import { type GrantInput, grant, makeAttacker, redeemCall, refused, succeeds, transfer } from "../delegations/attacker.ts"
import { newSession } from "../delegations/helpers.ts"
import { mint } from "../support/TestChain.ts"
import { TestServerLive } from "../support/TestServer.ts"
import { keyAddress, randomAddress, USD, withApprovals } from "./support.ts"

process.env.DO_NOT_TRACK = "1"

layer(TestServerLive(), { timeout: Duration.seconds(300), excludeTestServices: true })("forged approval terms, around the service", (it) => {
  it.effect("old and new encodings: any rewrite of the signed terms (version byte, kind, threshold, approvers, length) is refused on chain; nothing moves", () =>
    Effect.gen(function*() {
      const net = yield* Network
      const usdc = net.tokens.usd.address
      const at = net.delegation.caveatEnforcers["ApprovalEnforcer"]!.toLowerCase()
      const [owner, delegate, approver] = yield* Effect.all([newSession(), newSession(), newSession()])
      yield* mint("usd", owner.account.address as Hex, 100)
      const bob = randomAddress()
      const attacker = yield* makeAttacker(delegate.key, delegate.account.address)
      const watch = { tokens: [usdc], holders: [owner.account.address as Address, bob] }
      const thresholds = [{ token: { symbol: "USDC" }, amount: 5 }]
      const base = { budgets: [{ token: { symbol: "USDC" }, amount: 50 }], perActionMax: { token: { symbol: "USDC" }, amount: 50 }, maxActions: 20 }
      const old = yield* grant(owner, delegate, { ...base, approval: { required: 1, approvers: [keyAddress(approver)], thresholds } } as GrantInput)
      const periodic = yield* grant(owner, delegate, {
        ...base,
        approval: { required: 1, approvers: [keyAddress(approver)], thresholds, period: { every: "day" } }
      } as GrantInput)

      for (const [label, g] of [["per transfer", old], ["per period", periodic]] as const) {
        const signedTerms = (g.signed as Delegation).caveats.find((c) => c.enforcer.toLowerCase() === at)!.terms as Hex
        const rule = decodeApprovalTerms(signedTerms)!
        assert.strictEqual(rule.window === undefined, label === "per transfer", `${label}: the encoding the service built`)
        const perTransfer = approvalTerms({ required: rule.required, approvers: rule.approvers, thresholds: rule.thresholds })
        const raised = approvalTerms({ ...rule, thresholds: rule.thresholds.map((t) => ({ ...t, units: USD(1000) })) })
        const forged: ReadonlyArray<readonly [string, Hex | undefined]> = [
          // The version byte: per-period terms stripped to the per-transfer encoding, per-transfer ones given a period header.
          ["version byte", rule.window === undefined
            ? approvalTerms({ ...rule, window: { seconds: 1, startSeconds: 0, perRecipient: false } })
            : perTransfer],
          ["unknown kind", rule.window === undefined ? concat(["0x0003", "0x0000000000015180", "0x0000000000000001", signedTerms]) : concat(["0x0003", sliceHex(signedTerms, 2)])],
          ["threshold raised", raised],
          ["its own key as approver", approvalTerms({ ...rule, approvers: [keyAddress(delegate)] })],
          ["an approver named twice", concat([
            sliceHex(signedTerms, 0, rule.window === undefined ? 1 : 19),
            "0x02",
            rule.approvers[0]!,
            sliceHex(signedTerms, rule.window === undefined ? 2 : 20)
          ])],
          ["cut short", sliceHex(signedTerms, 0, Math.floor((signedTerms.length - 2) / 2) - 7)],
          ["the caveat dropped", undefined]
        ]
        const execution = transfer(usdc, bob, USD(30))
        const as = (terms: Hex | undefined) =>
          Effect.map(withApprovals(g.signed as Delegation, undefined), (d) =>
            ({
              ...d,
              caveats: terms === undefined ? d.caveats.filter((c) => c.enforcer.toLowerCase() !== at) : d.caveats.map((c) => (c.enforcer.toLowerCase() === at ? { ...c, terms } : c))
            }) as Delegation)
        // As signed: 30 is above the threshold and no one approved it.
        yield* refused(attacker, watch, redeemCall(yield* as(signedTerms), execution), "ApprovalEnforcer:not-enough-approvals")
        for (const [what, terms] of forged) {
          assert.notStrictEqual(terms, signedTerms, what)
          // Any rewrite is a delegation the owner never signed: its hash changes and the owner's account refuses the signature.
          yield* refused(attacker, watch, redeemCall(yield* as(terms), execution), "InvalidERC1271Signature").pipe(
            Effect.mapError((e) => new Error(`${label}, ${what}: ${String(e)}`))
          )
        }
        // Below the threshold, as signed: the transfer goes through (the terms hold what the owner signed).
        yield* succeeds(attacker, redeemCall(yield* as(signedTerms), transfer(usdc, bob, USD(2))))
      }
    }), { timeout: 280_000 })
})
