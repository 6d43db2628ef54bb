/**
 * Retention against the real database: expired builds nobody refers to, dead
 * reservations, used or expired nonces and old sessions go; everything still
 * referenced or still live stays.
 */
import { assert, layer } from "@effect/vitest"
import { ConfigProvider, Duration, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { Retention, RetentionScheduleLive } from "../../src/retention/Retention.ts"
import { TestDatabaseLive } from "../support/TestDatabase.ts"

const HOUR = 3600_000
const ago = (ms: number) => new Date(Date.now() - ms)
const later = (ms: number) => new Date(Date.now() + ms)

const seed = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const signer = "0x" + "ab".repeat(20)
  yield* sql`INSERT INTO accounts (id, signer_address, idx, label, address, chain_id, type, purpose, deployment_status, created_at)
             VALUES ('acc', ${signer}, 0, 'Main', ${"0x" + "cd".repeat(20)}, 31337, 'Smart account', 'primary', 'counterfactual', now())`
  const opBuild = (id: string, expiresAt: Date) =>
    sql`INSERT INTO op_builds (id, account_id, signer_address, intent_type, chain_id, entry_point, sender, nonce, call_data,
                               user_op, user_op_hash, risk_reducing, sponsored, created_at, expires_at)
        VALUES (${id}, 'acc', ${signer}, 'send', 31337, '0x', '0x', '0', '0x', '{}'::jsonb, ${id}, false, true,
                ${ago(3 * 24 * HOUR)}, ${expiresAt})`
  // Expired 2 days ago: old enough. Expired 1 minute ago / still valid: too young.
  for (const id of ["ob-free", "ob-used-by-op", "ob-used-by-dbuild", "ob-used-by-reservation"]) {
    yield* opBuild(id, ago(2 * 24 * HOUR))
  }
  yield* opBuild("ob-recent", ago(60_000))
  yield* opBuild("ob-live", later(HOUR))
  yield* sql`INSERT INTO user_operations (id, build_id, account_id, signer_address, intent_type, chain_id, sender, nonce,
                                          user_op_hash, signature_digest, user_op, status, outcome, submitted_at)
             VALUES ('op1', 'ob-used-by-op', 'acc', ${signer}, 'send', 31337, '0x', '0', 'h1', 'sig1', '{}'::jsonb, 'included', 'mined', now())`
  const delegationBuild = (id: string, opBuildId: string, expiresAt: Date) =>
    sql`INSERT INTO delegation_builds (id, op_build_id, signer_address, account_id, name, kind, delegatee_address, chain_id,
                                       policy_set, human_summary, legs, user_op_hash, created_at, expires_at)
        VALUES (${id}, ${opBuildId}, ${signer}, 'acc', 'n', 'dApp', '0x', 31337, '{}'::jsonb, 's', '[]'::jsonb, ${id},
                ${ago(3 * 24 * HOUR)}, ${expiresAt})`
  yield* delegationBuild("db-free", "ob-used-by-dbuild", ago(2 * 24 * HOUR))
  yield* delegationBuild("db-enabled", "ob-x", ago(2 * 24 * HOUR))
  yield* sql`INSERT INTO delegations (id, build_id, signer_address, account_id, delegator_address, permission_id, name, kind, icon,
                                      delegatee_address, chain_id, policy_set, human_summary, legs, status, enable_user_op_hash, created_at)
             VALUES ('d1', 'db-enabled', ${signer}, 'acc', '0x', ${"0x" + "01".repeat(32)}, 'n', 'dApp', 'i', '0x', 31337,
                     '{}'::jsonb, 's', '[]'::jsonb, 'active', 'e1', now())`
  const reservation = (id: string, status: string, expiresAt: Date, settledAt: Date | null, opBuildId: string | null) =>
    sql`INSERT INTO delegation_reservations (id, delegation_id, token_address, units, recipient, status, expires_at, created_at,
                                             settled_at, op_build_id)
        VALUES (${id}, 'd1', '0x', 1, '0x', ${status}, ${expiresAt}, ${ago(3 * 24 * HOUR)}, ${settledAt}, ${opBuildId})`
  yield* reservation("r-released-old", "released", ago(3 * 24 * HOUR), ago(2 * 24 * HOUR), null)
  yield* reservation("r-reserved-expired", "reserved", ago(2 * 24 * HOUR), null, "ob-used-by-reservation")
  yield* reservation("r-released-recent", "released", ago(HOUR), ago(60_000), null)
  yield* reservation("r-final", "final", ago(3 * 24 * HOUR), ago(2 * 24 * HOUR), null)
  yield* reservation("r-submitted", "submitted", ago(3 * 24 * HOUR), null, null)
  yield* reservation("r-reserved-live", "reserved", later(HOUR), null, null)

  yield* sql`INSERT INTO signin_nonces (nonce, issued_at, expires_at, used_at) VALUES
             ('n-expired', ${ago(5 * HOUR)}, ${ago(3 * HOUR)}, NULL),
             ('n-used', ${ago(5 * HOUR)}, ${ago(3 * HOUR)}, ${ago(4 * HOUR)}),
             ('n-live', now(), ${later(HOUR)}, NULL)`
  const session = (id: string, expiresAt: Date, revokedAt: Date | null) =>
    sql`INSERT INTO sessions (id, token_hash, signer_address, created_at, expires_at, revoked_at)
        VALUES (${id}, ${Buffer.from(id)}, ${signer}, ${ago(30 * 24 * HOUR)}, ${expiresAt}, ${revokedAt})`
  yield* session("00000000-0000-4000-8000-000000000001", ago(8 * 24 * HOUR), null)
  yield* session("00000000-0000-4000-8000-000000000002", later(HOUR), ago(8 * 24 * HOUR))
  yield* session("00000000-0000-4000-8000-000000000003", later(HOUR), null)
  yield* session("00000000-0000-4000-8000-000000000004", ago(HOUR), null)
})

