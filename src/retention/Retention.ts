/**
 * Retention: what nobody can use any more is deleted by a background job, so tables that
 * any client can grow (sign-in nonces, builds, reservations, sessions) stay bounded.
 *
 * - operation builds (`op_builds`) and delegation builds, expired for `RETENTION_BUILD_AGE`,
 *   and only those no operation, delegation, reservation or mandate refers to;
 * - spend reservations released (or left `reserved` past their expiry) for
 *   `RETENTION_BUILD_AGE`; `submitted` and `final` ones are the spend record and are kept;
 * - sign-in nonces used or expired for `RETENTION_NONCE_AGE`;
 * - sessions expired or revoked for `RETENTION_SESSION_AGE`.
 *
 * Every `RETENTION_INTERVAL` (`0 seconds`: off), in batches of `RETENTION_BATCH` rows so no
 * statement holds locks for long. Deletes are idempotent: replicas may all run it.
 */
import { Cause, Config, Context, Duration, Effect, Layer, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import { makeLoopHealth } from "../platform/LoopHealth.ts"

export interface RetentionConfigShape {
  readonly interval: Duration.Duration
  readonly buildAge: Duration.Duration
  readonly nonceAge: Duration.Duration
  readonly sessionAge: Duration.Duration
  readonly batch: number
}

export const RetentionConfig = Config.all({
  interval: Config.Duration("RETENTION_INTERVAL").pipe(Config.withDefault(Duration.hours(1))),
  buildAge: Config.Duration("RETENTION_BUILD_AGE").pipe(Config.withDefault(Duration.days(1))),
  nonceAge: Config.Duration("RETENTION_NONCE_AGE").pipe(Config.withDefault(Duration.hours(1))),
  sessionAge: Config.Duration("RETENTION_SESSION_AGE").pipe(Config.withDefault(Duration.days(7))),
  batch: Config.Int("RETENTION_BATCH").pipe(Config.withDefault(5000))
})

export interface Pruned {
  readonly opBuilds: number
  readonly delegationBuilds: number
  readonly reservations: number
  readonly nonces: number
  readonly sessions: number
}

export class Retention extends Context.Service<Retention, {
  /** One full pass (every table, every batch) with rows older than the configured ages. */
  readonly prune: Effect.Effect<Pruned>
}>()("das/retention/Retention") {
  static readonly make = (config: RetentionConfigShape) =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const age = (d: Duration.Duration) => `${Math.max(0, Math.floor(Duration.toMillis(d)))} milliseconds`

      /** Repeats one batched DELETE until a batch comes back short; returns the rows deleted. */
      const drain = (batch: () => Effect.Effect<ReadonlyArray<unknown>, unknown>) =>
        Effect.gen(function*() {
          let total = 0
          for (;;) {
            const rows = yield* batch()
            total += rows.length
            if (rows.length < config.batch) return total
          }
        })

      const buildAge = age(config.buildAge)

      const reservations = drain(() =>
        sql`DELETE FROM delegation_reservations WHERE id IN (
              SELECT id FROM delegation_reservations
              WHERE (status = 'released' AND coalesce(settled_at, expires_at) < now() - ${buildAge}::interval)
                 OR (status = 'reserved' AND expires_at < now() - ${buildAge}::interval)
              LIMIT ${config.batch})
            RETURNING id`
      )

      const delegationBuilds = drain(() =>
        sql`DELETE FROM delegation_builds b WHERE b.id IN (
              SELECT d.id FROM delegation_builds d
              WHERE d.expires_at < now() - ${buildAge}::interval
                AND NOT EXISTS (SELECT 1 FROM delegations x WHERE x.build_id = d.id)
                AND NOT EXISTS (SELECT 1 FROM marketplace_mandates m WHERE m.enable_build_id = d.id)
              LIMIT ${config.batch})
            RETURNING b.id`
      )

      const opBuilds = drain(() =>
        sql`DELETE FROM op_builds b WHERE b.id IN (
              SELECT o.id FROM op_builds o
              WHERE o.expires_at < now() - ${buildAge}::interval
                AND NOT EXISTS (SELECT 1 FROM user_operations u WHERE u.build_id = o.id)
                AND NOT EXISTS (SELECT 1 FROM delegation_builds d WHERE d.op_build_id = o.id)
                AND NOT EXISTS (SELECT 1 FROM delegation_reservations r WHERE r.op_build_id = o.id)
                AND NOT EXISTS (SELECT 1 FROM marketplace_mandates m WHERE m.enable_build_id = o.id)
              LIMIT ${config.batch})
            RETURNING b.id`
      )

      const nonces = drain(() =>
        sql`DELETE FROM signin_nonces WHERE nonce IN (
              SELECT nonce FROM signin_nonces
              WHERE coalesce(used_at, expires_at) < now() - ${age(config.nonceAge)}::interval
                 OR expires_at < now() - ${age(config.nonceAge)}::interval
              LIMIT ${config.batch})
            RETURNING nonce`
      )

      const sessions = drain(() =>
        sql`DELETE FROM sessions WHERE id IN (
              SELECT id FROM sessions
              WHERE expires_at < now() - ${age(config.sessionAge)}::interval
                 OR revoked_at < now() - ${age(config.sessionAge)}::interval
              LIMIT ${config.batch})
            RETURNING id`
      )

      // Sponsorship counts outlive any quota period worth having (a month).
      const sponsorTotals = drain(() =>
        sql`DELETE FROM sponsor_totals WHERE (scope, subject, period_start) IN (
              SELECT scope, subject, period_start FROM sponsor_totals
              WHERE period_start < now() - interval '31 days'
              LIMIT ${config.batch})
            RETURNING scope`
      )

      // A table a newer feature refers to without our knowing (a foreign key we did not
      // list) fails its DELETE: that table is skipped this round, logged, never a crash.
      // While the database is unreachable every step fails alike: logged once (LoopHealth).
      const health = makeLoopHealth("retention")
      const step = (name: string, effect: Effect.Effect<number, unknown>) =>
        effect.pipe(
          Effect.tap(() => health.succeeded),
          Effect.catch((e) => Effect.as(health.failed(Cause.fail(e), `retention: ${name} skipped this round`), 0))
        )

      // Reservations first: they hold the last references to their builds.
      const prune = Effect.gen(function*() {
        const r = yield* step("reservations", reservations)
        const d = yield* step("delegation builds", delegationBuilds)
        const o = yield* step("operation builds", opBuilds)
        const n = yield* step("sign-in nonces", nonces)
        const s = yield* step("sessions", sessions)
        yield* step("sponsor totals", sponsorTotals)
        return { opBuilds: o, delegationBuilds: d, reservations: r, nonces: n, sessions: s }
      }).pipe(Effect.withSpan("Retention.prune"))

      return Retention.of({ prune })
    })

  static readonly layer = Layer.effect(Retention, Effect.flatMap(RetentionConfig, Retention.make))
}

/** The background job: a pass every `RETENTION_INTERVAL` (off at `0 seconds`), logging what it deleted. */
export const RetentionScheduleLive = Layer.effectDiscard(
  Effect.gen(function*() {
    const config = yield* RetentionConfig
    if (Duration.toMillis(config.interval) <= 0) {
      yield* Effect.logInfo("retention: off (RETENTION_INTERVAL is 0)")
      return
    }
    const retention = yield* Retention
    const pass = retention.prune.pipe(
      Effect.tap((p) => {
        const total = p.opBuilds + p.delegationBuilds + p.reservations + p.nonces + p.sessions
        return total === 0 ? Effect.void : Effect.logInfo("retention: pruned", p)
      })
    )
    yield* Effect.forkScoped(Effect.repeat(pass, Schedule.spaced(config.interval)))
  })
).pipe(Layer.provideMerge(Retention.layer))
