/**
 * `npm run walkthrough:delegation` as a newcomer runs it, against a real service on the local chain:
 * it must reach the revoke, print each step and `spentToDate`, an action held for the owner's approval
 * must execute once approved, an x402 payment must settle and be recorded, and its proof must check out on chain.
 */
import { assert, layer } from "@effect/vitest"
import { Duration, Effect, Schedule } from "effect"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { runDelegationWalkthrough } from "../../scripts/walkthrough-delegation.ts"
import { Anchor } from "../../src/anchor/Anchor.ts"
import { Network } from "../../src/chain/Network.ts"
import { TestServer, TestServerLive } from "../support/TestServer.ts"

layer(TestServerLive(), { timeout: Duration.seconds(240), excludeTestServices: true })("the delegation walkthrough", (it) => {
  it.effect("runs from sign-in to the refused action after the revoke", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const net = yield* Network
      const anchor = yield* Anchor
      // The service anchors every ANCHOR_INTERVAL (60 s by default); here every second.
      yield* anchor.anchorNow.pipe(Effect.repeat(Schedule.spaced(Duration.seconds(1))), Effect.forkScoped)
      const lines: Array<string> = []
      const result = yield* Effect.promise(() =>
        runDelegationWalkthrough({
          baseUrl,
          owner: privateKeyToAccount(generatePrivateKey()),
          agent: privateKeyToAccount(generatePrivateKey()),
          rpcUrl: net.rpcUrl,
          anchorWaitMs: 60_000,
          log: (line) => lines.push(line)
        })
      )
      const out = lines.join("\n")
      assert.match(result.delegationId, /^dlg_/)
      assert.include(out, "spentToDate: 0 of 50 USDC spent, 50 remaining")
      assert.include(out, "spentToDate: 12.5 of 50 USDC spent, 37.5 remaining")
      assert.include(out, "declineReason approval_required")
      assert.include(out, "request approved: 1 of 1 approvals")
      assert.include(out, "spentToDate: 30.5 of 50 USDC spent, 19.5 remaining")
      assert.include(out, "declineReason per_action_exceeded")
      assert.match(out, /GET \/report: 200 .*; settled in 0x[0-9a-f]{64}/)
      assert.match(out, /payment pay_\S+: settled, 0\.01 USDC to 0x[0-9a-fA-F]{40} in 0x[0-9a-f]{64}, recorded from the chain/)
      assert.include(out, "spentToDate: 0.01 of 1 USDC spent, 0.99 remaining")
      assert.include(out, "proven on chain")
      assert.include(out, "(status revoked)")
      assert.match(out, /declineReason revoked/)
      assert.isAtLeast(lines.filter((l) => l.startsWith("\n== ")).length, 10, "each step is printed")
    }), { timeout: 300_000 })
})
