/**
 * ApprovalEnforcer's per-period thresholds (issue 44) on the run's local chain, its hooks called as
 * the DelegationManager calls them (from a fresh EOA standing in for it: the counts are keyed by
 * the caller, so no one else's are touched; the DelegationManager path is test/approvals/perPeriod.test.ts):
 * the terms' encoding read back the same by TypeScript and refused when malformed, the count per
 * token and per token and recipient, an approved execution not counted, the off-chain decision equal
 * to the contract's, and the gas of each path (figures in docs/onchain.md).
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { BaseError, ContractFunctionRevertedError, encodePacked, type Hash, type Hex, keccak256, pad, toHex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import {
  approvalArgs,
  approvalTerms,
  approvalTypedData,
  type ApprovalRule,
  decodeApprovalTerms,
  type Execution,
  invalidRule,
  MAX_PERIOD_THRESHOLD,
  needsApproval,
  unapprovedInPeriod,
  verifyApprovals
} from "../../src/chain/Approvals.ts"
import { Chain } from "../../src/chain/Chain.ts"
import { approvalEnforcerAbi } from "../../src/chain/contracts/Approvals.ts"
import { Network } from "../../src/chain/Network.ts"
import { approvalEnforcer as enforcer, chainNow, client, fundedKey, net, packed, transferOf } from "./approvalFixtures.ts"

const usdc = net.tokens.usd.address
const usdt = net.tokens.usdt.address
const bob = privateKeyToAccount(generatePrivateKey()).address
const carol = privateKeyToAccount(generatePrivateKey()).address
const SINGLE_DEFAULT: Hex = pad("0x00", { size: 32 })
const approver = privateKeyToAccount(generatePrivateKey())

const ruleOf = (perRecipient: boolean, startSeconds: number): ApprovalRule => ({
  required: 1,
  approvers: [approver.address],
  thresholds: [{ token: usdc, units: 10_000_000n }],
  window: { seconds: 86_400, startSeconds, perRecipient }
})

const reasonOf = (e: unknown) => {
  const revert = e instanceof BaseError ? e.walk((x) => x instanceof ContractFunctionRevertedError) : undefined
  return revert instanceof ContractFunctionRevertedError ? revert.reason ?? revert.shortMessage : String(e)
}

const ChainLive = Chain.layer.pipe(Layer.provide(Layer.succeed(Network, net)))

layer(ChainLive)("ApprovalEnforcer per period", (it) => {
  it.effect("terms: encoded and read back the same, per-transfer terms unchanged, malformed ones refused", () =>
    Effect.gen(function*() {
      const rule = ruleOf(true, 1_700_000_000)
      const terms = approvalTerms(rule)
      assert.deepStrictEqual(decodeApprovalTerms(terms), { ...rule, approvers: [approver.address.toLowerCase()], thresholds: [{ token: usdc.toLowerCase(), units: 10_000_000n }] } as never)
      // The per-transfer part is the per-transfer kind's own terms, after an 18-byte header.
      const { window: _, ...perTransfer } = rule
      assert.strictEqual(`0x${terms.slice(2 + 36)}`, approvalTerms(perTransfer))
      assert.strictEqual(terms.slice(0, 4), "0x00")
      assert.isUndefined(decodeApprovalTerms(approvalTerms(perTransfer))?.window)
      assert.isString(invalidRule({ ...rule, thresholds: [{ token: usdc, units: MAX_PERIOD_THRESHOLD + 1n }] }))
      assert.isString(invalidRule({ ...rule, window: { seconds: 0, startSeconds: 1, perRecipient: false } }))
      // 16 approvers (the most a rule names here): 20 × 16 does not fit the uint8 arithmetic the token loop once used.
      const many: ApprovalRule = { ...perTransfer, approvers: Array.from({ length: 16 }, () => privateKeyToAccount(generatePrivateKey()).address) }
      for (const r of [many, { ...many, window: rule.window! }]) {
        const answer = yield* Effect.promise(() =>
          client.readContract({ address: enforcer, abi: approvalEnforcerAbi, functionName: "needsApproval", args: [approvalTerms(r), packed(transferOf(usdc, bob, 1n))] })
        )
        assert.isFalse(answer)
      }
      const body = approvalTerms(perTransfer)
      const header = (kind: number, period: bigint) => encodePacked(["uint8", "uint8", "uint64", "uint64"], [0, kind, period, 1n])
      const tooBig = encodePacked(["uint8", "uint8", "address", "address", "uint256"], [1, 1, approver.address, usdc, MAX_PERIOD_THRESHOLD + 1n])
      const exec = packed(transferOf(usdc, bob, 1n))
      for (const t of [`${header(3, 60n)}${body.slice(2)}`, `${header(1, 0n)}${body.slice(2)}`, `${header(1, 60n)}${tooBig.slice(2)}`, header(1, 60n)] as Array<Hex>) {
        assert.isUndefined(decodeApprovalTerms(t), t)
        const answer = yield* Effect.promise(() =>
          client.readContract({ address: enforcer, abi: approvalEnforcerAbi, functionName: "needsApproval", args: [t, exec] }).then(() => "ok", reasonOf)
        )
        assert.strictEqual(answer, "ApprovalEnforcer:invalid-terms", t)
      }
    }))

  it.effect("counts what moves without approvals per token, or per token and recipient; approved executions are not counted; gas", () =>
    Effect.gen(function*() {
      const chain = yield* Chain
      const caller = yield* Effect.promise(fundedKey)
      const now = Number(yield* Effect.promise(chainNow))
      const hash = (s: string) => keccak256(toHex(s)) as Hash
      /** beforeHook sent as a transaction by the stand-in DelegationManager: the gas it used, or the revert reason. */
      const hook = (t: Hex, e: Execution, h: Hash, args: Hex = "0x") =>
        Effect.promise(async () => {
          const call = { address: enforcer, abi: approvalEnforcerAbi, functionName: "beforeHook", args: [t, args, SINGLE_DEFAULT, packed(e), h, bob, carol] } as const
          try {
            await client.simulateContract({ ...call, account: caller.account })
          } catch (err) {
            return reasonOf(err)
          }
          const receipt = await client.waitForTransactionReceipt({ hash: await caller.wallet.writeContract(call) })
          assert.strictEqual(receipt.status, "success")
          return receipt.gasUsed
        })
      /** The contract's `needsApprovalNow` and the service's decision from `unapprovedInPeriod`: the same. */
      const agree = (rule: ApprovalRule, e: Execution, h: Hash) =>
        Effect.gen(function*() {
          const t = approvalTerms(rule)
          const onChain = yield* Effect.promise(() =>
            client.readContract({ address: enforcer, abi: approvalEnforcerAbi, functionName: "needsApprovalNow", args: [caller.account.address, h, t, packed(e)] })
          )
          const counted = yield* unapprovedInPeriod(chain, { enforcer, caller: caller.account.address, delegationHash: h, terms: t, token: e.target, recipient: bob })
          const started = counted.periodEnd > BigInt(rule.window!.startSeconds)
          assert.strictEqual(needsApproval(rule, e, { unapproved: counted.spent, started }), onChain)
          const verified = yield* verifyApprovals(chain, {
            chainId: net.chainId, enforcer, caller: caller.account.address, delegationHash: h, rule, execution: e, set: undefined,
            nowSeconds: BigInt(now), redeemer: carol
          })
          assert.strictEqual(verified.ok, !onChain)
          return onChain
        })

      // Per token: 5 + 5 pass, the third 5 and even 1 more need approvals; USDT has no threshold: always.
      const perToken = ruleOf(false, now - 60)
      const t1 = approvalTerms(perToken)
      const h1 = hash(`per token ${now}`)
      assert.isFalse(yield* agree(perToken, transferOf(usdc, bob, 5_000_000n), h1))
      const firstGas = yield* hook(t1, transferOf(usdc, bob, 5_000_000n), h1)
      const secondGas = yield* hook(t1, transferOf(usdc, carol, 5_000_000n), h1)
      assert.isTrue(yield* agree(perToken, transferOf(usdc, bob, 1n), h1))
      assert.strictEqual(yield* hook(t1, transferOf(usdc, bob, 5_000_000n), h1), "ApprovalEnforcer:not-enough-approvals")
      assert.strictEqual(yield* hook(t1, transferOf(usdc, carol, 1n), h1), "ApprovalEnforcer:not-enough-approvals")
      assert.strictEqual(yield* hook(t1, transferOf(usdt, bob, 1n), h1), "ApprovalEnforcer:not-enough-approvals")
      const counted = yield* unapprovedInPeriod(chain, { enforcer, caller: caller.account.address, delegationHash: h1, terms: t1, token: usdc, recipient: bob })
      assert.strictEqual(counted.spent, 10_000_000n)
      // Another delegation of the same caller, and another caller, count from zero.
      assert.isFalse(yield* agree(perToken, transferOf(usdc, bob, 10_000_000n), hash(`other ${now}`)))

      // An approved execution passes and is not counted.
      const e = transferOf(usdc, bob, 7_000_000n)
      const deadline = BigInt(now + 3_600)
      const typed = approvalTypedData({ chainId: net.chainId, enforcer, delegationHash: h1, execution: e, nonce: 1n, deadline })
      const signature = yield* Effect.promise(() => approver.signTypedData(typed))
      const approvedGas = yield* hook(t1, e, h1, approvalArgs({ nonce: 1n, deadline, approvals: [{ approver: approver.address, signature }] }))
      assert.isTrue(typeof approvedGas === "bigint", String(approvedGas))
      assert.strictEqual((yield* unapprovedInPeriod(chain, { enforcer, caller: caller.account.address, delegationHash: h1, terms: t1, token: usdc, recipient: bob })).spent, 10_000_000n)

      // Per token and recipient: 10 to bob and 10 to carol pass; 1 more to bob does not.
      const perRecipient = ruleOf(true, now - 60)
      const t2 = approvalTerms(perRecipient)
      const h2 = hash(`per recipient ${now}`)
      assert.isTrue(typeof (yield* hook(t2, transferOf(usdc, bob, 10_000_000n), h2)) === "bigint")
      assert.isTrue(typeof (yield* hook(t2, transferOf(usdc, carol, 10_000_000n), h2)) === "bigint")
      assert.isTrue(yield* agree(perRecipient, transferOf(usdc, bob, 1n), h2))
      assert.strictEqual(yield* hook(t2, transferOf(usdc, bob, 1n), h2), "ApprovalEnforcer:not-enough-approvals")

      // Before the first period starts, every transfer needs approvals.
      const later = ruleOf(false, now + 3_600)
      assert.isTrue(yield* agree(later, transferOf(usdc, bob, 1n), h1))
      assert.strictEqual(yield* hook(approvalTerms(later), transferOf(usdc, bob, 1n), hash(`later ${now}`)), "ApprovalEnforcer:not-enough-approvals")

      // Gas of the hook alone (transaction gas less what the same call costs per transfer, where nothing is written).
      const { window: _, ...plain } = perToken
      const plainGas = yield* hook(approvalTerms(plain), transferOf(usdc, bob, 5_000_000n), hash(`plain ${now}`))
      console.log(`ApprovalEnforcer.beforeHook gas (transaction): per transfer below ${plainGas}; per period below, first in the period ${firstGas}, ` +
        `later ${secondGas}; approved (1 approval, per period) ${approvedGas}`)
      assert.isTrue(typeof firstGas === "bigint" && typeof secondGas === "bigint" && typeof plainGas === "bigint")
      // One slot per token (and recipient) per delegation: a fresh slot is one SSTORE from zero, a later one a rewrite.
      assert.isBelow(Number(firstGas) - Number(plainGas), 30_000)
      assert.isBelow(Number(secondGas), Number(firstGas))
    }))
})
