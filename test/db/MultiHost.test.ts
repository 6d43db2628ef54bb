/**
 * Several hosts in `DATABASE_URL` (src/db/MultiHost.ts), at the size the suite can afford,
 * without Patroni (the real failover, with replication, is `bench/ha-failover.ts`): two
 * PostgreSQL servers stand in for a primary and a standby (the standby's database is read-only,
 * as a hot standby's sessions are), and the service as its own process, under a stream of
 * writes, is left to find the primary, then to follow the "failover": the primary is killed
 * (SIGKILL), the standby becomes writable. Every answer meanwhile is 200 or 503, never a 500,
 * and the service comes back by itself on the new primary.
 */
import { PgClient } from "@effect/sql-pg"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Option, Redacted, Scope } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { runMigrations } from "../../src/db/Database.ts"
import { startEmbeddedPostgres } from "../../src/db/EmbeddedPostgres.ts"
import { parseMultiHostUrl } from "../../src/db/MultiHost.ts"
import { killGroup, replicaEnv, startService, stopService } from "../support/ServiceProcess.ts"
import { createDatabase, databaseUrl, testDatabaseName } from "../support/TestDatabase.ts"

describe("several hosts in DATABASE_URL", () => {
  it("parses libpq's multi-host form; a one-host URL is left to sql-pg", () => {
    const url = "postgres://u:p%40ss@10.0.0.1:5433,[::1]:5434,db3/app?target_session_attrs=read-write&sslmode=disable"
    assert.deepStrictEqual(parseMultiHostUrl(url), Option.some({
      hosts: [{ host: "10.0.0.1", port: 5433 }, { host: "::1", port: 5434 }, { host: "db3", port: 5432 }],
      targetSessionAttrs: "read-write" as const,
      firstHostUrl: "postgres://u:p%40ss@10.0.0.1:5433/app?target_session_attrs=read-write&sslmode=disable"
    }))
    assert.isTrue(Option.isNone(parseMultiHostUrl("postgres://u:p@10.0.0.1:5432/app")))
    assert.strictEqual(Option.getOrThrow(parseMultiHostUrl("postgresql://h1,h2/app")).targetSessionAttrs, "any")
    assert.throws(() => parseMultiHostUrl("postgres://h1,h2/app?target_session_attrs=standby"), /standby/)
  })

  it.live("the service finds the writable host, follows a failover by itself, and answers 503 (never 500) meanwhile", () =>
    Effect.gen(function*() {
      const database = testDatabaseName()
      // "standby": the run's server, this database read-only; "primary": a server of this test's own.
      yield* createDatabase(database)
      const standbyUrl = databaseUrl(database)
      const standbyPort = Number(new URL(standbyUrl).port)
      const dir = `/tmp/das-multihost-${process.pid}-${Date.now()}`
      // Its own scope: once SIGKILLed it has nothing left to stop.
      const primaryScope = yield* Scope.make()
      const primary = yield* startEmbeddedPostgres({ databaseDir: dir }).pipe(Scope.provide(primaryScope))
      const admin = (url: string, statement: string) =>
        Effect.gen(function*() {
          const sql = yield* PgClient.PgClient
          yield* sql.unsafe(statement)
        }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 })), Effect.scoped)
      const primaryAdmin = `postgres://postgres:postgres@127.0.0.1:${primary.port}/postgres`
      yield* admin(primaryAdmin, `CREATE DATABASE ${database}`)
      // Both hold the schema (a real standby has it by replication).
      for (const url of [standbyUrl, `postgres://postgres:postgres@127.0.0.1:${primary.port}/${database}`]) {
        yield* runMigrations.pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 })), Effect.scoped)
      }
      yield* admin(standbyUrl, `ALTER DATABASE ${database} SET default_transaction_read_only = on`)

      const hosts = `127.0.0.1:${standbyPort},127.0.0.1:${primary.port}`
      const service = yield* startService(replicaEnv(database, {
        DATABASE_URL: `postgres://postgres:postgres@${hosts}/${database}?target_session_attrs=read-write`,
        RATE_LIMIT_NONCE_PER_MINUTE: "0",
        DATABASE_RETRY_AFTER: "1 second"
      }))
      try {
        assert.include(service.output(), `database: using 127.0.0.1:${primary.port} (read-write)`)

        // A stream of writes (each nonce is an INSERT) and readiness checks, through the switch.
        const statuses: Array<{ status: number; at: number }> = []
        let running = true
        const writer = (async () => {
          while (running) {
            const status = await fetch(`${service.baseUrl}/auth/nonce`, { method: "POST" }).then((r) => r.status, () => 0)
            statuses.push({ status, at: Date.now() })
            await new Promise((r) => setTimeout(r, 20))
          }
        })()
        yield* Effect.sleep("1 second")
        assert.isTrue(statuses.length > 0 && statuses.every((s) => s.status === 200), JSON.stringify(statuses.slice(-5)))

        // The primary dies: its postmaster and every backend, SIGKILL.
        const postmaster = Number(fs.readFileSync(path.join(primary.databaseDir, "postmaster.pid"), "utf8").split("\n")[0])
        const killedAt = Date.now()
        for (const pid of [postmaster, ...childrenOf(postmaster)]) process.kill(pid, "SIGKILL")
        // The standby is promoted a moment later.
        yield* Effect.sleep("1500 millis")
        yield* admin(standbyUrl.replace(`/${database}`, "/postgres"), `ALTER DATABASE ${database} SET default_transaction_read_only = off`)
        const promotedAt = Date.now()

        for (let i = 0; i < 150; i++) {
          const last = statuses[statuses.length - 1]
          if (last !== undefined && last.at > promotedAt && last.status === 200) break
          yield* Effect.sleep("100 millis")
        }
        yield* Effect.sleep("500 millis")
        running = false
        yield* Effect.promise(() => writer)

        const during = statuses.filter((s) => s.at >= killedAt)
        const firstBack = during.find((s) => s.at > promotedAt && s.status === 200)
        assert.isDefined(firstBack, `no 200 after the promotion: ${JSON.stringify(during.slice(-10))}`)
        assert.deepStrictEqual([...new Set(during.map((s) => s.status))].sort(), [200, 503], "only 200 and 503 through the switch")
        assert.isTrue(statuses.filter((s) => s.at > firstBack!.at).every((s) => s.status === 200), "back for good")
        assert.include(service.output(), `database: using 127.0.0.1:${standbyPort} (read-write)`)
        assert.notInclude(service.output(), "unhandled failure")
        const ready = yield* Effect.promise(() => fetch(`${service.baseUrl}/health/ready`))
        assert.strictEqual(ready.status, 200)
        console.log(
          `multi-host: ${during.filter((s) => s.status === 503).length} answers 503 between the kill and ${
            firstBack!.at - promotedAt
          } ms after the promotion; none 500`
        )
        assert.strictEqual(yield* stopService(service.child), 0, service.output().slice(-3000))
      } finally {
        if (service.child.exitCode === null) killGroup(service.child)
        // (Stopping a killed server waits forever for it: left to run detached.)
        yield* Effect.forkDetach(Scope.close(primaryScope, Exit.void))
        fs.rmSync(dir, { recursive: true, force: true })
      }
    }), 180_000)
})

/** The processes whose parent is `pid` (a postmaster's backends). */
const childrenOf = (pid: number): Array<number> => {
  try {
    return fs.readdirSync(`/proc/${pid}/task`).flatMap((task) =>
      fs.readFileSync(`/proc/${pid}/task/${task}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number)
    )
  } catch {
    return []
  }
}
