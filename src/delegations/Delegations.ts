/**
 * Delegations end to end, composed from its parts:
 * - Enable.ts: build (policy + legs + enable operation), create (relay the signed enable,
 *   activate only when it executed);
 * - Reads.ts: list, detail and policy snapshots (and how a signer finds a delegation);
 * - Actions.ts: actions (evaluate under a row lock, reserve, build the delegate's redeem
 *   operation) and the relay hooks (re-check at submit; settle at a terminal status);
 * - RevokeFreeze.ts: revoke builds, an executed revoke, the account freeze plan;
 * - DelegationRepo.ts: every SQL statement of the feature (RedemptionRepo.ts: the follower's record of redemptions).
 * Rules: docs/delegations.md.
 */
import { Context, Effect, Layer } from "effect"
import type { BadRequest, Conflict, NotFound, OutOfScope } from "../api/Errors.ts"
import type { BuildError, StoredBuild } from "../builds/OperationBuilder.ts"
import type { ApprovalRequest } from "../domain/Approvals.ts"
import type { UserOpBuild } from "../domain/Operations.ts"
import { type ApprovedAction, makeActions, registerSettlement, type Reservation } from "./Actions.ts"
import { DelegationRepo } from "./DelegationRepo.ts"
import type { Delegation, DelegationBuild, DelegationStatus, PolicySnapshotType, RedemptionRecord } from "./Domain.ts"
import { type BuildInput, type CreateInput, makeEnable } from "./Enable.ts"
import type { ActionInput } from "./Policy.ts"
import { makeReads, type Signer } from "./Reads.ts"
import { RedemptionRepo } from "../follower/RedemptionRepo.ts"
import { makeRevokeFreeze } from "./RevokeFreeze.ts"
import { type ChangeLine, type ChangePreview, type GrantChanges, makeReplace } from "./Replace.ts"
import type { Carried } from "./DelegationRepo.ts"

export { type ApprovedAction, type Reservation, ReservationTtl } from "./Actions.ts"
export { type BuildInput, type CreateInput, EnableWait, MinLifetime } from "./Enable.ts"
export type { ChangeLine, GrantChanges } from "./Replace.ts"

