/**
 * Reorgs (issue 12): on a fork of the run's chain (so rewinding it touches no other test),
 * an operation is included and recorded; the chain is rewound past its block and grows
 * again without it; the follower appends a compensating `reorged` entry (the first entry is
 * never rewritten, the chain still verifies), and a later inclusion is recorded anew. An
 * operation the relay settled from a bundler's receipt is reopened the same way.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Duration, Effect, Layer, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import type { Address } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { AuditChain } from "../../src/audit/AuditChain.ts"
import { startFork } from "../../src/chain/LocalNetwork.ts"
import { makeClient } from "../../src/client/Client.ts"
import { signIn } from "../../src/client/signIn.ts"
import { makeAttacker } from "../delegations/attacker.ts"
import { testNetwork } from "../support/TestChain.ts"
import { TestServer, TestServerLive } from "../support/TestServer.ts"

process.env.DO_NOT_TRACK = "1"

const rpc = (url: string, method: string, params: ReadonlyArray<unknown> = []) =>
  Effect.promise(async () => {
    const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }) })
    return ((await res.json()) as { result: unknown }).result
  })

describe("chain follower and reorgs", () => {
  it.live("an entry whose block left the chain is followed by a compensating entry; a new inclusion is recorded anew", () =>
    Effect.gen(function*() {
      const fork = yield* startFork(testNetwork().rpcUrl)
      const context = yield* Layer.build(TestServerLive({ chain: { rpcUrl: fork.rpcUrl }, config: { FOLLOWER_INTERVAL: "200 millis" } }))
      const baseUrl = Context.get(context, TestServer).baseUrl
      const key = generatePrivateKey()
      const session = yield* signIn(baseUrl, privateKeyToAccount(key))
      const api = yield* makeClient({ baseUrl, token: session.token })
      const account = session.accounts[0]!
      const attacker = yield* makeAttacker(key, account.address, fork.rpcUrl)
      const target = privateKeyToAccount(generatePrivateKey()).address as Address

      const entries = (minimum: number) =>
        api.activity.list({ query: { limit: 50 } }).pipe(
          Effect.orDie,
          Effect.flatMap((page) =>
            page.items.length >= minimum ? Effect.succeed([...page.items].reverse()) : Effect.fail(`${page.items.length} entries`)
          ),
          Effect.retry(Schedule.spaced(Duration.millis(200))),
          Effect.timeout(Duration.seconds(30)),
          Effect.orDie
        )

      const snapshot = yield* rpc(fork.rpcUrl, "evm_snapshot")
      assert.isTrue((yield* Effect.promise(() => attacker.viaHandleOps({ to: target, data: "0x" }))).ok)
      const [first] = yield* entries(1)
      assert.strictEqual(first!.status, "executed")

      // The block leaves the chain; the chain grows past where it was, without it.
      yield* rpc(fork.rpcUrl, "evm_revert", [snapshot])
      yield* rpc(fork.rpcUrl, "anvil_mine", ["0x3"])
      const [, compensation] = yield* entries(2)
      assert.strictEqual(compensation!.status, "reorged")
      assert.strictEqual(compensation!.provenance, "onchain_reorg")
      assert.strictEqual(compensation!.txHash, first!.txHash)
      assert.include(compensation!.declineReason ?? "", first!.id)

      // Included again (its nonce is free again): a new entry, the old ones untouched.
      assert.isTrue((yield* Effect.promise(() => attacker.viaHandleOps({ to: target, data: "0x" }))).ok)
      const all = yield* entries(3)
      assert.deepStrictEqual(all.map((e) => e.status), ["executed", "reorged", "executed"])
      assert.strictEqual(all[0]!.hash, first!.hash)
      const verified = yield* Effect.flatMap(AuditChain, (c) => c.verify(account.id)).pipe(
        Effect.provide(AuditChain.layer),
        Effect.provideService(SqlClient.SqlClient, Context.get(context, SqlClient.SqlClient))
      )
      assert.isTrue(verified.ok)
      assert.strictEqual(verified.length, 3)
    }).pipe(Effect.scoped), { timeout: 120_000 })
})
