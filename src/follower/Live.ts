/** The chain follower over the shared relay (src/userops/Live.ts): the source of truth for what executed. */
import { Layer } from "effect"
import { RelayLive } from "../userops/Live.ts"
import { ChainFollowerLive, ChainFollowerScheduleLive } from "./Follower.ts"
import { FollowerLog } from "./FollowerLog.ts"
import { FollowerMetricsLive } from "./FollowerMetrics.ts"

export const FollowerLive = Layer.merge(ChainFollowerScheduleLive, FollowerMetricsLive).pipe(
  Layer.provideMerge(ChainFollowerLive),
  Layer.provide(Layer.mergeAll(RelayLive, FollowerLog.layer))
)
