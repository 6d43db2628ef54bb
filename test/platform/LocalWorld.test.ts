/**
 * The service on its embedded defaults keeps one world across restarts (issue 45): the local
 * chain keeps its state under DATA_DIR/chains, so a faucet balance is still on chain after a
 * SIGTERM and a start, and the follower reports no fork; `kill -9` of the service leaves no child
 * behind (the guards stop PostgreSQL, anvil and Alto) and the next start works; a PostgreSQL left
 * running all the same (its guard killed too) is found and stopped by the next start; and
 * `LOCAL_CHAIN_STATE=fresh` starts the chain and the database afresh together.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { createPublicClient, erc20Abi, http, parseUnits } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { signIn } from "../../src/client/signIn.ts"
import { freePort } from "../../src/platform/FreePort.ts"
import { startService, stopService } from "../support/ServiceProcess.ts"

/** Every live process below `pid` (children of children included), from /proc. */
const descendantsOf = (pid: number): Array<number> => {
  const parentOf = new Map<number, number>()
  for (const name of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue
    try {
      const stat = fs.readFileSync(`/proc/${name}/stat`, "utf8")
      parentOf.set(Number(name), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]))
    } catch {
      // gone meanwhile
    }
  }
  const found: Array<number> = []
  const walk = (p: number) => {
    for (const [child, parent] of parentOf) if (parent === p) (found.push(child), walk(child))
  }
  walk(pid)
  return found
}
const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.[0] !== "Z"
  } catch {
    return false
  }
}
const commOf = (pid: number) => {
  try {
    return fs.readFileSync(`/proc/${pid}/comm`, "utf8").trim()
  } catch {
    return "gone"
  }
}
const waitGone = (pids: ReadonlyArray<number>) =>
  Effect.promise(async () => {
    for (let i = 0; i < 300 && pids.some(alive); i++) await new Promise((r) => setTimeout(r, 100))
    return pids.filter(alive)
  })

const get = (url: string, token?: string) =>
  Effect.promise(() =>
    fetch(url, { headers: token === undefined ? {} : { authorization: `Bearer ${token}` } }).then(async (r) => ({
      status: r.status,
      body: r.status === 200 ? await r.json() as any : undefined
    }))
  )
const post = (url: string, token: string, body: unknown) =>
  Effect.promise(() =>
    fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      body: JSON.stringify(body)
    }).then((r) => r.status)
  )

describe("the service's world across restarts", () => {
  it.live("keeps the chain's state across a restart; kill -9 leaves nothing behind; fresh chains come with a fresh database", () =>
    Effect.gen(function*() {
      const dataDir = `/tmp/das-world-test-${process.pid}-${Date.now()}`
      const port = String(yield* Effect.promise(() => freePort()))
      // One chain: what holds for one holds for each (the state is kept per chain id).
      const env = { PORT: port, DATA_DIR: dataDir, LOCAL_CHAIN_IDS: "31337", SIWE_DOMAIN: "app.test", SIWE_URI: "https://app.test" }
      const signer = privateKeyToAccount(generatePrivateKey())
      const balanceOn = (baseUrl: string, token: string, address: string) =>
        Effect.gen(function*() {
          const nets = yield* get(`${baseUrl}/dev/networks`, token)
          assert.strictEqual(nets.status, 200)
          const net = nets.body[0]
          const client = createPublicClient({ transport: http(net.rpcUrl) })
          return yield* Effect.promise(() =>
            client.readContract({ address: net.tokens.usd.address, abi: erc20Abi, functionName: "balanceOf", args: [address as `0x${string}`] })
          )
        })
      // What this test started, stopped however it ends (the guards take the children with them).
      const started: Array<number> = []
      let orphan: number | undefined
      const start = (extra: Record<string, string> = {}) =>
        Effect.tap(startService({ ...env, ...extra }), (s) => Effect.sync(() => started.push(s.child.pid!)))
      try {
        const first = yield* start()
        const session = yield* signIn(first.baseUrl, signer)
        const address = session.accounts[0]!.address
        assert.strictEqual(yield* post(`${first.baseUrl}/dev/faucet`, session.token, { address, amount: 42 }), 200)
        assert.strictEqual(yield* balanceOn(first.baseUrl, session.token, address), parseUnits("42", 6))
        assert.strictEqual(yield* stopService(first.child), 0, first.output())
        assert.isTrue(fs.existsSync(path.join(dataDir, "chains", "31337", "anvil-state.json")), "anvil wrote its state on exit")

        // The same world: the balance is on chain, nothing was deployed again, the follower saw no fork.
        const second = yield* start()
        assert.strictEqual(yield* balanceOn(second.baseUrl, session.token, address), parseUnits("42", 6))
        assert.include(second.output(), "kept state loaded")
        assert.notInclude(second.output(), "forked at")

        // kill -9 of the service itself: every process it started stops with it.
        const children = descendantsOf(second.child.pid!)
        assert.includeMembers(children.map(commOf), ["postgres", "anvil"])
        process.kill(second.child.pid!, "SIGKILL")
        const survivors = yield* waitGone(children)
        assert.deepStrictEqual(survivors.map((p) => `${p} ${commOf(p)}`), [], "no child outlives the service")

        // The next start works, on the same world (anvil wrote its state when its guard stopped it).
        const third = yield* start()
        assert.strictEqual(yield* balanceOn(third.baseUrl, session.token, address), parseUnits("42", 6))
        assert.notInclude(third.output(), "forked at")

        // A PostgreSQL left running all the same: its guard killed first, then the service.
        const pidFile = fs.readFileSync(path.join(dataDir, "postgres", "postmaster.pid"), "utf8")
        const postmaster = Number(pidFile.split("\n")[0])
        orphan = postmaster
        const guards = descendantsOf(third.child.pid!).filter((p) => commOf(p) === "sh" && descendantsOf(p).includes(postmaster))
        assert.isAbove(guards.length, 0)
        for (const g of [...guards, ...guards.flatMap(descendantsOf).filter((p) => commOf(p) !== "postgres")]) {
          process.kill(g, "SIGKILL")
        }
        const others = descendantsOf(third.child.pid!).filter((p) => commOf(p) !== "postgres")
        process.kill(third.child.pid!, "SIGKILL")
        yield* waitGone(others)
        assert.isTrue(alive(postmaster), "the orphaned PostgreSQL is still running")

        // A fresh world on demand: the orphan is stopped, the chain and the database start afresh together.
        const fourth = yield* start({ LOCAL_CHAIN_STATE: "fresh" })
        assert.isFalse(alive(postmaster), "the next start stopped the PostgreSQL left running")
        assert.include(fourth.output(), `left running (pid ${postmaster})`)
        assert.strictEqual((yield* get(`${fourth.baseUrl}/accounts`, session.token)).status, 401, "the old database's session is gone")
        const again = yield* signIn(fourth.baseUrl, signer)
        assert.strictEqual(yield* balanceOn(fourth.baseUrl, again.token, address), 0n, "a fresh chain")
        assert.isTrue(fs.existsSync(path.join(dataDir, "postgres.previous", "PG_VERSION")), "the old database is kept aside")
        assert.strictEqual(yield* stopService(fourth.child), 0)
      } finally {
        for (const pid of started) {
          try {
            process.kill(pid, "SIGKILL")
          } catch {
            // stopped already
          }
        }
        if (orphan !== undefined && alive(orphan)) process.kill(orphan, "SIGINT")
        yield* waitGone(orphan === undefined ? [] : [orphan])
        fs.rmSync(dataDir, { recursive: true, force: true })
      }
    }), 900_000)
})
