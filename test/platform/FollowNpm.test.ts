/**
 * `npm start`'s service ends with npm (src/platform/FollowNpm.ts): npm killed with SIGKILL leaves
 * the service re-parented, and it drains (its finalizers run: the real service's stop its
 * children) and exits 0. A parent process stands in for npm; started by other means (no
 * `npm_lifecycle_event` of "start"), the service outlives its parent on purpose.
 */
import { assert, describe, it } from "@effect/vitest"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Effect } from "effect"

const child = path.resolve(import.meta.dirname, "../support/followNpmChild.ts")

/** Starts a parent ("npm") that starts the child with `event` as npm's lifecycle event; answers both pids. */
const startUnderParent = (event: string | undefined, drainedFile: string) =>
  Effect.promise(() =>
    new Promise<{ readonly parent: number; readonly child: number }>((resolve, reject) => {
      const env = { ...process.env }
      delete env.npm_lifecycle_event
      if (event !== undefined) env.npm_lifecycle_event = event
      const script = `
        const { spawn } = require("node:child_process")
        const c = spawn(process.execPath, ["--import", "tsx", ${JSON.stringify(child)}, ${JSON.stringify(drainedFile)}], { stdio: ["ignore", "pipe", "inherit"] })
        c.stdout.on("data", (d) => { if (String(d).includes("ready")) console.log("child " + c.pid) })
        setInterval(() => {}, 1000)`
      const parent = spawn(process.execPath, ["-e", script], { env, stdio: ["ignore", "pipe", "inherit"] })
      let out = ""
      parent.stdout.on("data", (d) => {
        out += String(d)
        const m = /child (\d+)/.exec(out)
        if (m !== null) resolve({ parent: parent.pid!, child: Number(m[1]) })
      })
      parent.on("exit", (code) => reject(new Error(`the parent exited (${code}) before its child was ready`)))
    })
  )

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** Waits for `check`, up to `ms` (a condition, not a count of sleeps). */
const until = (check: () => boolean, ms: number) =>
  Effect.promise(async () => {
    const deadline = Date.now() + ms
    while (!check() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
    return check()
  })

describe("npm start's service follows npm", () => {
  it.live("npm killed with SIGKILL: the service drains and exits", () =>
    Effect.gen(function*() {
      const drained = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "das-follow-")), "drained")
      const { child: pid, parent } = yield* startUnderParent("start", drained)
      assert.isTrue(alive(pid))
      process.kill(parent, "SIGKILL")
      assert.isTrue(yield* until(() => !alive(pid), 60_000), "the service outlived npm")
      assert.strictEqual(fs.readFileSync(drained, "utf8"), "drained", "the service stopped without its drain")
    }), { timeout: 120_000 })

  it.live("not started by npm start: it outlives its parent", () =>
    Effect.gen(function*() {
      const drained = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "das-follow-")), "drained")
      const { child: pid, parent } = yield* startUnderParent(undefined, drained)
      process.kill(parent, "SIGKILL")
      // Three of the watcher's looks at its parent.
      yield* Effect.sleep("3500 millis")
      assert.isTrue(alive(pid), "a service not run by npm start ended with its parent")
      process.kill(pid, "SIGTERM")
      assert.isTrue(yield* until(() => !alive(pid), 60_000))
      assert.strictEqual(fs.readFileSync(drained, "utf8"), "drained")
    }), { timeout: 120_000 })
})