export class Delegations extends Context.Service<Delegations, {
  /** `queuedBehind`: enabled after that many other grants of the same account built with it (see OperationBuilder). */
  build(signer: Signer, input: BuildInput, queuedBehind?: number): Effect.Effect<typeof DelegationBuild.Type, BadRequest | NotFound | BuildError>
  create(signer: Signer, input: CreateInput): Effect.Effect<Delegation, BadRequest | NotFound | Conflict | BuildError>
  list(
    signer: Signer,
    query: {
      readonly status?: DelegationStatus
      readonly accountId?: string
      readonly chainId?: number
      readonly role?: "owner" | "delegatee"
    }
  ): Effect.Effect<ReadonlyArray<Delegation>, NotFound | BadRequest>
  get(signer: Signer, id: string): Effect.Effect<Delegation, NotFound>
  snapshots(signer: Signer, id: string): Effect.Effect<ReadonlyArray<PolicySnapshotType>, NotFound>
  /** The grant's redemptions as the chain showed them: chain of delegations, redeemer, what moved (owner's or holder's lane). */
  redemptions(signer: Signer, id: string): Effect.Effect<ReadonlyArray<RedemptionRecord>, NotFound>
  /** Evaluates and reserves under the delegation's row lock; `OutOfScope` (recorded) on a decline. */
  reserve(signer: Signer, id: string, action: ActionInput): Effect.Effect<Reservation, BadRequest | NotFound | OutOfScope>
  /** The action's build (a 400 naming its approval request when the grant's approval rule holds it back). */
  act(signer: Signer, id: string, action: ActionInput): Effect.Effect<UserOpBuild, BadRequest | NotFound | BuildError>
  /** The action's build; or, when the grant's approval rule holds it back, its approval request (issue 25). */
  request(signer: Signer, id: string, action: ActionInput): Effect.Effect<UserOpBuild | ApprovalRequest, BadRequest | NotFound | BuildError>
  /** An approved action's build, its approvals attached, and the reservation it holds (src/approvals). */
  buildApproved(
    signer: Signer,
    id: string,
    approved: ApprovedAction
  ): Effect.Effect<{ readonly build: UserOpBuild; readonly reservationId: string }, BadRequest | NotFound | BuildError>
  /** Releases the reservation of an approval request that was denied or expired. */
  releaseHeld(reservationId: string): Effect.Effect<void>
  /** A reservation's status, and whether it still holds budget. */
  reservationState(reservationId: string): Effect.Effect<{ readonly status: string; readonly held: boolean } | undefined>
  revoke(signer: Signer, id: string): Effect.Effect<UserOpBuild, BadRequest | NotFound | BuildError>
  /** Changes to a grant checked against it (its owner's or its holder's lane): the new terms and the plain difference (asking for more). */
  previewChange(signer: Signer, id: string, changes: GrantChanges): Effect.Effect<ChangePreview, BadRequest | NotFound | Conflict>
  /** The owner's one operation that replaces the grant, its spend carried over (Replace.ts). */
  buildReplacement(
    signer: Signer,
    id: string,
    changes: GrantChanges
  ): Effect.Effect<
    { readonly build: typeof DelegationBuild.Type; readonly diff: ReadonlyArray<ChangeLine>; readonly carried: Carried },
    BadRequest | NotFound | Conflict | BuildError
  >
  /** The delegation a signer's enable operation created, if any (its id and stored status). */
  enableOutcome(signerAddress: string, userOpHash: string): Effect.Effect<{ readonly id: string; readonly status: string } | undefined>
  /**
   * Relay policy check (registered for `delegated_action`, staged): reads the grant and the chain
   * now, and answers the re-check of the action's reservation under the row lock, to run in the
   * relay's transaction.
   */
  beforeSubmit(build: StoredBuild, operation: { readonly id: string; readonly userOpHash: string }): Effect.Effect<Effect.Effect<void, OutOfScope>>
}>()("das/delegations/Delegations") {
  static readonly layer = Layer.effect(Delegations, Effect.suspend(() => make)).pipe(
    Layer.provide(Layer.mergeAll(DelegationRepo.layer, RedemptionRepo.layer))
  )
}

const make = Effect.gen(function*() {
  const reads = yield* makeReads
  const enable = yield* makeEnable(reads)
  const actions = yield* makeActions(reads)
  const revokeFreeze = yield* makeRevokeFreeze(reads)
  const replace = yield* makeReplace(reads, enable)
  const repo = yield* DelegationRepo

  // The relay hooks (Actions.ts), then the account freeze plan (RevokeFreeze.ts).
  yield* registerSettlement(actions, enable, revokeFreeze)
  yield* revokeFreeze.registerFreezePlan

  const { build, create } = enable
  const { list, get, snapshots, redemptions } = reads
  const { reserve, act, request, beforeSubmit, buildApproved, releaseHeld, reservationState } = actions
  const { revoke } = revokeFreeze
  const enableOutcome = (signerAddress: string, userOpHash: string) =>
    Effect.gen(function*() {
      const built = yield* repo.findBuildByHash(userOpHash.toLowerCase(), signerAddress.toLowerCase())
      return built === undefined ? undefined : yield* repo.findByBuild(built.id)
    })
  return Delegations.of({
    build: (signer, input, queuedBehind) => build(signer, input, undefined, queuedBehind),
    create,
    list,
    get,
    snapshots,
    redemptions,
    reserve,
    act,
    request,
    buildApproved,
    releaseHeld,
    reservationState,
    revoke,
    beforeSubmit,
    previewChange: replace.preview,
    buildReplacement: replace.buildReplacement,
    enableOutcome
  })
})
