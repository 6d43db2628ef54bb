/**
 * No approver the agent controls (issue 41, item 2). The attack: the owner names as approver an
 * address the agent controls (its key, its smart account, another account of its key, a named
 * redeemer, the owner key of a delegate smart account this service never saw), the agent
 * approves its own 30 USDC request above a 5 USDC threshold, builds and relays it.
 * Through the service: refused when the rule is built (400 naming the approver), when it is
 * changed (an address the agent claimed after the grant: the replacement's build is a 400) and at
 * approval (the agent's own session, or anyone naming the agent's address: 400). Around the
 * service: the agent signs the approval itself (ERC-1271 through its second account) and redeems
 * on its own, straight to the bundler and by its own handleOps: the ApprovalEnforcer refuses it
 * (`approver-is-redeemer`), nothing moves (balances read on chain). An approver the agent does not
 * control still approves, and the transfer executes once.
 */
import { assert, layer } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { type Address, createWalletClient, type Hex, http } from "viem"
import { makeHybridDeleGator } from "../../src/chain/Accounts4337.ts"
import { Network } from "../../src/chain/Network.ts"
import { deployedAccount } from "../chain/approvalFixtures.ts"
import { balances, makeAttacker, redeemCall, refused, transfer } from "../delegations/attacker.ts"
import { failure, newSession, relay, signOp } from "../delegations/helpers.ts"
import { mint } from "../support/TestChain.ts"
import { TestServerLive } from "../support/TestServer.ts"
import { approvalGrant, eventually, keyAddress, randomAddress, setOf, signApproval, USD, withApprovals } from "./support.ts"

process.env.DO_NOT_TRACK = "1"

const above5 = [{ token: { symbol: "USDC" }, amount: 5 }]

