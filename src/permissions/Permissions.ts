/**
 * ERC-7715 end to end, composed from its parts:
 * - Granted.ts: what this deployment supports per served chain, the signer's grants in the
 *   standard's shape, the standard response of an enabled grant;
 * - Approvals.ts: requests and revokes built and offered to the owner, approved with the owner's
 *   signatures (or rejected), and waited for;
 * - Rpc.ts: the four methods over JSON-RPC 2.0;
 * - PermissionRepo.ts: every SQL statement of the feature.
 * The pure mapping lives in Wire.ts, Erc7715.ts, Supported.ts and Response.ts. docs/permissions.md.
 */
import { Config, Context, Duration, Effect, Layer } from "effect"
import { DelegationRepo } from "../delegations/DelegationRepo.ts"
import { makeApprovals } from "./Approvals.ts"
import { makeGranted } from "./Granted.ts"
import { PermissionRepo } from "./PermissionRepo.ts"
import { makeRpc } from "./Rpc.ts"

export { PermissionRefused } from "./Approvals.ts"

/** How long a JSON-RPC request or revoke waits for the owner's wallet before answering "not yet" (-32002). */
export const ApprovalWait = Config.Duration("PERMISSIONS_APPROVAL_WAIT").pipe(Config.withDefault(Duration.minutes(5)))

const make = Effect.gen(function*() {
  const granted = yield* makeGranted
  const approvals = yield* makeApprovals(granted)
  const rpc = makeRpc(approvals, granted, yield* ApprovalWait)
  return {
    supported: granted.supported,
    granted: granted.granted,
    request: approvals.request,
    ask: approvals.ask,
    asked: approvals.asked,
    revoke: approvals.revoke,
    approvals: approvals.list,
    approval: approvals.get,
    approve: approvals.approve,
    reject: approvals.reject,
    rpc
  }
})

export class Permissions extends Context.Service<Permissions, Effect.Success<typeof make>>()("das/permissions/Permissions") {
  static readonly layer = Layer.effect(Permissions, make).pipe(
    Layer.provide(Layer.mergeAll(PermissionRepo.layer, DelegationRepo.layer))
  )
}
