/**
 * The example agent of `@das/agent-client` (packages/agent-client/examples/agent.ts, `npm run
 * example:agent`) against a real service on the run's local chain, its facilitator on: it
 * discovers its limits, pays three 402s, acts once, is declined at its limit, asks for more, the
 * owner accepts, it acts again. Then what it did is read back from the service and the chain.
 */
import { assert, layer } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { AgentClient, ApiError } from "@das/agent-client"
import { runExampleAgent } from "../../packages/agent-client/examples/agent.ts"
import { Anchor } from "../../src/anchor/Anchor.ts"
import { session } from "../delegations/helpers.ts"
import { TestServer, TestServerLive } from "../support/TestServer.ts"
import { waitFor } from "../support/waitFor.ts"

process.env.DO_NOT_TRACK = "1"

layer(TestServerLive({ config: { X402_FACILITATOR_PORT: "0" } }), { timeout: Duration.seconds(300), excludeTestServices: true })(
  "the example agent",
  (it) => {
    it.effect("pays three 402s, acts, hits its limit, asks for more, is given it, acts again", () =>
      Effect.gen(function*() {
        const { baseUrl, facilitatorUrl } = yield* TestServer
        const ownerKey = generatePrivateKey()
        const agentKey = generatePrivateKey()
        const lines: Array<string> = []
        const result = yield* Effect.promise(() =>
          runExampleAgent({
            baseUrl,
            facilitatorUrl: facilitatorUrl!,
            owner: privateKeyToAccount(ownerKey),
            agent: privateKeyToAccount(agentKey),
            // The transcript in the test's output too: what the agent saw, step by step.
            log: (line) => {
              lines.push(line)
              console.log(line)
            }
          })
        )
        const text = lines.join("\n")
        assert.include(text, "declined: cap_exceeded")
        assert.match(text, /a payment too: .*cap_exceeded/)

        // What the service holds: the old grant replaced (revoked) with 0.05 spent; three payments
        // settled on chain under it; the new grant with 0.06 of 0.10 spent (0.05 carried, 0.01 now).
        const owner = yield* session(ownerKey)
        const old = yield* owner.api.delegations.get({ params: { delegationId: result.delegationId } })
        assert.strictEqual(old.status, "revoked")
        const payments = yield* waitFor("three payments settled", owner.api.payments.list({ query: { delegationId: result.delegationId } }).pipe(
          Effect.orDie,
          Effect.map((list) => (list.length === 3 && list.every((p) => p.status === "settled") ? list : undefined))
        ))
        assert.deepStrictEqual(payments.map((p) => p.settledUnits), ["10000", "10000", "10000"])
        const renewed = yield* owner.api.delegations.get({ params: { delegationId: result.newDelegationId } })
        assert.strictEqual(renewed.status, "active")
        assert.deepStrictEqual(renewed.spentToDate.map((s) => [s.limit, s.spent]), [[0.1, 0.06]])

        // The same client, again: above the per-action maximum is a typed decline; another agent
        // cannot read or act on this grant (404, as if it did not exist); the last action's entry
        // has an inclusion proof once anchored.
        const agent = yield* Effect.promise(() => AgentClient.signIn({ baseUrl, signer: privateKeyToAccount(agentKey) }))
        const over = yield* Effect.promise(() => agent.buildAction(result.newDelegationId, { recipient: privateKeyToAccount(generatePrivateKey()).address, amount: 0.03 }).then(() => undefined, (e: unknown) => e))
        assert.instanceOf(over, ApiError)
        assert.strictEqual((over as ApiError).declineReason, "per_action_exceeded")
        const stranger = yield* Effect.promise(() => AgentClient.signIn({ baseUrl, signer: privateKeyToAccount(generatePrivateKey()) }))
        for (const attempt of [
          () => stranger.grant(result.newDelegationId),
          () => stranger.buildAction(result.newDelegationId, { recipient: privateKeyToAccount(generatePrivateKey()).address, amount: 0.01 })
        ]) {
          const refused = yield* Effect.promise(() => attempt().then(() => undefined, (e: unknown) => e))
          assert.instanceOf(refused, ApiError)
          assert.strictEqual((refused as ApiError).status, 404)
        }
        assert.deepStrictEqual(yield* Effect.promise(() => stranger.grants()), [])
        const anchor = yield* Anchor
        yield* anchor.anchorNow
        const eventId = result.lastReceipt.auditEventId!
        const proof = yield* Effect.promise(() => agent.proof(eventId))
        assert.strictEqual(proof.event.id, eventId)
        assert.match(proof.anchor.txHash, /^0x[0-9a-f]{64}$/)
      }))
  }
)
