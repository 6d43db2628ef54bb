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
import { serviceWithFreeze } from "../userops/helpers.ts"
import { miniBundler } from "./miniBundler.ts"

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

  it.live("an operation the relay settled from a bundler's receipt, whose block then left the chain, is reopened, compensated and settled again", () =>
    Effect.gen(function*() {
      const shared = testNetwork()
      const fork = yield* startFork(shared.rpcUrl)
      const bundler = yield* miniBundler(fork.rpcUrl, shared.entryPoint, shared.chainId)
      const { sql, accountId, api, signed } = yield* serviceWithFreeze({
        chain: { rpcUrl: fork.rpcUrl, bundlerUrl: bundler.url },
        config: { FOLLOWER_INTERVAL: "4 seconds", RELAY_RECONCILE_INTERVAL: "1 hour", USEROPS_WATCH_INTERVAL: "0 seconds", RELAY_RESEND_AFTER: "1 second", RELAY_SEND_LEASE: "1 second" }
      })
      // Once the follower has caught up with the head: the relay then usually settles from the
      // receipt before the follower's next pass reads the block (the vanished-settlement path);
      // if the follower reads it first, the reorg path applies. Either way the record follows.
      const head = BigInt((yield* rpc(fork.rpcUrl, "eth_blockNumber")) as string)
      yield* sql<{ n: string }>`SELECT block_number::text AS n FROM chain_cursor WHERE chain_id = ${shared.chainId}`.pipe(
        Effect.orDie,
        Effect.flatMap((r) => r[0] !== undefined && BigInt(r[0].n) >= head ? Effect.void : Effect.fail("behind")),
        Effect.retry(Schedule.spaced(Duration.millis(50))),
        Effect.timeout(Duration.seconds(15)),
        Effect.orDie
      )
      const snapshot = yield* rpc(fork.rpcUrl, "evm_snapshot")
      const submitted = yield* api.userops.submit({ payload: signed })
      // Polled as a client does: settled from the bundler's receipt.
      const settled = yield* api.userops.get({ params: { userOpId: submitted.userOpId }, query: {} }).pipe(
        Effect.flatMap((r) => r.status === "submitted" ? Effect.fail("not yet") : Effect.succeed(r)),
        Effect.retry(Schedule.spaced(Duration.millis(100))),
        Effect.timeout(Duration.seconds(20)),
        Effect.orDie
      )
      assert.strictEqual(settled.status, "included")

      // The block leaves the chain before (or after) the follower reads it: either way the record follows.
      yield* rpc(fork.rpcUrl, "evm_revert", [snapshot])
      yield* rpc(fork.rpcUrl, "anvil_mine", ["0x3"])
      const statuses = () =>
        sql<{ status: string; provenance: string }>`SELECT status, provenance FROM audit_entries
          WHERE account_id = ${accountId} ORDER BY chain_index`.pipe(Effect.orDie)
      const afterReorg = yield* statuses().pipe(
        Effect.flatMap((rows) => rows.length >= 2 ? Effect.succeed(rows) : Effect.fail("no compensation yet")),
        Effect.retry(Schedule.spaced(Duration.millis(200))),
        Effect.timeout(Duration.seconds(30)),
        Effect.orDie
      )
      assert.deepStrictEqual(afterReorg.map((r) => [r.status, r.provenance]), [["executed", "onchain"], ["reorged", "onchain_reorg"]])

      // Reopened: the relay sends it again (its nonce is open again) and it settles anew.
      const again = yield* api.userops.get({ params: { userOpId: submitted.userOpId }, query: {} }).pipe(
        Effect.flatMap((r) => r.status === "included" ? Effect.succeed(r) : Effect.fail(`still ${r.status}`)),
        Effect.retry(Schedule.spaced(Duration.millis(300))),
        Effect.timeout(Duration.seconds(30)),
        Effect.orDie
      )
      assert.notStrictEqual(again.transactionHash, undefined)
      assert.deepStrictEqual((yield* statuses()).map((r) => r.status), ["executed", "reorged", "executed"])
      const verified = yield* Effect.flatMap(AuditChain, (c) => c.verify(accountId)).pipe(
        Effect.provide(AuditChain.layer),
        Effect.provideService(SqlClient.SqlClient, sql)
      )
      assert.isTrue(verified.ok)
    }).pipe(Effect.scoped), { timeout: 120_000 })
})
