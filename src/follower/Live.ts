/**
 * The chain follower over the shared relay (src/userops/Live.ts): the source of truth for what
 * executed. It needs the `FollowerLog` port (the entries it writes), which the delegations feature
 * provides at the top (src/Server.ts).
 */
import { Layer } from "effect"
import { RelayLive } from "../userops/Live.ts"
import { ChainFollowerLive, ChainFollowerScheduleLive } from "./Follower.ts"
import { FollowerMetricsLive } from "./FollowerMetrics.ts"

export const FollowerLive = Layer.merge(ChainFollowerScheduleLive, FollowerMetricsLive).pipe(
  Layer.provideMerge(ChainFollowerLive),
  Layer.provide(RelayLive)
)
