/**
 * The owner's log shows the owner's money (issue 12): a delegated action executed through
 * the relay, one the delegate bundled itself (around the relay), and one declined, each
 * appear on the DELEGATOR's chain with the delegate as actor, the amount, token and
 * recipient that left the account, the delegation and the transaction; the owner is
 * notified; `GET /activity?delegationId=` gives the grant's whole history. A revoke the
 * owner makes with its own wallet (around the relay) revokes the grant in the record too.
 */
import { assert, layer } from "@effect/vitest"
import { Duration, Effect, Schedule } from "effect"
import type { Address, Hex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { Network } from "../../src/chain/Network.ts"
import { disableCalls } from "../../src/delegations/Caveats.ts"
import { mint } from "../support/TestChain.ts"
import { TestServerLive } from "../support/TestServer.ts"
import { grant, makeAttacker, redeemCall, transfer, withArgs } from "./attacker.ts"
import { failure, newSession, relay, signOp } from "./helpers.ts"

process.env.DO_NOT_TRACK = "1"

const randomAddress = () => privateKeyToAccount(generatePrivateKey()).address.toLowerCase() as Address

layer(TestServerLive(), { timeout: Duration.seconds(120), excludeTestServices: true })("the owner's log", (it) => {
  it.effect("delegated actions reach the owner's log whichever path they took, with the delegate as actor", () =>
    Effect.gen(function*() {
      const net = yield* Network
      const owner = yield* newSession()
      const delegate = yield* newSession()
      const alice = randomAddress()
      yield* mint("usd", owner.account.address as Hex, 50)
      const g = yield* grant(owner, delegate, {
        budgets: [{ token: { symbol: "USDC" }, amount: 20 }],
        perActionMax: { token: { symbol: "USDC" }, amount: 5 },
        maxActions: 5
      })
      const delegateAddress = delegate.account.address.toLowerCase()

      // 1. Through the relay, on the delegate's own session.
      const action = yield* delegate.api.delegations.act({ params: { delegationId: g.id }, payload: { recipient: alice, amount: 2 } })
      const receipt = yield* relay(delegate.api, yield* signOp(delegate.key, action.userOp))
      assert.strictEqual(receipt.outcome, "mined")

      // 2. Declined at build (over the per-action maximum).
      const over = yield* failure(delegate.api.delegations.act({ params: { delegationId: g.id }, payload: { recipient: alice, amount: 6 } }))
      assert.strictEqual(over.reason, "per_action_exceeded")

      // 3. Around the relay: the delegate's own redemption in its own handleOps.
      const attacker = yield* makeAttacker(delegate.key, delegate.account.address)
      const own = yield* Effect.promise(() =>
        attacker.viaHandleOps(redeemCall(withArgs(g.signed, net.delegation.caveatEnforcers, { tokenIndex: 0 }), transfer(net.tokens.usd.address, alice, 3_000_000n)))
      )
      assert.isTrue(own.ok, own.ok ? "" : own.reason)

      const history = yield* owner.api.activity.list({ query: { limit: 50, delegationId: g.id } }).pipe(
        Effect.flatMap((page) =>
          page.items.some((e) => e.provenance === "onchain_unrelayed") ? Effect.succeed(page.items) : Effect.fail("follower not there yet")
        ),
        Effect.retry(Schedule.spaced(Duration.millis(250))),
        Effect.timeout(Duration.seconds(30)),
        Effect.orDie
      )
      const byAction = (action: string, status: string) => history.filter((e) => e.action === action && e.status === status)

      // The enable names its delegation.
      assert.lengthOf(byAction("delegation_enable", "executed"), 1)
      // Relayed: the delegate as actor, what left the account, the transaction.
      const relayed = byAction("delegated_action", "executed").find((e) => e.provenance === "onchain")!
      assert.isDefined(relayed)
      assert.strictEqual(relayed.actor, delegateAddress)
      assert.strictEqual(relayed.amount, 2)
      assert.strictEqual(relayed.token, "USDC")
      assert.strictEqual(relayed.recipient, alice)
      assert.strictEqual(relayed.txHash, receipt.transactionHash!.toLowerCase())
      // Around the relay: the same facts, read from the chain.
      const unrelayed = byAction("delegated_action", "executed").find((e) => e.provenance === "onchain_unrelayed")!
      assert.strictEqual(unrelayed.actor, delegateAddress)
      assert.strictEqual(unrelayed.amount, 3)
      assert.strictEqual(unrelayed.token, "USDC")
      assert.strictEqual(unrelayed.recipient, alice)
      // Declined: on the owner's log too.
      const declined = byAction("delegated_action", "declined")
      assert.lengthOf(declined, 1)
      assert.strictEqual(declined[0]!.declineReason, "per_action_exceeded")
      assert.strictEqual(declined[0]!.actor, delegateAddress)
      // Exactly these, once each.
      assert.lengthOf(history, 4)

      // Spent comes from the chain: the self-bundled 3 count with the relayed 2.
      const grantNow = yield* owner.api.delegations.get({ params: { delegationId: g.id } })
      assert.deepStrictEqual(grantNow.spentToDate.map((x) => [x.spent, x.remaining]), [[5, 15]])

      // The delegate's own log has its own view of the relayed action.
      const mine = (yield* delegate.api.activity.list({ query: { limit: 50 } })).items.filter((e) => e.action === "delegated_action")
      assert.lengthOf(mine, 1)
      assert.deepStrictEqual([mine[0]!.actor, mine[0]!.amount, mine[0]!.token, mine[0]!.delegationId, mine[0]!.recipient], ["owner", 2, "USDC", g.id, alice])

      // The owner is told about both executions.
      const notes = yield* owner.api.notifications.list({ query: { unreadOnly: false } })
      const executed = notes.filter((n) => n.title === "Action executed" && n.body.includes("delegated_action"))
      assert.lengthOf(executed, 2)

      // 4. The owner revokes with its own wallet, around the relay: the record follows the chain.
      const ownerKit = yield* makeAttacker(owner.key, owner.account.address)
      const disable = disableCalls(net.delegation.DelegationManager, [g.signed])[0]!
      const revokedOnChain = yield* Effect.promise(() => ownerKit.viaHandleOps({ to: disable.to, data: disable.data! }))
      assert.isTrue(revokedOnChain.ok, revokedOnChain.ok ? "" : revokedOnChain.reason)
      const revokeEntry = yield* owner.api.activity.list({ query: { limit: 50, delegationId: g.id } }).pipe(
        Effect.flatMap((page) => {
          const e = page.items.find((x) => x.action === "delegation_revoke")
          return e === undefined ? Effect.fail("not yet") : Effect.succeed(e)
        }),
        Effect.retry(Schedule.spaced(Duration.millis(250))),
        Effect.timeout(Duration.seconds(30)),
        Effect.orDie
      )
      assert.strictEqual(revokeEntry.provenance, "onchain_unrelayed")
      assert.strictEqual(revokeEntry.status, "executed")
      assert.strictEqual((yield* owner.api.delegations.get({ params: { delegationId: g.id } })).status, "revoked")
    }))
})
