/**
 * The audit entries the chain follower writes itself (the relay writes those of its own
 * operations): an operation of a managed account that nobody built here, the owner's entry
 * of a redemption made around the relay, and the `reorged` entry that compensates an entry
 * whose block left the chain. Each under a unique key, so a block read twice writes nothing
 * twice; each raises its notification (AuditRecorder).
 *
 * The entries are the delegations feature's (they read and move delegation rows): it implements
 * this port (src/delegations/FollowerEntries.ts), wired at the top (src/Server.ts).
 */
import { Context, type Effect } from "effect"
import type { Inclusion } from "../chain/Inclusions.ts"
import type { ObservedDisable, ObservedRedemption } from "./Redeemed.ts"

export interface Compensation {
  readonly key: string
  readonly accountId: string
  /** The entry that recorded what left the chain (its facts are repeated). */
  readonly entryId: string | null
  readonly txHash: string
}

export class FollowerLog extends Context.Service<FollowerLog, {
  /** The entry id the relay wrote for this inclusion's operation. */
  entryOfOperation(chainId: number, inclusion: Inclusion): Effect.Effect<string | undefined>
  /** An operation of a managed account unknown to the relay: its own entry. */
  foreignOperation(chainId: number, accountId: string, inclusion: Inclusion): Effect.Effect<string | undefined>
  /**
   * A redemption of a known delegation (or a root delegation of the account this service did not
   * build): the owner's entry (written here when the relay did not carry it), the delegate's when
   * someone it passed the grant to redeemed it, and the record of the chain. Answers the owner's entry id.
   */
  redemption(chainId: number, r: ObservedRedemption): Effect.Effect<string | undefined>
  /**
   * A known delegation disabled around the relay (the owner's other wallet): while the
   * account is not frozen that is a revoke; the record follows the chain, and the owner's
   * log says so. Answers the entry id.
   */
  disabled(chainId: number, d: ObservedDisable): Effect.Effect<string | undefined>
  /** A `reorged` entry after the one whose block left the chain. */
  compensate(chainId: number, c: Compensation): Effect.Effect<void>
}>()("das/follower/FollowerLog") {}