const ids = (table: string, column = "id") =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ id: string }>`SELECT ${sql(column)}::text AS id FROM ${sql(table)} ORDER BY 1`.pipe(
      Effect.map((rows) => rows.map((r) => r.id))
    ))

layer(TestDatabaseLive(), { excludeTestServices: true })("retention", (it) => {
  it.effect("prunes only what nobody can use any more, in small batches, and a second pass finds nothing", () =>
    Effect.gen(function*() {
      yield* seed
      const retention = yield* Retention.make({
        interval: Duration.hours(1),
        buildAge: Duration.days(1),
        nonceAge: Duration.hours(1),
        sessionAge: Duration.days(7),
        batch: 1
      })
      const pruned = yield* retention.prune
      assert.deepStrictEqual(pruned, { opBuilds: 3, delegationBuilds: 1, reservations: 2, nonces: 2, sessions: 2 })
      // ob-free had no reference; ob-used-by-dbuild and ob-used-by-reservation lost their last one
      // earlier in the same pass (reservations and delegation builds go first).
      assert.deepStrictEqual(yield* ids("op_builds"), ["ob-live", "ob-recent", "ob-used-by-op"])
      assert.deepStrictEqual(yield* ids("delegation_builds"), ["db-enabled"])
      assert.deepStrictEqual(
        yield* ids("delegation_reservations"),
        ["r-final", "r-released-recent", "r-reserved-live", "r-submitted"]
      )
      assert.deepStrictEqual(yield* ids("signin_nonces", "nonce"), ["n-live"])
      assert.deepStrictEqual(yield* ids("sessions"), [
        "00000000-0000-4000-8000-000000000003",
        "00000000-0000-4000-8000-000000000004"
      ])

      const again = yield* retention.prune
      assert.deepStrictEqual(again, { opBuilds: 0, delegationBuilds: 0, reservations: 0, nonces: 0, sessions: 0 })
    }))
})

const expiredNonce = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql`INSERT INTO signin_nonces (nonce, issued_at, expires_at) VALUES ('n-old', ${ago(5 * HOUR)}, ${ago(3 * HOUR)})`)

const scheduled = (interval: string) =>
  Effect.gen(function*() {
    yield* Layer.build(
      RetentionScheduleLive.pipe(
        Layer.provide(ConfigProvider.layer(ConfigProvider.fromUnknown({ RETENTION_INTERVAL: interval })))
      )
    )
    // After the first pass: only a later, periodic pass can take it.
    yield* Effect.sleep("100 millis")
    yield* expiredNonce
    yield* Effect.sleep("400 millis")
    return yield* ids("signin_nonces", "nonce")
  }).pipe(Effect.scoped)

layer(TestDatabaseLive(), { excludeTestServices: true })("retention schedule", (it) => {
  it.effect("the background job prunes on its interval", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* scheduled("100 millis"), [])
    }))
})

layer(TestDatabaseLive(), { excludeTestServices: true })("retention off", (it) => {
  it.effect("RETENTION_INTERVAL=0 turns it off", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* scheduled("0 seconds"), ["n-old"])
    }))
})