layer(TestServerLive(), { timeout: Duration.seconds(240), excludeTestServices: true })("no approver the agent controls", (it) => {
  it.effect("refused when the rule is built: the agent's key, its account, another account of its key, a named redeemer, a delegate account's owner read on chain", () =>
    Effect.gen(function*() {
      const net = yield* Network
      const [owner, delegate, honest] = yield* Effect.all([newSession(), newSession(), newSession()])
      const second = yield* delegate.api.accounts.createAccount({ payload: { label: "second", chainId: net.chainId } })
      const external = yield* Effect.promise(deployedAccount)
      const redeemer = randomAddress()
      const build = (approvers: ReadonlyArray<string>, extra: Record<string, unknown> = {}, delegatee: string = delegate.account.address) =>
        owner.api.delegations.build({
          payload: {
            name: "self-approval",
            kind: "agent",
            delegateeAddress: delegatee,
            chainId: net.chainId,
            budgets: [{ token: { symbol: "USDC" }, amount: 50 }],
            perActionMax: { token: { symbol: "USDC" }, amount: 50 },
            approval: { required: 1, approvers, thresholds: above5 },
            ...extra
          }
        })
      const refusals: ReadonlyArray<readonly [ReadonlyArray<string>, number, string, Record<string, unknown>?, string?]> = [
        [[keyAddress(delegate)], 0, "the agent's signer"],
        [[keyAddress(honest), delegate.account.address], 1, "the delegate itself"],
        [[keyAddress(honest), second.address], 1, "an account of the agent's signer"],
        [[redeemer], 0, "a named redeemer", { redeemers: { mode: "named", addresses: [redeemer] } }],
        // A delegate smart account the service has no record of: its owner key is read on chain.
        [[external.account.address], 0, `a signer of ${external.address.toLowerCase()} on chain`, {}, external.address]
      ]
      for (const [approvers, index, why, extra, delegatee] of refusals) {
        const refusal = yield* failure(build(approvers, extra ?? {}, delegatee))
        assert.strictEqual(refusal.tag, "BadRequest", why)
        assert.strictEqual(refusal.details["field"], `approval.approvers.${index}`, why)
        assert.include(refusal.message, why)
        assert.include(refusal.message, "cannot approve its own actions")
      }
      // An approver the agent does not control: built.
      const ok = yield* build([keyAddress(honest)])
      assert.include(ok.humanSummary, keyAddress(honest))
    }))

  it.effect("an address the agent claims after the grant: refused at approval (its session, or naming it) and at change; the chain refuses its own redemption; an honest approver still approves", () =>
    Effect.gen(function*() {
      const net = yield* Network
      const usdc = net.tokens.usd.address
      const [owner, delegate, honest] = yield* Effect.all([newSession(), newSession(), newSession()])
      const alice = randomAddress()
      yield* mint("usd", owner.account.address as Hex, 100)
      // The agent's next account (index 1 of its key): an address no one here knows yet.
      const stack = makeHybridDeleGator({ chainId: net.chainId, entryPoint: net.entryPoint, environment: net.delegation })
      const next = yield* stack.counterfactualAccount(keyAddress(delegate), 1n)
      const claimed = next.address.toLowerCase() as Address
      const g = yield* approvalGrant(owner, delegate, 50, { required: 1, approvers: [claimed, keyAddress(honest)], thresholds: above5 })

      // The agent claims it: now an account of the agent's signer in this service's records.
      const second = yield* delegate.api.accounts.createAccount({ payload: { label: "mine", chainId: net.chainId } })
      assert.strictEqual(second.address.toLowerCase(), claimed)

      // Its own 30 USDC request above the threshold.
      const held = yield* failure(delegate.api.delegations.act({ params: { delegationId: g.id }, payload: { recipient: alice, amount: 30 } }))
      assert.strictEqual(held.reason, "approval_required")
      const id = held.details["approvalId"] as string
      const request = yield* delegate.api.approvals.get({ params: { approvalId: id } })
      const ownSig = yield* signApproval(delegate.key, request) // what `claimed` vouches for (ERC-1271 by its owner key)

      // At approval: the agent's session (naming itself or not), and anyone naming the agent's address.
      const asAgent = yield* failure(delegate.api.approvals.approve({ params: { approvalId: id }, payload: { signature: ownSig } }))
      assert.strictEqual(asAgent.tag, "BadRequest")
      assert.strictEqual(asAgent.details["field"], "approver")
      assert.include(asAgent.message, "The agent cannot approve its own request")
      const naming = yield* failure(delegate.api.approvals.approve({ params: { approvalId: id }, payload: { signature: ownSig, approver: claimed } }))
      assert.strictEqual(naming.tag, "BadRequest")
      const byOwner = yield* failure(owner.api.approvals.approve({ params: { approvalId: id }, payload: { signature: ownSig, approver: claimed } }))
      assert.strictEqual(byOwner.tag, "BadRequest")
      assert.strictEqual(byOwner.details["field"], "approver")
      assert.include(byOwner.message, "controlled by the agent")
      const after = yield* owner.api.approvals.get({ params: { approvalId: id } })
      assert.deepStrictEqual([after.status, after.approvals.length], ["pending", 0], "nothing stored")

      // At change: the agent asks for more; the owner's replacement (same rule) is refused naming the approver.
      const change = yield* delegate.api.approvals.askChange({
        payload: { delegationId: g.id, reason: "more", changes: { budgets: [{ token: { symbol: "USDC" }, amount: 60 }] } }
      })
      const rebuilt = yield* failure(owner.api.approvals.buildChange({ params: { changeId: change.id } }))
      assert.strictEqual(rebuilt.tag, "BadRequest")
      assert.strictEqual(rebuilt.details["field"], "approval.approvers.0")
      assert.include(rebuilt.message, "an account of the agent's signer")

      // Around the service: the agent deploys its second account, which vouches for the agent's own
      // signature (ERC-1271), and redeems its own approval: the chain refuses it, nothing moves.
      const attacker = yield* makeAttacker(delegate.key, delegate.account.address)
      const wallet = createWalletClient({ chain: attacker.publicClient.chain, transport: http(net.rpcUrl), account: attacker.eoa })
      const deployed = yield* Effect.promise(async () =>
        attacker.publicClient.waitForTransactionReceipt({ hash: await wallet.sendTransaction({ to: next.factory, data: next.factoryData }) }))
      assert.strictEqual(deployed.status, "success")
      const watch = { tokens: [usdc], holders: [owner.account.address as Hex, alice] }
      const own = setOf(request, [{ approver: claimed, signature: ownSig }])
      yield* refused(attacker, watch, redeemCall(yield* withApprovals(g.signed, own), transfer(usdc, alice, USD(30))), "ApprovalEnforcer:approver-is-redeemer")

      // The honest approver approves; the agent builds and relays; 30 USDC move once.
      const approved = yield* honest.api.approvals.approve({ params: { approvalId: id }, payload: { signature: yield* signApproval(honest.key, request) } })
      assert.strictEqual(approved.status, "approved")
      const before = yield* balances(attacker, [usdc], [alice])
      const built = yield* delegate.api.approvals.build({ params: { approvalId: id } })
      assert.strictEqual((yield* relay(delegate.api, yield* signOp(delegate.key, built.userOp))).outcome, "mined")
      assert.deepStrictEqual(yield* balances(attacker, [usdc], [alice]), [before[0]! + USD(30)])
      yield* eventually(owner.api.approvals.get({ params: { approvalId: id } }), (r) => r.status === "executed")
    }))
})
