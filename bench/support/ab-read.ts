/**
 * A/B (and ablation) of `GET /accounts` across service builds or settings, alternated in one
 * session: every variant is a service process of its own on the same PostgreSQL and chain,
 * loaded in turn (the order rotating each round), with the Effect floor and bare node + pg in
 * the same rounds. Each process's CPU while another side is loaded (its background) is subtracted.
 * Prints each variant's server CPU per request and requests/s against bare, medians and ranges.
 *
 *   VARIANTS='[{"name":"before","dir":"/work/wt/scratch"},{"name":"after","dir":"."},
 *              {"name":"no access line","dir":".","env":{"LOG_ACCESS_LEVEL":"None"}}]' \
 *     ROUNDS=6 DURATION=4 npx tsx bench/support/ab-read.ts
 *
 * `dir`: a checkout whose `src/main.ts` runs (its own node_modules); `env`: added to the
 * service's benchmark environment. Not in `npm run bench`: a tool for docs/performance.md.
 */
import autocannon from "autocannon"
import { Effect, Exit, Scope } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import * as path from "node:path"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { make as startLocalNetwork, toJson } from "../../src/chain/LocalNetwork.ts"
import { signIn } from "../../src/client/signIn.ts"
import { cpuMicros, freePort, serviceEnv, startPostgres, startProcess } from "./processes.ts"
import { spread } from "./results.ts"

interface Variant {
  readonly name: string
  readonly dir: string
  readonly env?: Record<string, string>
}

const variants = JSON.parse(process.env.VARIANTS ?? "[]") as ReadonlyArray<Variant>
if (variants.length === 0) throw new Error("VARIANTS: a JSON list of {name, dir, env?}")
const duration = Number(process.env.DURATION ?? 4)
const rounds = Number(process.env.ROUNDS ?? 6)
const connections = Number(process.env.CONNECTIONS ?? 32)

const load = (url: string, token: string, seconds: number) =>
  new Promise<autocannon.Result>((resolve, reject) =>
    autocannon(
      { url, connections, duration: seconds, headers: { authorization: `Bearer ${token}` } },
      (err, result) => (err ? reject(err) : resolve(result))
    )
  )

/** `tsx src/main.ts` in `dir`, ready when `/health/ready` answers. */
const startService = async (dir: string, env: Record<string, string>, port: number) => {
  const child: ChildProcess = spawn(path.join(path.resolve(dir), "node_modules/.bin/tsx"), ["src/main.ts"], {
    cwd: path.resolve(dir),
    env: { ...process.env, METRICS_PORT: "0", X402_FACILITATOR_PORT: "off", ...env },
    stdio: ["ignore", "ignore", "inherit"]
  })
  for (let i = 0; i < 1200; i++) {
    if (child.exitCode !== null) break
    if (await fetch(`http://127.0.0.1:${port}/health/ready`).then((r) => r.status < 500, () => false)) return child
    await new Promise((r) => setTimeout(r, 100))
  }
  child.kill("SIGKILL")
  throw new Error(`the service in ${dir} did not become ready`)
}

const stop = (child: ChildProcess) =>
  new Promise<void>((r) => {
    if (child.exitCode !== null || child.signalCode !== null) return r()
    child.once("exit", () => r())
    child.kill("SIGTERM")
  })

const scope = Effect.runSync(Scope.make())
const network = toJson(await Effect.runPromise(startLocalNetwork().pipe(Scope.provide(scope))))
const pg = await startPostgres()
const children: Array<ChildProcess> = []
try {
  const sides: Array<{ name: string; child: ChildProcess; script: string; url: string }> = []
  // The first alone (it runs the migrations), then the others together.
  const start = async (v: Variant) => {
    const port = await freePort()
    const child = await startService(v.dir, serviceEnv({ databaseUrl: pg.url, port, networks: network }, v.env ?? {}), port)
    children.push(child)
    return { name: v.name, child, script: "src/main.ts", url: `http://127.0.0.1:${port}/accounts` }
  }
  sides.push(await start(variants[0]!))
  sides.push(...await Promise.all(variants.slice(1).map(start)))
  // The floor: the same read on Effect's HttpRouter + sql-pg with nothing else (bench/http-read.ts).
  const floorPort = await freePort()
  const floor = await startProcess("bench/support/effect-read-server.ts", { DATABASE_URL: pg.url, PORT: String(floorPort) }, `http://127.0.0.1:${floorPort}/`)
  children.push(floor.child)
  sides.push({ name: "Effect floor", child: floor.child, script: "effect-read-server", url: `http://127.0.0.1:${floorPort}/accounts` })
  const barePort = await freePort()
  const bare = await startProcess("bench/support/bare-read-server.ts", { DATABASE_URL: pg.url, PORT: String(barePort) }, `http://127.0.0.1:${barePort}/`)
  children.push(bare.child)
  sides.push({ name: "bare node:http + pg", child: bare.child, script: "bare-read-server", url: `http://127.0.0.1:${barePort}/accounts` })
  const first = new URL(sides[0]!.url).origin
  const session = await Effect.runPromise(signIn(first, privateKeyToAccount(generatePrivateKey())))
  for (const side of sides) await load(side.url, session.token, 3)
  const cpu = sides.map(() => [] as Array<number>)
  const vsBare = sides.map(() => [] as Array<number>)
  // Each process's CPU while another side is loaded (its follower, pollers): µs per second,
  // subtracted from its loaded figure, so background work is not counted per request.
  const idle = sides.map(() => [] as Array<number>)
  const idleRate = (i: number) => (idle[i]!.length === 0 ? 0 : spread(idle[i]!).median)
  for (let round = 0; round < rounds; round++) {
    const order = sides.map((_, i) => (i + round) % sides.length)
    const rates: Array<number> = []
    for (const i of order) {
      const side = sides[i]!
      const all = sides.map((s) => cpuMicros(s.child, s.script))
      const started = performance.now()
      const r = await load(side.url, session.token, duration)
      const seconds = (performance.now() - started) / 1000
      if (r.errors + r.non2xx > 0) throw new Error(`${side.name} answered errors under load`)
      sides.forEach((s, j) => {
        if (j !== i) idle[j]!.push((cpuMicros(s.child, s.script) - all[j]!) / seconds)
      })
      cpu[i]!.push((cpuMicros(side.child, side.script) - all[i]! - idleRate(i) * seconds) / r.requests.total)
      rates[i] = r.requests.average
      console.log(`#${round + 1} ${side.name.padEnd(28)} ${r.requests.average.toFixed(0).padStart(6)} req/s ${cpu[i]!.at(-1)!.toFixed(0).padStart(5)} µs CPU/req`)
    }
    sides.forEach((_, i) => vsBare[i]!.push(rates[i]! / rates[sides.length - 1]!))
  }
  console.log(`GET /accounts, ${connections} connections, ${rounds} rounds × ${duration} s, load ${(await import("node:os")).loadavg()[0]!.toFixed(1)}`)
  sides.forEach((side, i) => {
    const c = spread(cpu[i]!)
    const r = spread(vsBare[i]!)
    console.log(`${side.name.padEnd(28)} CPU/req ${c.median.toFixed(0)} µs (${c.min.toFixed(0)}–${c.max.toFixed(0)})   vs bare ${r.median.toFixed(2)}× (${r.min.toFixed(2)}–${r.max.toFixed(2)})   idle ${(idleRate(i) / 1000).toFixed(1)} ms/s`)
  })
} finally {
  for (const child of children) await stop(child)
  await pg.stop()
  await Effect.runPromise(Scope.close(scope, Exit.void))
}
