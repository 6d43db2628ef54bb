/**
 * The relay's services as layers, each one constant so that every feature providing
 * them shares one instance (layers are memoized by reference): one builder, one hook
 * registry, one relay. They need only infrastructure: SqlClient and the chains.
 */
import { Layer } from "effect"
import { OperationBuilder } from "../builds/OperationBuilder.ts"
import { ReconcilerLive, Relay } from "./Relay.ts"
import { RelayAuditLive } from "./RelayAudit.ts"
import { RelayHooks } from "./RelayHooks.ts"
import { withRelayMetrics } from "./RelayMetrics.ts"

export const OperationBuilderLive = OperationBuilder.layer
export const RelayHooksLive = RelayHooks.layer

export const RelayLive = withRelayMetrics(
  Relay.layer.pipe(Layer.provide([OperationBuilderLive, RelayHooksLive, RelayAuditLive]))
)

/** The relay and its reconciler fiber. */
export const RelayWithReconcilerLive = Layer.mergeAll(RelayLive, ReconcilerLive.pipe(Layer.provide(RelayLive)))
