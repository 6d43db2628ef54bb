/**
 * Nothing left behind after `kill -9` of a test run (issue 45 item 2): a process that started
 * what a test run starts (test/support/heldTestWorld.ts runs the run's globalSetup: embedded
 * PostgreSQL, both local chains with their bundlers) is killed outright, as a timeout kills a
 * run, and none of the processes it started outlives it; the next run starts, removes the killed
 * run's data folder, and stops everything on its orderly end. (The service's own kill -9 is in
 * LocalWorld.test.ts.)
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { alive, commOf, describeProcess, descendantsOf, waitGone } from "../support/Processes.ts"

const root = path.resolve(import.meta.dirname, "../..")
const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href

interface Held {
  readonly child: ChildProcess
  readonly output: () => string
}

/**
 * Starts the held test world in `cwd` (its .test-results go there, not beside this run's) and
 * waits for its "ready" line: readiness, not a fixed wait (the run's own bound on its children
 * applies inside).
 */
const startHeld = (cwd: string) =>
  Effect.promise(() =>
    new Promise<Held>((resolve, reject) => {
      const child = spawn(process.execPath, ["--import", tsx, path.join(root, "test/support/heldTestWorld.ts")], {
        cwd,
        env: process.env,
        // Its stdin is a pipe from this test: should the test's own process go away, it ends too.
        stdio: ["pipe", "pipe", "pipe"]
      })
      let output = ""
      // As long as the run's own bound on its children (LOCAL_READY_TIMEOUT, 3 minutes), and the migrations.
      const bound = setTimeout(() => {
        child.kill("SIGTERM")
        reject(new Error(`the held test world was not ready in 300 s:\n${output}`))
      }, 300_000)
      child.stdout!.on("data", (d) => {
        output += d
        if (/^ready /m.test(output)) (clearTimeout(bound), resolve({ child, output: () => output }))
      })
      child.stderr!.on("data", (d) => (output += d))
      child.once("exit", (code, signal) => (clearTimeout(bound), reject(new Error(`the held test world exited (${code ?? signal}) before ready:\n${output}`))))
    })
  )

/** The data folders of the run with this pid (globalSetup's /tmp/das-test-pg-<pid>-<ms>). */
const dataFoldersOf = (pid: number) => fs.readdirSync("/tmp").filter((n) => n.startsWith(`das-test-pg-${pid}-`))

describe("a test run killed outright", () => {
  it.live("kill -9 of a process holding the run's PostgreSQL and chains leaves no child behind; the next run starts and cleans up", () =>
    Effect.gen(function*() {
      const cwd = fs.mkdtempSync("/tmp/das-killed-run-")
      const started: Array<ChildProcess> = []
      // Each child with what it ran, so that the cleanup below never signals a pid used again by another.
      const everyChild = new Map<number, string>()
      const note = (pids: ReadonlyArray<number>) => pids.forEach((p) => everyChild.set(p, describeProcess(p)))
      try {
        const first = yield* startHeld(cwd)
        started.push(first.child)
        const pid = first.child.pid!
        const children = descendantsOf(pid)
        note(children)
        const names = children.map(describeProcess).join("\n")
        // Its PostgreSQL, both anvils and both Altos are running.
        assert.isTrue(children.some((p) => commOf(p) === "postgres"), names)
        assert.strictEqual(children.filter((p) => commOf(p) === "anvil").length, 2, names)
        assert.strictEqual(children.filter((p) => commOf(p) === "node" && describeProcess(p).includes("alto.js")).length, 2, names)
        assert.strictEqual(dataFoldersOf(pid).length, 1)

        // kill -9 of the run itself (only its pid: a timeout does not know its children).
        process.kill(pid, "SIGKILL")
        const survivors = yield* waitGone([pid, ...children], 60)
        assert.deepStrictEqual(survivors.map(describeProcess), [], "no child outlives the killed run")
        // Its data folder stays (nothing ran to remove it) until the next run.
        assert.strictEqual(dataFoldersOf(pid).length, 1)

        // The next run starts, and removes what the killed one left.
        const second = yield* startHeld(cwd)
        started.push(second.child)
        assert.deepStrictEqual(dataFoldersOf(pid), [], "the killed run's data folder is removed by the next run")
        const secondChildren = descendantsOf(second.child.pid!)
        note(secondChildren)
        assert.isTrue(secondChildren.some((p) => commOf(p) === "postgres"))

        // Its orderly end (SIGTERM: the run's teardown) stops everything and removes its folder.
        const code = yield* Effect.promise(() =>
          new Promise<number | null>((resolve) => {
            second.child.once("exit", (c) => resolve(c))
            second.child.kill("SIGTERM")
          })
        )
        assert.strictEqual(code, 0, second.output())
        assert.deepStrictEqual((yield* waitGone(secondChildren, 60)).map(describeProcess), [])
        assert.deepStrictEqual(dataFoldersOf(second.child.pid!), [])
      } finally {
        // Whatever failed above: nothing of this test keeps running.
        for (const child of started) if (child.exitCode === null) child.kill("SIGKILL")
        yield* waitGone([...everyChild.keys()], 30)
        for (const [p, what] of everyChild) if (alive(p) && describeProcess(p) === what) process.kill(p, "SIGKILL")
        fs.rmSync(cwd, { recursive: true, force: true })
      }
    }), 900_000)
})
