/**
 * The scripts as an operator runs them (`npm run …`): `devnet -- --env` prints the lines of
 * configured-network mode, which start the service as printed; and every script's children
 * stop with it on SIGTERM (npm, node, anvil, Alto, their guards: nothing left running).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { signIn } from "../../src/client/signIn.ts"
import { startService, stopService } from "../support/ServiceProcess.ts"
import { createDatabase, databaseUrl, testDatabaseName } from "../support/TestDatabase.ts"

const root = path.resolve(import.meta.dirname, "../..")

/** Every process below `pid`, by /proc's children lists. */
const descendants = (pid: number): Array<number> => {
  const out: Array<number> = []
  const walk = (p: number) => {
    let tasks: Array<string> = []
    try {
      tasks = fs.readdirSync(`/proc/${p}/task`)
    } catch {
      return
    }
    for (const task of tasks) {
      let children: Array<number> = []
      try {
        children = fs.readFileSync(`/proc/${p}/task/${task}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number)
      } catch {
        continue
      }
      for (const c of children) {
        out.push(c)
        walk(c)
      }
    }
  }
  walk(pid)
  return out
}

const alive = (pid: number) => {
  try {
    // A zombie is gone for our purpose (exited, waiting to be reaped).
    return !/^\S+ \(.*\) Z/.test(fs.readFileSync(`/proc/${pid}/stat`, "utf8"))
  } catch {
    return false
  }
}

const npmRun = (script: string, args: ReadonlyArray<string> = []) => {
  const child = spawn("npm", ["run", "--silent", script, ...(args.length > 0 ? ["--", ...args] : [])], {
    cwd: root,
    env: { ...process.env, PATH: `${path.join(root, "node_modules/.bin")}:${process.env.PATH}` },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let stdout = ""
  let stderr = ""
  child.stdout!.on("data", (d) => (stdout += d))
  child.stderr!.on("data", (d) => (stderr += d))
  return { child, stdout: () => stdout, stderr: () => stderr }
}

const until = async (what: string, check: () => boolean, seconds: number, output: () => string) => {
  for (let i = 0; i < seconds * 10; i++) {
    if (check()) return
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error(`${what} not seen in ${seconds} s:\n${output()}`)
}

/** SIGTERM to npm; then every process it had started must be gone within `seconds`. */
const terminate = async (child: ChildProcess, seconds = 10) => {
  const tree = descendants(child.pid!)
  assert.isAbove(tree.length, 0)
  const exited = new Promise<void>((r) => child.once("exit", () => r()))
  child.kill("SIGTERM")
  await exited
  for (let i = 0; i < seconds * 10 && tree.some(alive); i++) await new Promise((r) => setTimeout(r, 100))
  const left = tree.filter(alive).map((p) => {
    try {
      return `${p}: ${fs.readFileSync(`/proc/${p}/cmdline`, "utf8").replaceAll("\0", " ").slice(0, 120)}`
    } catch {
      return String(p)
    }
  })
  for (const p of tree) if (alive(p)) process.kill(p, "SIGKILL")
  return { tree: tree.length, left }
}

describe("scripts", () => {
  it.live("devnet -- --env prints lines that start the service on that network; SIGTERM stops every child", () =>
    Effect.gen(function*() {
      const devnet = npmRun("devnet", ["--env"])
      try {
        yield* Effect.promise(() =>
          until("the env lines", () => devnet.stderr().includes("local network up"), 120, () => devnet.stdout() + devnet.stderr()))
        const env: Record<string, string> = {}
        for (const line of devnet.stdout().trim().split("\n")) {
          const m = /^export ([A-Z0-9_]+)='(.*)'$/.exec(line)
          assert.isNotNull(m, `not an export line: ${line}`)
          env[m![1]!] = m![2]!.replaceAll(`'\\''`, "'")
        }
        // Every local chain (LOCAL_CHAIN_IDS: 31337 and 31338 by default) in CHAINS, with its keys.
        assert.deepStrictEqual(Object.keys(env).sort(), [
          "CHAINS",
          "CHAIN_31337_ANCHOR_PRIVATE_KEY",
          "CHAIN_31337_PAYMASTER_SIGNER_KEY",
          "CHAIN_31338_ANCHOR_PRIVATE_KEY",
          "CHAIN_31338_PAYMASTER_SIGNER_KEY"
        ])
        const chains = JSON.parse(env.CHAINS!) as Array<{ chainId: number; rpcUrl: string }>
        assert.deepStrictEqual(chains.map((c) => c.chainId), [31337, 31338])
        // As pasted: the service runs on those networks (configured-network mode), with a database.
        const database = testDatabaseName()
        yield* createDatabase(database)
        const service = yield* startService({ ...env, DATABASE_URL: databaseUrl(database), ANCHOR_INTERVAL: "0 seconds" })
        for (const c of chains) assert.include(service.output(), `(chain ${c.chainId}) rpc ${c.rpcUrl}`)
        const signer = privateKeyToAccount(generatePrivateKey())
        const session = yield* signIn(service.baseUrl, signer)
        assert.isAtLeast(session.accounts.length, 1)
        // Both chains answer readiness (each chain's RPC and bundler).
        const ready = yield* Effect.promise(() => fetch(`${service.baseUrl}/health/ready`).then((r) => r.json()))
        assert.deepStrictEqual(
          (ready as { chains: Array<{ chainId: number; status: string }> }).chains.map((c) => [c.chainId, c.status]),
          [[31337, "ok"], [31338, "ok"]]
        )
        assert.strictEqual(yield* stopService(service.child), 0)
      } finally {
        const { tree, left } = yield* Effect.promise(() => terminate(devnet.child))
        assert.isAtLeast(tree, 4, "npm, node, anvil and Alto at least")
        assert.deepStrictEqual(left, [], "left running after SIGTERM")
      }
    }), 240_000)

  it.live("sample-upstreams stops with its children on SIGTERM", () =>
    Effect.gen(function*() {
      const upstreams = npmRun("sample-upstreams")
      yield* Effect.promise(() =>
        until("the listening line", () => upstreams.stdout().includes("Sample upstreams are listening"), 60, () => upstreams.stdout() + upstreams.stderr()))
      const { left } = yield* Effect.promise(() => terminate(upstreams.child))
      assert.deepStrictEqual(left, [], "left running after SIGTERM")
    }), 120_000)
})
