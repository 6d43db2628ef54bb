/**
 * The service as a user runs it: `src/main.ts` in its own process on its embedded
 * defaults (its own PostgreSQL under DATA_DIR, its own local chain). It serves,
 * shuts down cleanly on SIGTERM (sent to `npm start`, as a process manager would), and its
 * data survives a restart.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { freePort } from "../../src/platform/FreePort.ts"
import { startService, startsTimeout, stopService as stop } from "../support/ServiceProcess.ts"
import { signIn } from "../../src/client/signIn.ts"

describe("the service process", () => {
  it.live("serves on its embedded defaults, stops cleanly on SIGTERM, and keeps its data across a restart", () =>
    Effect.gen(function*() {
      const dataDir = `/tmp/das-process-test-${process.pid}-${Date.now()}`
      const port = String(yield* Effect.promise(() => freePort()))
      const env = { PORT: port, HOST: "127.0.0.1", DATA_DIR: dataDir, SIWE_DOMAIN: "app.test", SIWE_URI: "https://app.test" }
      const signer = privateKeyToAccount(generatePrivateKey())
      try {
        // The first run as a user starts it (`npm start`), stopped by a SIGTERM to npm.
        const first = yield* startService(env, { viaNpm: true })
        const session = yield* signIn(first.baseUrl, signer)
        const code = yield* stop(first.child)
        assert.strictEqual(code, 0, first.output())
        // The embedded PostgreSQL stopped with it (no server left holding the data folder).
        assert.isFalse(fs.existsSync(path.join(dataDir, "postgres", "postmaster.pid")))
        assert.include(first.output(), "\"message\":")

        const second = yield* startService(env)
        const again = yield* signIn(second.baseUrl, signer)
        assert.deepStrictEqual(again.accounts, session.accounts, "the same account after a restart")
        // The first session is still valid: sessions are stored, not held in memory.
        const res = yield* Effect.promise(() =>
          fetch(`${second.baseUrl}/accounts`, { headers: { authorization: `Bearer ${session.token}` } })
        )
        assert.strictEqual(res.status, 200)
        assert.strictEqual(yield* stop(second.child), 0)
      } finally {
        fs.rmSync(dataDir, { recursive: true, force: true })
      }
    }), startsTimeout(2)) // two full starts on the embedded defaults: 50-85 s each at load 20-28 (docs/performance.md), so a fixed 120 s ran out
})
