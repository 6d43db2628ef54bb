/**
 * The service behind a real PgBouncer in transaction mode (docs/operations.md, "PgBouncer";
 * Debian's package, installed by test/support/PgBouncer.ts when missing and root). Server
 * connections are fewer than the service's, so its statements outside a transaction land on
 * whichever server connection is free.
 *
 * - With `DATABASE_POOLER=transaction` and `DATABASE_DIRECT_URL`: the schema migrates through
 *   the pooler, sign-in and concurrent reads and writes work, and a notification reaches an
 *   open stream (LISTEN held on the direct connection).
 * - Without them, through the same pooler: the start fails, saying why (the listener does not
 *   hear its own NOTIFY), instead of running with notification streams that never deliver.
 * - `DATABASE_POOLER=transaction` without `DATABASE_DIRECT_URL`: the start fails naming it.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { spawn } from "node:child_process"
import * as path from "node:path"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { signIn } from "../../src/client/signIn.ts"
import { freePort } from "../../src/platform/FreePort.ts"
import { findPgbouncer, type PgBouncer, startPgbouncer } from "../support/PgBouncer.ts"
import { killGroup, replicaEnv, startService } from "../support/ServiceProcess.ts"
import { createDatabase, databaseUrl, testDatabaseName } from "../support/TestDatabase.ts"

const root = path.resolve(import.meta.dirname, "../..")
const pgbouncer = findPgbouncer()
const missing = "missing" in pgbouncer ? pgbouncer.missing : undefined
if (missing !== undefined) console.warn(`test/db/PgBouncer.test.ts does not run: ${missing}`)

/** Runs `src/main.ts` with `env`, expecting it to stop by itself; its exit code and output. */
const startExpectingExit = (env: Record<string, string>) =>
  Effect.promise(async () => {
    const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
      cwd: root,
      env: { ...process.env, LOG_FORMAT: "json", METRICS_PORT: "off", X402_FACILITATOR_PORT: "off", ...env, PORT: String(await freePort()), HOST: "127.0.0.1" },
      stdio: ["ignore", "pipe", "pipe"],
      detached: true
    })
    let output = ""
    child.stdout!.on("data", (d) => (output += d))
    child.stderr!.on("data", (d) => (output += d))
    const timer = setTimeout(() => killGroup(child), 60_000)
    const code = await new Promise<number | null>((resolve) => child.once("exit", resolve))
    clearTimeout(timer)
    return { code, output }
  })

const withPgbouncer = <A, E, R>(use: (bouncer: PgBouncer, database: string) => Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const database = testDatabaseName()
    yield* createDatabase(database)
    const bouncer = yield* Effect.promise(() =>
      startPgbouncer({ binary: (pgbouncer as { path: string }).path, upstreamUrl: databaseUrl(database), poolMode: "transaction", poolSize: 2 })
    )
    return yield* use(bouncer, database).pipe(Effect.ensuring(Effect.promise(() => bouncer.stop())))
  })

describe.skipIf(missing !== undefined)(`behind PgBouncer in transaction mode${missing === undefined ? "" : ` (not run: ${missing})`}`, () => {
  it.live("with DATABASE_POOLER=transaction and DATABASE_DIRECT_URL: migrations, sign-in, reads, writes and a notification stream work", () =>
    withPgbouncer((bouncer, database) =>
      Effect.gen(function*() {
        const service = yield* startService(replicaEnv(database, {
          DATABASE_URL: bouncer.url,
          DATABASE_POOLER: "transaction",
          DATABASE_DIRECT_URL: databaseUrl(database),
          DATABASE_POOL_SIZE: "6"
        }))
        try {
          // Several signers at once: writes (nonces, sessions) and reads interleaved over 2 server connections.
          const accounts = Array.from({ length: 4 }, () => privateKeyToAccount(generatePrivateKey()))
          const sessions = yield* Effect.forEach(accounts, (a) => signIn(service.baseUrl, a), { concurrency: "unbounded" })
          const statuses = yield* Effect.promise(() =>
            Promise.all(Array.from({ length: 40 }, (_, i) =>
              fetch(`${service.baseUrl}/accounts`, { headers: { authorization: `Bearer ${sessions[i % 4]!.token}` } })
                .then(async (r) => (await r.arrayBuffer(), r.status))))
          )
          assert.deepStrictEqual([...new Set(statuses)], [200])

          // A notification written by someone else reaches the open stream (the listener's LISTEN holds).
          const signer = accounts[0]!.address.toLowerCase()
          const stream = yield* Effect.promise(() =>
            fetch(`${service.baseUrl}/notifications/stream`, { headers: { authorization: `Bearer ${sessions[0]!.token}` } })
          )
          assert.strictEqual(stream.status, 200)
          const reader = stream.body!.getReader()
          const received = (async () => {
            let text = ""
            while (!text.includes("through the pooler")) {
              const { done, value } = await reader.read()
              if (done) break
              text += new TextDecoder().decode(value)
            }
            return text
          })()
          // Through the pooler too, as any other writer would.
          yield* Effect.promise(async () => {
            const pg = await import("pg")
            const client = new pg.default.Client({ connectionString: bouncer.url })
            await client.connect()
            await client.query(
              `INSERT INTO notifications (id, signer_address, tone, title, body, created_at)
               VALUES ($1, $2, 'info', 'through the pooler', 'a test event', now())`,
              [`n_${Date.now()}`, signer]
            )
            await client.end()
          })
          const text = yield* Effect.promise(() =>
            Promise.race([received, new Promise<string>((r) => setTimeout(() => r("(nothing within 10 s)"), 10_000))])
          )
          yield* Effect.promise(() => reader.cancel())
          assert.include(text, "through the pooler")
          assert.notInclude(service.output(), "\"level\":\"ERROR\"")
        } finally {
          killGroup(service.child)
        }
      })
    ), 120_000)

  it.live("without DATABASE_POOLER, the start fails: the listener does not hear its own NOTIFY", () =>
    withPgbouncer((bouncer, database) =>
      Effect.gen(function*() {
        const { code, output } = yield* startExpectingExit(replicaEnv(database, { DATABASE_URL: bouncer.url }))
        assert.strictEqual(code, 1, output.slice(-2000))
        assert.include(output, "did not hear its own NOTIFY")
        assert.include(output, "DATABASE_POOLER=transaction")
      })
    ), 120_000)

  it.live("DATABASE_POOLER=transaction without DATABASE_DIRECT_URL: the start fails naming it", () =>
    withPgbouncer((bouncer, database) =>
      Effect.gen(function*() {
        const { code, output } = yield* startExpectingExit(replicaEnv(database, {
          DATABASE_URL: bouncer.url,
          DATABASE_POOLER: "transaction"
        }))
        assert.strictEqual(code, 1, output.slice(-2000))
        assert.include(output, "DATABASE_POOLER=transaction needs DATABASE_DIRECT_URL")
      })
    ), 120_000)
})
