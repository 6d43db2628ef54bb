/**
 * Approvals above a threshold, held on chain (issue 25): a grant whose delegation carries the
 * ApprovalEnforcer caveat (2 of 3: the owner's account, a co-signer's key, a guardian's smart
 * account; USDC transfers above 5 need them), attacked by its delegate around the service: its
 * own redemptions (the kit + viem), straight to the bundler and bundled by itself. Every
 * attempt without the approvals the rule asks for is refused by the chain with the enforcer's
 * reason and moves nothing (balances read on chain); below the threshold, and with the
 * approvals, the transfer executes, once.
 */
import { assert, describe, it } from "@effect/vitest"
import type { Delegation } from "@metamask/smart-accounts-kit"
import { hashDelegation } from "@metamask/smart-accounts-kit/utils"
import { Effect } from "effect"
import { type Address, type Hash, type Hex, parseUnits } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { makeHybridDeleGator } from "../../src/chain/Accounts4337.ts"
import { type ApprovalRule, type ApprovalSet, approvalTypedData, randomApprovalNonce } from "../../src/chain/Approvals.ts"
import { legTypedData, randomSalt } from "../../src/delegations/Caveats.ts"
import { type GrantScope, makeGrant, redeemArgs } from "../../src/delegations/Grant.ts"
import { approvalEnforcerAbi } from "../../src/chain/contracts/Approvals.ts"
import { approvalEnforcer, chainNow, client, deployedAccount, net, transferOf } from "../chain/approvalFixtures.ts"
import { mint } from "../support/TestChain.ts"
import { balances, makeAttacker, redeemCall, refused, succeeds, transfer } from "./attacker.ts"

process.env.DO_NOT_TRACK = "1"

const USD = (n: number) => parseUnits(String(n), 6)
const usdc = net.tokens.usd.address
const randomAddress = () => privateKeyToAccount(generatePrivateKey()).address

interface Signer {
  readonly address: Address
  readonly signTypedData: (td: never) => Promise<Hex>
}

