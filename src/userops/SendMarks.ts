/**
 * The relay's send bookkeeping on an operation's row: the lease that gives one process the
 * right to (re-)send, and what the send came to (sent, refused but possibly pending, or
 * unsent for the next pass). Every update is conditional on the row still being
 * `submitted`: a slow forward never touches an operation settled meanwhile.
 */
import { Effect } from "effect"
import type { SqlClient } from "effect/sql"

export const makeSendMarks = (sql: SqlClient.SqlClient, leaseMs: number, resendAfterMs: number) => {
  /** Takes the right to forward an unsettled operation (first send, or a re-send), or answers false. */
  const claimSend = (id: string, resend: boolean) =>
    sql`
      UPDATE user_operations
      SET send_lease_until = now() + ${`${leaseMs} milliseconds`}::interval, send_attempts = send_attempts + 1
      WHERE id = ${id} AND status = 'submitted'
        AND (send_lease_until IS NULL OR send_lease_until < now())
        AND ${resend
      ? sql`sent_at IS NOT NULL AND sent_at < now() - ${`${resendAfterMs} milliseconds`}::interval`
      : sql`sent_at IS NULL`}
      RETURNING id`.pipe(Effect.orDie, Effect.map((rows) => rows.length > 0))

  const markSent = (id: string) =>
    sql`UPDATE user_operations SET sent_at = now(), last_error = NULL, send_lease_until = NULL
        WHERE id = ${id} AND status = 'submitted'`.pipe(Effect.orDie)
  const markRefusedPending = (id: string, error: string) =>
    sql`UPDATE user_operations SET sent_at = now(), last_error = ${error}, send_lease_until = NULL
        WHERE id = ${id} AND status = 'submitted'`.pipe(Effect.orDie)
  const markUnsent = (id: string, error: string) =>
    sql`UPDATE user_operations SET last_error = ${error}, send_lease_until = NULL
        WHERE id = ${id} AND status = 'submitted'`.pipe(Effect.orDie)

  return { claimSend, markSent, markRefusedPending, markUnsent }
}
