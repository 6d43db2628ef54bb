/**
 * Fair sponsorship for agents over `/mcp` (issue 43, h43 item 3): the tools call the service's API
 * on loopback, so before this every `/mcp` agent shared the one per-address quota of 127.0.0.1
 * (`SPONSOR_ADDRESS_QUOTA_OPS`) with each other and with everyone else on that address. Those
 * calls now count the agent from where it called (src/platform/ClientAddress.ts, "on a caller's
 * behalf"): here, with 3 sponsored operations per address, agent A over `/mcp` uses its 3 and is
 * refused the 4th (`rate_limited`, scope `address`), and agent B over `/mcp` from the same peer
 * still builds; the owners' own builds from 127.0.0.1 took nothing of either. A direct call that
 * forges the header counts as its own peer.
 */
import { assert, layer } from "@effect/vitest"
import { Duration, Effect } from "effect"
import type { Hex } from "viem"
import { privateKeyToAccount } from "viem/accounts"
import { signIn } from "../../src/client/signIn.ts"
import { ON_BEHALF_HEADER } from "../../src/platform/ClientAddress.ts"
import { grant } from "../delegations/attacker.ts"
import { newSession } from "../delegations/helpers.ts"
import { randomAddress } from "../payments/x402/support.ts"
import { mint } from "../support/TestChain.ts"
import { TestServer, TestServerLive } from "../support/TestServer.ts"
import { call, httpClient, ok, refusedCall } from "./support.ts"

process.env.DO_NOT_TRACK = "1"

/** An owner with 20 USDC and its agent holding a grant (10 USDC, 4 an action, 10 actions). */
const grantedAgent = Effect.gen(function*() {
  const owner = yield* newSession()
  const agent = yield* newSession()
  yield* mint("usd", owner.account.address as Hex, 20)
  const g = yield* grant(owner, agent, {
    budgets: [{ token: { symbol: "USDC" }, amount: 10 }],
    perActionMax: { token: { symbol: "USDC" }, amount: 4 },
    maxActions: 10
  })
  return { owner, agent, g }
})

layer(
  TestServerLive({ config: { SPONSOR_ADDRESS_QUOTA_OPS: "3", SPONSOR_QUOTA_OPS: "100", SPONSOR_QUOTA_PERIOD: "1 hour" } }),
  { timeout: Duration.seconds(240), excludeTestServices: true }
)("fair sponsorship over /mcp", (it) => {
  it.effect("two agents over /mcp each get their own per-address quota: one taking every slot does not starve the other", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      // Two owners' grants: their two enables are builds from 127.0.0.1 (2 of that address's 3).
      const a = yield* grantedAgent
      const b = yield* grantedAgent
      const tokenA = (yield* signIn(baseUrl, privateKeyToAccount(a.agent.key))).token
      const mcpA = yield* httpClient(baseUrl, tokenA)
      const mcpB = yield* httpClient(baseUrl, (yield* signIn(baseUrl, privateKeyToAccount(b.agent.key))).token)
      const alice = randomAddress()

      // Agent A takes every slot of its quota: three sponsored builds (three different actions).
      for (const amount of [0.1, 0.2, 0.3]) {
        const built = (yield* ok(mcpA, "act", { grantId: a.g.id, recipient: alice, amount })) as { status: string }
        assert.strictEqual(built.status, "needs_signature")
      }
      const fourth = yield* refusedCall(mcpA, "act", { grantId: a.g.id, recipient: alice, amount: 0.4 })
      assert.strictEqual(fourth.code, "rate_limited")
      assert.strictEqual(fourth.details?.["scope"], "address")

      // Agent B, over the same /mcp from the same peer, still builds: its quota is its own.
      const forB = (yield* ok(mcpB, "act", { grantId: b.g.id, recipient: alice, amount: 0.1 })) as { status: string }
      assert.strictEqual(forB.status, "needs_signature")
      // And B's three are its own too: its fourth is refused like A's was.
      for (const amount of [0.2, 0.3]) yield* ok(mcpB, "act", { grantId: b.g.id, recipient: alice, amount })
      const bFourth = yield* call(mcpB, "act", { grantId: b.g.id, recipient: alice, amount: 0.4 })
      assert.isTrue(bFourth.isError)
      assert.strictEqual(bFourth.structured["error"]["details"]["scope"], "address")

      // The third slot of 127.0.0.1 is still there for a direct caller (the owners used two): A's
      // /mcp builds never counted against it; a forged on-behalf header counts as the peer itself.
      const forged = yield* Effect.promise(() =>
        fetch(`${baseUrl}/delegations/${a.g.id}/actions`, {
          method: "POST",
          headers: {
            authorization: `Bearer ${tokenA}`,
            "content-type": "application/json",
            [ON_BEHALF_HEADER]: `${"0".repeat(64)} 198.51.100.7 mcp:0x1`
          },
          body: JSON.stringify({ recipient: alice, amount: 0.5 })
        }))
      assert.strictEqual(forged.status, 200, yield* Effect.promise(() => forged.text()))
      const direct = yield* Effect.promise(() =>
        fetch(`${baseUrl}/delegations/${a.g.id}/actions`, {
          method: "POST",
          headers: { authorization: `Bearer ${tokenA}`, "content-type": "application/json" },
          body: JSON.stringify({ recipient: alice, amount: 0.6 })
        }))
      // 127.0.0.1's 3 are used now (two enables, the forged call): refused for the address.
      assert.strictEqual(direct.status, 429)
      const envelope = (yield* Effect.promise(() => direct.json())) as { error: { details?: Record<string, unknown> } }
      assert.strictEqual(envelope.error.details?.["scope"], "address")
    }).pipe(Effect.scoped), { timeout: 240_000 })
})