describe("approvals above a threshold, around the service", () => {
  it.live("the delegate's own redemptions: nothing above the threshold moves without 2 of 3 approvals of that exact transfer", () =>
    Effect.gen(function*() {
      // The owner's account, the guardian's smart account and the co-signer's key approve; the
      // owner's account holds 100 USDC and grants 50, at most 20 per action, to Alice or Bob.
      const owner = yield* Effect.promise(deployedAccount)
      const guardian = yield* Effect.promise(deployedAccount)
      const cosigner = privateKeyToAccount(generatePrivateKey())
      const stranger = privateKeyToAccount(generatePrivateKey())
      const [alice, bob] = [randomAddress(), randomAddress()]
      yield* mint("usd", owner.address, 100)

      const delegateKey = generatePrivateKey()
      const stack = makeHybridDeleGator({ chainId: net.chainId, entryPoint: net.entryPoint, environment: net.delegation })
      const delegateAccount = yield* stack.counterfactualAccount(privateKeyToAccount(delegateKey).address, 0n)
      const attacker = yield* makeAttacker(delegateKey, delegateAccount.address)

      const rule: ApprovalRule = {
        required: 2,
        approvers: [owner.address, cosigner.address, guardian.address],
        thresholds: [{ token: usdc, units: USD(5) }]
      }
      const now = Number(yield* Effect.promise(chainNow))
      const makeSigned = (salt: Hex) =>
        Effect.promise(async () => {
          const made = makeGrant(net.delegation, {
            delegator: owner.address,
            delegate: attacker.account.address,
            budgets: [{ token: usdc, units: USD(50), perActionUnits: USD(20) }],
            targets: [usdc],
            recipients: [alice, bob],
            maxActions: 10,
            startSeconds: now - 60,
            expiresAtSeconds: now + 3600,
            salt,
            approval: rule
          })
          if (made._tag !== "Ok") throw new Error(made.message)
          const signature = await owner.account.signTypedData(legTypedData(made.delegation, net.chainId, net.delegation.DelegationManager) as never)
          const signed: Delegation = { ...made.delegation, signature }
          return { signed, scope: made.scope, hash: hashDelegation(signed) as Hash }
        })
      const grant = yield* makeSigned(randomSalt())
      assert.strictEqual(
        grant.signed.caveats.at(-1)!.enforcer.toLowerCase(),
        approvalEnforcer.toLowerCase(),
        "the approval rule is the grant's last caveat"
      )

      // The owner's account signs through its owner key (ERC-1271), the guardian's likewise.
      const ownerSigner: Signer = { address: owner.address, signTypedData: (td) => owner.account.signTypedData(td) }
      const guardianSigner: Signer = { address: guardian.address, signTypedData: (td) => guardian.account.signTypedData(td) }
      const cosignerSigner: Signer = { address: cosigner.address, signTypedData: (td) => cosigner.signTypedData(td) }
      const approve = (
        signers: ReadonlyArray<Signer>,
        t: { to: Address; units: bigint },
        options: { nonce?: bigint; deadline?: bigint; hash?: Hash } = {}
      ) =>
        Effect.promise(async (): Promise<ApprovalSet> => {
          const nonce = options.nonce ?? randomApprovalNonce()
          const deadline = options.deadline ?? (await chainNow()) + 600n
          const td = approvalTypedData({
            chainId: net.chainId,
            enforcer: approvalEnforcer,
            delegationHash: options.hash ?? grant.hash,
            execution: transferOf(usdc, t.to, t.units),
            nonce,
            deadline
          })
          return {
            nonce,
            deadline,
            approvals: await Promise.all(signers.map(async (s) => ({ approver: s.address, signature: await s.signTypedData(td as never) })))
          }
        })
      /** The delegate's own redemption of `units` to `to`, carrying `set` (or no approvals). */
      const redemption = (t: { to: Address; units: bigint }, set?: ApprovalSet, g: { signed: Delegation; scope: GrantScope } = grant) =>
        redeemCall(redeemArgs(net.delegation, g.signed, g.scope, { token: usdc, to: t.to, ...(set === undefined ? {} : { approvals: set }) })!, transfer(usdc, t.to, t.units))
      const watch = { tokens: [usdc], holders: [owner.address, alice, bob] }
      const six = { to: alice, units: USD(6) }

      // At the threshold: no approval needed (and the delegate's account is deployed by it).
      yield* succeeds(attacker, redemption({ to: alice, units: USD(5) }))
      assert.deepStrictEqual(yield* balances(attacker, [usdc], [owner.address, alice]), [USD(95), USD(5)])

      // Above it: none, one of the two, the same approver twice.
      yield* refused(attacker, watch, redemption(six), "ApprovalEnforcer:not-enough-approvals")
      yield* refused(attacker, watch, redemption(six, yield* approve([cosignerSigner], six)), "ApprovalEnforcer:not-enough-approvals")
      yield* refused(attacker, watch, redemption(six, yield* approve([cosignerSigner, cosignerSigner], six)), "ApprovalEnforcer:duplicate-approver")

      // Approvals of another transfer: another amount, another recipient, another grant (same delegate, same owner).
      yield* refused(attacker, watch, redemption(six, yield* approve([ownerSigner, cosignerSigner], { to: alice, units: USD(7) })), "ApprovalEnforcer:invalid-signature")
      const forBob = yield* approve([ownerSigner, cosignerSigner], { to: bob, units: USD(6) })
      yield* refused(attacker, watch, redemption(six, forBob), "ApprovalEnforcer:invalid-signature")
      const other = yield* makeSigned(randomSalt())
      const forOther = yield* approve([ownerSigner, cosignerSigner], six, { hash: other.hash })
      yield* refused(attacker, watch, redemption(six, forOther), "ApprovalEnforcer:invalid-signature")

      // A stranger: as itself, and its signature under a named approver's address.
      yield* refused(attacker, watch, redemption(six, yield* approve([cosignerSigner, stranger], six)), "ApprovalEnforcer:approver-not-named")
      const strangers = yield* approve([cosignerSigner, stranger], six)
      const posing = { ...strangers, approvals: [strangers.approvals[0]!, { approver: owner.address, signature: strangers.approvals[1]!.signature }] }
      yield* refused(attacker, watch, redemption(six, posing), "ApprovalEnforcer:invalid-signature")

      // An ERC-1271 approver whose account refuses: the guardian's account, signed by a key that is not its owner's.
      const notGuardian: Signer = { address: guardian.address, signTypedData: (td) => stranger.signTypedData(td) }
      yield* refused(attacker, watch, redemption(six, yield* approve([cosignerSigner, notGuardian], six)), "ApprovalEnforcer:invalid-signature")

      // After its deadline: approved for a moment that has passed on the chain's clock.
      const soon = (yield* Effect.promise(chainNow)) + 1n
      const expiring = yield* approve([ownerSigner, cosignerSigner], six, { deadline: soon })
      while ((yield* Effect.promise(chainNow)) <= soon) {
        yield* Effect.sleep("300 millis")
        yield* Effect.promise(() => client.request({ method: "evm_mine" as never }))
      }
      yield* refused(attacker, watch, redemption(six, expiring), "ApprovalEnforcer:expired")

      // Approved by the co-signer's key (ECDSA) and the guardian's account (ERC-1271): executes, once.
      const approved = yield* approve([cosignerSigner, guardianSigner], six)
      yield* succeeds(attacker, redemption(six, approved))
      assert.deepStrictEqual(yield* balances(attacker, [usdc], [owner.address, alice]), [USD(89), USD(11)])
      yield* refused(attacker, watch, redemption(six, approved), "ApprovalEnforcer:nonce-used")
      // The owner's account and the co-signer, to Bob; the spent nonce is this grant's only:
      // the other grant's approval with the very same nonce executes there.
      yield* succeeds(attacker, redemption({ to: bob, units: USD(6) }, forBob))
      const sameNonce = yield* approve([ownerSigner, guardianSigner], six, { nonce: approved.nonce, hash: other.hash })
      yield* succeeds(attacker, redemption(six, sameNonce, other))
      assert.deepStrictEqual(yield* balances(attacker, [usdc], [owner.address, alice, bob]), [USD(77), USD(17), USD(6)])
      const spent = (hash: Hash, nonce: bigint) =>
        Effect.promise(() =>
          client.readContract({
            address: approvalEnforcer,
            abi: approvalEnforcerAbi,
            functionName: "spent",
            args: [net.delegation.DelegationManager, hash, nonce]
          })
        )
      assert.isTrue(yield* spent(grant.hash, approved.nonce), "spent under the DelegationManager and this grant")
      assert.isTrue(yield* spent(other.hash, approved.nonce))
      assert.isFalse(yield* spent(grant.hash, expiring.nonce), "a refused approval spends nothing")
    }), { timeout: 120_000 })
})
