/**
 * Group commit of appends made outside a transaction (docs/audit-log.md, "Group commit"),
 * in two levels:
 *
 * 1. Per account (`AppendQueue`): an append on an idle account goes at once; appends
 *    arriving while one is in flight on the same account queue (FIFO) and go out together,
 *    up to `MAX_BATCH`, as one unit. So one account has at most one unit in flight.
 * 2. Across accounts (`Combiner`): units of different accounts waiting at the same time
 *    go out in ONE statement, `audit_append_accounts` (migration 0193), accounts in
 *    ascending order, so they share one commit. If that statement is refused as a whole
 *    (an entry PostgreSQL refuses, or a head held past `BATCH_LOCK_TIMEOUT` by a caller's
 *    transaction), each unit is written on its own (`audit_append_many`, or `audit_append`
 *    for one entry; if that is refused too, one statement per entry, so only the bad entry
 *    fails), and the other accounts' next appends do not wait for it.
 *
 * Either way each entry gets its own result, in its caller's order.
 */
import { Effect, type Exit, type Scope } from "effect"
import type { SqlClient, SqlError } from "effect/sql"
import { appendAccountsRows, appendManyRows, type BatchRow, type Prepared, rootMessage } from "./AppendMany.ts"
import * as AppendQueue from "./AppendQueue.ts"
import type { StoredEntry } from "./Chain.ts"
import * as Combiner from "./Combiner.ts"

/** Most entries one batched statement writes. */
export const MAX_BATCH = 64

/**
 * How long a statement writing entries of several accounts waits for any one head before it
 * gives up and the entries go per account: one account's head held by a long transaction
 * holds up the others only this long.
 */
export const BATCH_LOCK_TIMEOUT = "250ms"

type Result<E> = Exit.Exit<StoredEntry, E>

interface Unit {
  readonly accountId: string
  readonly entries: ReadonlyArray<Prepared>
}

export const make = <E>(options: {
  readonly sql: SqlClient.SqlClient
  /** One entry in one statement (`audit_append`). */
  readonly appendOne: (p: Prepared) => Effect.Effect<StoredEntry, E>
  /** The same, giving up (`SqlError`, nothing written) if the head is not granted within `lockTimeout`. */
  readonly appendOneWithin: (p: Prepared, lockTimeout: string) => Effect.Effect<Result<E>, SqlError.SqlError>
  /** The result of one entry from its batch row: stored, or a duplicate of `existing_id`. */
  readonly result: (p: Prepared, row: BatchRow) => Effect.Effect<StoredEntry, E>
}): Effect.Effect<(p: Prepared) => Effect.Effect<StoredEntry, E>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { appendOne, sql } = options
    const results = (entries: ReadonlyArray<Prepared>, rows: ReadonlyArray<BatchRow>) =>
      Effect.forEach(entries, (p, i) => Effect.exit(options.result(p, rows[i]!)))

    /** One account's unit on its own; refused as a whole, one statement per entry. */
    const alone = ({ accountId, entries }: Unit): Effect.Effect<Array<Result<E>>> =>
      entries.length === 1
        ? Effect.map(Effect.exit(appendOne(entries[0]!)), (exit) => [exit])
        : appendManyRows(sql, accountId, entries).pipe(
          Effect.flatMap((rows) => results(entries, rows)),
          Effect.withSpan("AuditChain.appendBatch", { attributes: { accountId, entries: entries.length } }),
          Effect.catchTag("SqlError", (error) =>
            Effect.logWarning(
              `AuditChain: a batch of ${entries.length} entries was refused (${rootMessage(error)}); writing them one by one`
            ).pipe(Effect.andThen(Effect.forEach(entries, (p) => Effect.exit(appendOne(p)))))),
          Effect.catchTag("SchemaError", Effect.die)
        )

    /**
     * Units of different accounts in one statement, accounts in ascending order (one unit
     * too: its head lock waits at most `BATCH_LOCK_TIMEOUT` here, as the others' would).
     */
    const together = (units: ReadonlyArray<Unit>): Effect.Effect<Array<Array<Result<E>>>, SqlError.SqlError> => {
      if (units.length === 1 && units[0]!.entries.length === 1) {
        return Effect.map(options.appendOneWithin(units[0]!.entries[0]!, BATCH_LOCK_TIMEOUT), (r) => [[r]])
      }
      const sorted = [...units].sort((a, b) => a.accountId < b.accountId ? -1 : a.accountId > b.accountId ? 1 : 0)
      const entries = sorted.flatMap((u) => u.entries)
      return appendAccountsRows(sql, entries, BATCH_LOCK_TIMEOUT).pipe(
        Effect.flatMap((rows) => results(entries, rows)),
        Effect.map((all) => {
          const byAccount = new Map<string, Array<Result<E>>>()
          let at = 0
          for (const u of sorted) {
            byAccount.set(u.accountId, all.slice(at, at + u.entries.length))
            at += u.entries.length
          }
          return units.map((u) => byAccount.get(u.accountId)!)
        }),
        Effect.withSpan("AuditChain.appendAccounts", { attributes: { accounts: units.length, entries: entries.length } }),
        Effect.catchTag("SchemaError", Effect.die)
      )
    }

    const combiner = yield* Combiner.make({
      size: (u: Unit) => u.entries.length,
      maxSize: MAX_BATCH,
      together,
      alone,
      refused: (error, units) =>
        Effect.logDebug(`AuditChain: a write over ${units} accounts was refused (${rootMessage(error)}); writing it per account`)
    })

    const queue = yield* AppendQueue.make<string, Prepared, StoredEntry, E>({
      maxBatch: MAX_BATCH,
      write: (accountId, entries) => combiner.write({ accountId, entries }),
      writeOne: (accountId, p) => Effect.flatMap(combiner.write({ accountId, entries: [p] }), ([exit]) => exit!)
    })

    return (p: Prepared) => queue.submit(p.record.accountId, p)
  })
