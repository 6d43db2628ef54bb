/**
 * The follower's lag per served chain (docs/operations.md, "Metrics"), read at scrape time from
 * each chain's cursor (the database: the same on every process, whichever holds the follower)
 * and that chain's head: blocks between the cursor and the head, and the seconds between those
 * blocks' timestamps (0 when it has caught up). `FOLLOWER_CONFIRMATIONS` blocks behind the
 * head are not lag. A chain whose RPC does not answer has no reading for that scrape.
 */
import { Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { type ChainNetwork, Chains } from "../chain/Chains.ts"
import { type Reading, withMetrics } from "../platform/Metrics.ts"
import { FollowerConfig } from "./Follower.ts"

export const FollowerMetricsLive = Layer.effectDiscard(withMetrics((metrics) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const chains = yield* Chains
    const { confirmations } = yield* Effect.orDie(FollowerConfig)
    const lagOf = (net: ChainNetwork, cursors: ReadonlyMap<number, bigint>) =>
      Effect.gen(function*() {
        const at = cursors.get(net.chainId)
        if (at === undefined) return undefined
        const client = net.chain.client
        const head = yield* Effect.tryPromise(() => client.getBlock({ blockTag: "latest" }))
        const target = head.number - BigInt(confirmations)
        if (target <= at) return { chainId: net.chainId, blocks: 0, seconds: 0 }
        const from = yield* Effect.tryPromise(() => client.getBlock({ blockNumber: at }))
        return { chainId: net.chainId, blocks: Number(target - at), seconds: Math.max(0, Number(head.timestamp - from.timestamp)) }
      }).pipe(
        // One chain out of reach leaves the others' readings alone.
        Effect.timeoutOption("1500 millis"),
        Effect.map(Option.getOrUndefined),
        Effect.orElseSucceed(() => undefined)
      )
    const lags = Effect.gen(function*() {
      const rows = yield* sql<{ chain_id: number; block_number: string }>`
        SELECT chain_id, block_number::text FROM chain_cursor`
      const cursors = new Map(rows.map((r) => [Number(r.chain_id), BigInt(r.block_number)]))
      const all = yield* Effect.forEach(chains.all, (net) => lagOf(net, cursors), { concurrency: "unbounded" })
      return all.flatMap((l) => (l === undefined ? [] : [l]))
    })
    const readings = (pick: (l: { blocks: number; seconds: number }) => number) =>
      Effect.map(lags, (all): ReadonlyArray<Reading<"chain_id">> =>
        all.map((l) => ({ labels: { chain_id: l.chainId }, value: pick(l) })))
    yield* metrics.gaugeOf(
      {
        name: "das_follower_lag_blocks",
        help: "Blocks between the chain follower's cursor and the chain's head (less FOLLOWER_CONFIRMATIONS), per chain",
        labelNames: ["chain_id"]
      },
      readings((l) => l.blocks)
    )
    yield* metrics.gaugeOf(
      {
        name: "das_follower_lag_seconds",
        help: "Seconds between the follower's cursor block and the chain's head block (0: caught up), per chain",
        labelNames: ["chain_id"]
      },
      readings((l) => l.seconds)
    )
  })
))
