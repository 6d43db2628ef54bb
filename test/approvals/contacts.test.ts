/**
 * Approvers who do not sign in here (issue 25): the owner registers a signed webhook for an
 * approver its grant names; a real loopback receiver gets the request's notification (signed
 * with the contact's secret, the deep link, the request id) at once, and its approval with it.
 * Scoping: no webhook for an address that approves nothing of the owner's; another owner neither
 * sees nor removes it; a removed one receives nothing more.
 */
import { assert, layer } from "@effect/vitest"
import { Duration, Effect } from "effect"
import type { Hex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { Webhook } from "standardwebhooks"
import { failure, newSession } from "../delegations/helpers.ts"
import { startReceiver } from "../notifications/webhooks/Receiver.ts"
import { mint } from "../support/TestChain.ts"
import { TestServerLive } from "../support/TestServer.ts"
import { approvalGrant, randomAddress, signApproval } from "./support.ts"

process.env.DO_NOT_TRACK = "1"

const webhookTestConfig = {
  WEBHOOKS_ALLOW_LOOPBACK: "true",
  WEBHOOKS_POLL_INTERVAL: "50 millis",
  WEBHOOKS_BACKOFF_BASE: "50 millis",
  WEBHOOKS_BACKOFF_MAX: "200 millis",
  WEBHOOKS_MAX_ATTEMPTS: "4"
}

layer(TestServerLive({ config: webhookTestConfig }), { timeout: Duration.seconds(180), excludeTestServices: true })("approvers who do not sign in here", (it) => {
  it.effect("the owner's webhook for an approver receives the request at once, signed, with its deep link", () =>
    Effect.gen(function*() {
      const [owner, delegate, otherOwner] = yield* Effect.all([newSession(), newSession(), newSession()])
      const approverKey = generatePrivateKey()
      const approver = privateKeyToAccount(approverKey).address.toLowerCase()
      const receiver = yield* Effect.acquireRelease(Effect.promise(startReceiver), (r) => Effect.promise(() => r.close()))
      yield* mint("usd", owner.account.address as Hex, 50)
      const g = yield* approvalGrant(owner, delegate, 20, { required: 1, approvers: [approver], thresholds: [{ token: { symbol: "USDC" }, amount: 1 }] })

      // Only for an approver of the owner's grants; another owner neither sees nor removes it.
      const stranger = yield* failure(owner.api.approvals.addContact({ payload: { approver: randomAddress(), url: receiver.url } }))
      assert.strictEqual(stranger.details["field"], "approver")
      assert.strictEqual((yield* failure(otherOwner.api.approvals.addContact({ payload: { approver, url: receiver.url } }))).tag, "BadRequest")
      const contact = yield* owner.api.approvals.addContact({ payload: { approver, url: receiver.url } })
      assert.strictEqual(contact.approver, approver)
      assert.deepStrictEqual((yield* owner.api.approvals.listContacts()).map((c) => [c.id, c.approver]), [[contact.id, approver]])
      assert.deepStrictEqual(yield* otherOwner.api.approvals.listContacts(), [])
      assert.strictEqual((yield* failure(otherOwner.api.approvals.removeContact({ params: { contactId: contact.id } }))).tag, "NotFound")

      // The agent's request: the approver's webhook hears it, signed with the contact's secret.
      const held = yield* failure(delegate.api.delegations.act({ params: { delegationId: g.id }, payload: { recipient: randomAddress(), amount: 5 } }))
      const id = held.details["approvalId"] as string
      yield* Effect.promise(() => receiver.waitFor(() => receiver.received.some((r) => r.body.includes(id)), 15_000))
      const delivery = receiver.received.find((r) => r.body.includes(id))!
      const verified = new Webhook(contact.secret).verify(delivery.body, delivery.headers as Record<string, string>) as {
        data: { title: string; relatedId: string; action: { target: string } }
      }
      assert.strictEqual(verified.data.relatedId, id)
      assert.strictEqual(verified.data.title, "Approval needed")
      assert.strictEqual(verified.data.action.target, `approvals/${id}`)

      // The approver (still no session here) signs what the owner reads; the owner submits it; the webhook hears the approval.
      const request = yield* owner.api.approvals.get({ params: { approvalId: id } })
      const approved = yield* owner.api.approvals.approve({ params: { approvalId: id }, payload: { signature: yield* signApproval(approverKey, request), approver } })
      assert.strictEqual(approved.status, "approved")
      yield* Effect.promise(() => receiver.waitFor(() => receiver.received.some((r) => r.body.includes("Request approved") && r.body.includes(id)), 15_000))

      // Removed: nothing more reaches it.
      yield* owner.api.approvals.removeContact({ params: { contactId: contact.id } })
      assert.deepStrictEqual(yield* owner.api.approvals.listContacts(), [])
      const before = receiver.received.length
      const next = yield* failure(delegate.api.delegations.act({ params: { delegationId: g.id }, payload: { recipient: randomAddress(), amount: 3 } }))
      assert.strictEqual(next.reason, "approval_required")
      yield* Effect.sleep(Duration.seconds(1))
      assert.strictEqual(receiver.received.length, before)
    }))
})
