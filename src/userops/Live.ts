/**
 * The relay's services as layers, each one constant so that every feature providing
 * them shares one instance (layers are memoized by reference): one builder, one hook
 * registry, one relay. They need only infrastructure: SqlClient, Network, Chain,
 * Bundler, AccountStack, Paymaster.
 */
import { Layer } from "effect"
import { AccountRules } from "../accounts/Rules.ts"
import { OperationBuilder } from "../builds/OperationBuilder.ts"
import { ChainFollowerLive, ChainFollowerScheduleLive } from "../follower/Follower.ts"
import { FollowerLog } from "../follower/FollowerLog.ts"
import { FollowerMetricsLive } from "../follower/FollowerMetrics.ts"
import { ReconcilerLive, Relay } from "./Relay.ts"
import { RelayAuditLive } from "./RelayAudit.ts"
import { RelayHooks } from "./RelayHooks.ts"
import { withRelayMetrics } from "./RelayMetrics.ts"

export const OperationBuilderLive = OperationBuilder.layer
export const RelayHooksLive = RelayHooks.layer

export const AccountRulesLive = AccountRules.layer.pipe(Layer.provide([OperationBuilderLive, RelayHooksLive]))

export const RelayLive = withRelayMetrics(
  Relay.layer.pipe(Layer.provide([OperationBuilderLive, RelayHooksLive, RelayAuditLive]))
)

/** The chain follower (src/follower) over the shared relay: the source of truth for what executed. */
export const FollowerLive = Layer.merge(ChainFollowerScheduleLive, FollowerMetricsLive).pipe(
  Layer.provideMerge(ChainFollowerLive),
  Layer.provide(Layer.mergeAll(RelayLive, FollowerLog.layer))
)

/** The relay, its reconciler fiber, the chain follower, and the account-rules hooks they must see executed. */
export const RelayWithReconcilerLive = Layer.mergeAll(
  RelayLive,
  ReconcilerLive.pipe(Layer.provide(RelayLive)),
  FollowerLive,
  AccountRulesLive
)
