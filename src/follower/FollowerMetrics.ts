/**
 * The follower's lag (docs/operations.md, "Metrics"), read at scrape time from its cursor (the
 * database: the same on every process, whichever holds the follower) and the chain: blocks
 * between the cursor and the chain's head, and the seconds between those blocks' timestamps
 * (0 when it has caught up). `FOLLOWER_CONFIRMATIONS` blocks behind the head are not lag.
 */
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { Chain } from "../chain/Chain.ts"
import { Network } from "../chain/Network.ts"
import { withMetrics } from "../platform/Metrics.ts"
import { FollowerConfig } from "./Follower.ts"

export const FollowerMetricsLive = Layer.effectDiscard(withMetrics((metrics) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const chain = yield* Chain
    const network = yield* Network
    const { confirmations } = yield* Effect.orDie(FollowerConfig)
    const lag = Effect.gen(function*() {
      const [cursor] = yield* sql<{ block_number: string }>`
        SELECT block_number::text FROM chain_cursor WHERE chain_id = ${network.chainId}`
      if (cursor === undefined) return undefined
      const at = BigInt(cursor.block_number)
      const head = yield* Effect.tryPromise(() => chain.client.getBlock({ blockTag: "latest" }))
      const target = head.number - BigInt(confirmations)
      if (target <= at) return { blocks: 0, seconds: 0 }
      const from = yield* Effect.tryPromise(() => chain.client.getBlock({ blockNumber: at }))
      return { blocks: Number(target - at), seconds: Math.max(0, Number(head.timestamp - from.timestamp)) }
    })
    yield* metrics.gaugeOf(
      { name: "das_follower_lag_blocks", help: "Blocks between the chain follower's cursor and the chain's head (less FOLLOWER_CONFIRMATIONS)" },
      Effect.map(lag, (l) => (l === undefined ? [] : l.blocks))
    )
    yield* metrics.gaugeOf(
      { name: "das_follower_lag_seconds", help: "Seconds between the follower's cursor block and the chain's head block (0: caught up)" },
      Effect.map(lag, (l) => (l === undefined ? [] : l.seconds))
    )
  })
))
