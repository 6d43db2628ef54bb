/**
 * Two agents on one budget (issue 25, item 4). In this service one on-chain budget is shared
 * when the grant names a second redeemer (`redeemers: named`, or `redelegation`): the delegate
 * A passes the grant to agent B with a child delegation, and B's redemptions of [child, grant]
 * run the grant's own caveats — its budget, its approval rule — on the grant's own enforcer
 * state. Through the service, a grant is acted on by its delegate's signer, from any number of
 * sessions (two agent processes on one key). (Two grants never share an on-chain budget: each
 * grant's enforcers keep their state under its own hash.)
 *
 * Both above the threshold, both approved, both at once:
 *   - through the service, two sessions of the delegate asking at once: the reservation takes
 *     one and refuses the other (`cap_exceeded`) when together they would exceed the budget;
 *   - A's approved request relayed through the service while B redeems, around the service, a
 *     transfer the approver approved for it out of band: the chain lets exactly one through;
 *   - B redeeming A's own approvals while A relays them: the transfer happens once.
 * Balances read on chain; the service's `spentToDate` equals what left the owner's account.
 */
import { assert, layer } from "@effect/vitest"
import { DelegationManager } from "@metamask/delegation-abis"
import { type Delegation, ExecutionMode } from "@metamask/smart-accounts-kit"
import { encodeDelegations, encodeSingleExecution } from "@metamask/smart-accounts-kit/utils"
import { Duration, Effect } from "effect"
import { type Address, encodeFunctionData, erc20Abi, type Hex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { type ApprovalSet, approvalTypedData, randomApprovalNonce } from "../../src/chain/Approvals.ts"
import { Network } from "../../src/chain/Network.ts"
import { legTypedData } from "../../src/delegations/Caveats.ts"
import { delegationHashOf } from "../../src/follower/Redemptions.ts"
import { grant } from "../delegations/attacker.ts"
import { failure, newSession, relay, session, type Session, signLeg, signOp } from "../delegations/helpers.ts"
import { eoaAgent, tokenBalance } from "../permissions/agent.ts"
import { mint } from "../support/TestChain.ts"
import { TestServerLive } from "../support/TestServer.ts"
import { eventually, keyAddress, randomAddress, setOf, signApproval, USD, withApprovals } from "./support.ts"

process.env.DO_NOT_TRACK = "1"

layer(TestServerLive(), { timeout: Duration.seconds(240), excludeTestServices: true })("two agents on one budget", (it) => {
  it.effect("two sessions at once, and a second redeemer around the service: approved requests never together exceed the budget", () =>
    Effect.gen(function*() {
      const net = yield* Network
      const usdc = net.tokens.usd.address
      const dm = net.delegation.DelegationManager
      const enforcer = net.delegation.caveatEnforcers["ApprovalEnforcer"]!
      const agentKey = generatePrivateKey()
      const [owner, a1, approver] = yield* Effect.all([newSession(), session(agentKey), newSession()])
      const a2 = yield* session(agentKey) // the same agent's second process
      const b = yield* eoaAgent(generatePrivateKey()) // the second agent, a named redeemer
      const [alice, bob, carol, dave, erin] = [randomAddress(), randomAddress(), randomAddress(), randomAddress(), randomAddress()]
      yield* mint("usd", owner.account.address as Hex, 100)
      const ownerStart = yield* tokenBalance(usdc, owner.account.address)
      const g = yield* grant(owner, a1, {
        budgets: [{ token: { symbol: "USDC" }, amount: 20 }],
        perActionMax: { token: { symbol: "USDC" }, amount: 20 },
        maxActions: 20,
        redeemers: { mode: "named", addresses: [b.address] },
        approval: { required: 1, approvers: [keyAddress(approver)], thresholds: [{ token: { symbol: "USDC" }, amount: 5 }] }
      } as Parameters<typeof grant>[2])
      const permissionId = (yield* owner.api.delegations.get({ params: { delegationId: g.id } })).permissionId as Hex

      // Below the threshold the agent acts alone (this also deploys its account, whose ERC-1271 signs B's child delegation).
      const small = yield* a1.api.delegations.act({ params: { delegationId: g.id }, payload: { recipient: dave, amount: 3 } })
      assert.strictEqual((yield* relay(a1.api, yield* signOp(agentKey, small.userOp))).outcome, "mined")

      // 1. Through the service, both sessions at once, 10 each with 17 left: one request opens, the other is refused.
      const asked = yield* Effect.all([
        failure(a1.api.delegations.act({ params: { delegationId: g.id }, payload: { recipient: alice, amount: 10 } })),
        failure(a2.api.delegations.act({ params: { delegationId: g.id }, payload: { recipient: erin, amount: 10 } }))
      ], { concurrency: 2 })
      assert.sameMembers(asked.map((a) => a.reason), ["approval_required", "cap_exceeded"], JSON.stringify(asked))
      const opened = asked.find((a) => a.reason === "approval_required")!
      const winner = opened === asked[0] ? { api: a1.api, to: alice } : { api: a2.api, to: erin }
      const r1 = yield* approver.api.approvals.get({ params: { approvalId: opened.details["approvalId"] as string } })
      const approved = yield* approver.api.approvals.approve({ params: { approvalId: r1.id }, payload: { signature: yield* signApproval(approver.key, r1) } })
      assert.strictEqual(approved.status, "approved")
      // Still held while approved: another 10 from either session is refused.
      assert.strictEqual((yield* failure(a2.api.delegations.act({ params: { delegationId: g.id }, payload: { recipient: carol, amount: 10 } }))).reason, "cap_exceeded")

      // 2. Around the service: the approver also approves (out of band) 10 to bob for B; B's child delegation [A → B].
      const child = yield* childOf(agentKey, g.signed, b.address, a1.account.address as Address, net.chainId, dm)
      const ownApproval = (to: Address, units: bigint) =>
        Effect.gen(function*() {
          const nonce = randomApprovalNonce()
          const deadline = BigInt(Math.floor(Date.now() / 1000) + 3600)
          const signature = yield* Effect.promise(() =>
            privateKeyToAccount(approver.key).signTypedData(approvalTypedData({
              chainId: net.chainId, enforcer, delegationHash: permissionId, execution: execution(usdc, to, units), nonce, deadline
            }))
          )
          return { nonce, deadline, approvals: [{ approver: keyAddress(approver), signature }] } satisfies ApprovalSet
        })
      const bRedeems = (set: ApprovalSet, to: Address, units: bigint) =>
        Effect.gen(function*() {
          const root = yield* withApprovals(g.signed, set)
          return yield* Effect.promise(() => b.send(redeemChain(dm, [child, root], execution(usdc, to, units))))
        })
      const forBob = yield* ownApproval(bob, USD(10))
      const build1 = yield* winner.api.approvals.build({ params: { approvalId: r1.id } })
      const op1 = yield* signOp(agentKey, build1.userOp)
      // Both at once: A's relayed operation and B's own transaction. 3 + 10 + 10 > 20: the chain lets one through.
      const [viaService, viaB] = yield* Effect.all([Effect.result(relay(winner.api, op1)), bRedeems(forBob, bob, USD(10))], { concurrency: 2 })
      const [toWinner, toBob] = [yield* tokenBalance(usdc, winner.to), yield* tokenBalance(usdc, bob)]
      assert.sameMembers([toWinner, toBob], [USD(10), 0n], `exactly one of the two went through (service: ${JSON.stringify(viaService)}, B: ${viaB.ok})`)
      assert.strictEqual(viaB.ok, toBob === USD(10), "B's transaction succeeded exactly when bob was paid")
      if (toBob === USD(10)) {
        // B first: the service's operation was declined before submission or reverted on chain; its request is not executed.
        const mined = viaService._tag === "Success" && viaService.success.outcome === "mined"
        assert.isFalse(mined, "the service's operation did not execute as well")
        assert.notStrictEqual((yield* approver.api.approvals.get({ params: { approvalId: r1.id } })).status, "executed")
      } else {
        assert.include(viaB.ok ? "" : viaB.reason, "MultiTokenPeriodEnforcer", "B's transaction reverts on the budget")
        yield* eventually(approver.api.approvals.get({ params: { approvalId: r1.id } }), (r) => r.status === "executed")
      }
      yield* recordEqualsChain(owner, g.id, usdc, ownerStart, USD(13))

      // 3. 7 left. A's next request (6, approved) relayed while B replays the very same approvals itself: one transfer.
      const asked2 = yield* failure(a2.api.delegations.act({ params: { delegationId: g.id }, payload: { recipient: carol, amount: 6 } }))
      assert.strictEqual(asked2.reason, "approval_required", asked2.message)
      const r2 = yield* approver.api.approvals.get({ params: { approvalId: asked2.details["approvalId"] as string } })
      const sig2 = yield* signApproval(approver.key, r2)
      assert.strictEqual((yield* approver.api.approvals.approve({ params: { approvalId: r2.id }, payload: { signature: sig2 } })).status, "approved")
      // The service holds the 6 for it: nothing above the remaining 1 may open meanwhile.
      assert.strictEqual((yield* failure(a1.api.delegations.act({ params: { delegationId: g.id }, payload: { recipient: erin, amount: 6 } }))).reason, "cap_exceeded")
      const op2 = yield* signOp(agentKey, (yield* a2.api.approvals.build({ params: { approvalId: r2.id } })).userOp)
      const stolen = setOf(r2, [{ approver: keyAddress(approver), signature: sig2 }])
      const [service2, b2] = yield* Effect.all([Effect.result(relay(a2.api, op2)), bRedeems(stolen, carol, USD(6))], { concurrency: 2 })
      assert.strictEqual(yield* tokenBalance(usdc, carol), USD(6), `the approved transfer happened once (service: ${JSON.stringify(service2)}, B: ${b2.ok})`)
      const serviceMined = service2._tag === "Success" && service2.success.outcome === "mined"
      assert.isTrue(serviceMined !== b2.ok, "exactly one of the two executed it")
      if (!b2.ok) assert.match(b2.reason, /ApprovalEnforcer:nonce-used|MultiTokenPeriodEnforcer/)
      yield* recordEqualsChain(owner, g.id, usdc, ownerStart, USD(19))

      // 4. 1 left: B's own approved 6 (out of band) is refused by the chain, and the service opens nothing above 1.
      const late = yield* ownApproval(bob, USD(6))
      const before = yield* tokenBalance(usdc, bob)
      const refused = yield* bRedeems(late, bob, USD(6))
      assert.isFalse(refused.ok)
      assert.include(refused.ok ? "" : refused.reason, "MultiTokenPeriodEnforcer")
      assert.strictEqual(yield* tokenBalance(usdc, bob), before)
      assert.strictEqual((yield* failure(a1.api.delegations.act({ params: { delegationId: g.id }, payload: { recipient: erin, amount: 2 } }))).reason, "cap_exceeded")
      yield* recordEqualsChain(owner, g.id, usdc, ownerStart, USD(19))
    }))
})

const execution = (token: Address, to: Address, units: bigint) => ({
  target: token,
  value: 0n,
  callData: encodeFunctionData({ abi: erc20Abi, functionName: "transfer", args: [to, units] })
})

/** The delegate A's child delegation of `grant` to `to`, with no caveats of its own, signed by A's key for its account (ERC-1271). */
const childOf = (key: Hex, parent: Delegation, to: Address, from: Address, chainId: number, dm: Address) =>
  Effect.gen(function*() {
    const unsigned: Delegation = {
      delegate: to,
      delegator: from,
      authority: delegationHashOf({ ...parent, salt: BigInt(parent.salt) }),
      caveats: [],
      salt: "0x01",
      signature: "0x"
    }
    const signature = yield* signLeg(key, legTypedData(unsigned, chainId, dm) as never)
    return { ...unsigned, signature } as Delegation
  })

/** `redeemDelegations([[leaf, …, root]], [single default], [execution])` as B's own transaction. */
const redeemChain = (dm: Address, context: ReadonlyArray<Delegation>, e: ReturnType<typeof execution>) => ({
  to: dm,
  data: encodeFunctionData({
    abi: DelegationManager,
    functionName: "redeemDelegations",
    args: [[encodeDelegations([...context])], [ExecutionMode.SingleDefault as Hex], [encodeSingleExecution(e)]]
  })
})

/**
 * What the service records equals what the chain shows: the grant's `spentToDate` is `spent`,
 * and exactly `spent` left the owner's account (balances read on chain).
 */
const recordEqualsChain = (owner: Session, delegationId: string, usdc: Address, ownerStart: bigint, spent: bigint) =>
  Effect.gen(function*() {
    assert.strictEqual(ownerStart - (yield* tokenBalance(usdc, owner.account.address)), spent, "what left the owner's account")
    const read = yield* eventually(
      owner.api.delegations.get({ params: { delegationId } }),
      (d) => USD(d.spentToDate[0]!.spent) === spent
    ).pipe(Effect.catchDefect(() => owner.api.delegations.get({ params: { delegationId } })))
    assert.strictEqual(USD(read.spentToDate[0]!.spent), spent, "the service's record")
  })
