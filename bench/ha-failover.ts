/**
 * A database failover under relay load, for real (issue 28 item 2; docs/operations.md,
 * "A highly available database"): Debian's PostgreSQL 15 managed by Patroni with etcd, a
 * primary and a synchronous standby on loopback; the service as its own process reaching them
 * through a multi-host `DATABASE_URL` (`target_session_attrs=read-write`); workers relaying
 * operations (sign in, build, sign, `POST /userops`) as fast as they can; then the primary's
 * Patroni and PostgreSQL are killed with SIGKILL, as a machine dies.
 *
 * It checks, and prints:
 * - every answer during the switch is a 2xx or a 503 (never a 500, never a dropped connection);
 * - the service (the same process) reconnects to the new primary by itself;
 * - every operation acknowledged (2xx with an id) exists exactly once, settles on chain, and
 *   has its one audit entry; every audit chain verifies (`npm run audit:verify -- --all`);
 * - the follower's cursor moves on from where it was, to the chain's head; anchoring resumes
 *   (an anchor after the switch, and every head anchored in the end);
 * - figures: time without service (no write succeeds; readiness not 200), operations
 *   acknowledged and lost (goal 0).
 *
 *   npm run scenario:failover               (as root: about 2 minutes; installs what it lacks)
 *   LOAD_WORKERS=6 LOAD_SECONDS=20 npm run scenario:failover
 *
 * Needs root: PostgreSQL runs as the `postgres` user (`su`), and missing packages are
 * installed with apt-get (`postgresql-15 patroni etcd-server`). Everything listens on
 * 127.0.0.1 on free ports, in a temporary folder removed at the end.
 */
import { Effect, Exit, Scope } from "effect"
import { type ChildProcess, execFileSync, spawn, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import pg from "pg"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { configEnvOf, make as startLocalNetwork, toJson } from "../src/chain/LocalNetwork.ts"
import { makeClient } from "../src/client/Client.ts"
import { signIn } from "../src/client/signIn.ts"
import type { Eip712TypedData, UserOperation } from "../src/domain/Operations.ts"
import { freePort, root } from "./support/processes.ts"

process.env.DO_NOT_TRACK = "1"
const workers = Number(process.env.LOAD_WORKERS ?? 4)
/** Load before the kill, and after the service is back. */
const loadBefore = Number(process.env.LOAD_SECONDS ?? 12) * 1000
const loadAfter = Number(process.env.LOAD_AFTER_SECONDS ?? 10) * 1000
const PG_BIN = "/usr/lib/postgresql/15/bin"
/** anvil's public dev key #5: the local network's anchoring account. */
const ANCHOR_KEY = "0x8b3a350cf5c34c9194ca85829a2df0ec3153be0318b5e2d3348e872092edffba"

const log = (line: string) => console.log(`[failover ${((Date.now() - t0) / 1000).toFixed(1).padStart(6)} s] ${line}`)
const t0 = Date.now()
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const until = async <A>(what: string, seconds: number, probe: () => Promise<A | undefined>): Promise<A> => {
  const end = Date.now() + seconds * 1000
  while (Date.now() < end) {
    const found = await probe().catch(() => undefined)
    if (found !== undefined) return found
    await sleep(200)
  }
  throw new Error(`${what}: not within ${seconds} s`)
}

// ---------------------------------------------------------------------------------------------
// What it needs: the Debian packages, root.

const ensurePackages = () => {
  if (process.getuid?.() !== 0) throw new Error("run as root: PostgreSQL is started as the postgres user, packages with apt-get")
  const missing = [
    [`${PG_BIN}/postgres`, "postgresql-15"],
    ["/usr/bin/patroni", "patroni"],
    ["/usr/bin/etcd", "etcd-server"]
  ].filter(([file]) => !fs.existsSync(file!)).map(([, pkg]) => pkg!)
  if (missing.length === 0) return
  log(`installing ${missing.join(" ")} (apt-get)`)
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" }
  execFileSync("apt-get", ["update"], { stdio: "inherit", env })
  execFileSync("apt-get", ["install", "-y", "--no-install-recommends", ...missing], { stdio: "inherit", env })
  // The package starts a default cluster of its own on 5432; this scenario needs none of it.
  spawnSync("pg_ctlcluster", ["15", "main", "stop"], { stdio: "ignore" })
}

// ---------------------------------------------------------------------------------------------
// The cluster: etcd, two Patroni nodes.

const dir = fs.mkdtempSync("/tmp/das-ha-")
fs.chmodSync(dir, 0o755)
const children: Array<ChildProcess> = []
const spawnLogged = (name: string, command: string, args: ReadonlyArray<string>, env: NodeJS.ProcessEnv = process.env, cwd = dir) => {
  const out = fs.openSync(path.join(dir, `${name}.log`), "a")
  const child = spawn(command, args, { cwd, env, stdio: ["ignore", out, out], detached: true })
  children.push(child)
  return child
}

interface Node {
  readonly name: string
  readonly pgPort: number
  readonly restPort: number
  readonly dataDir: string
}

const nodeYaml = (node: Node, etcdPort: number) => `scope: das
name: ${node.name}
restapi: { listen: 127.0.0.1:${node.restPort}, connect_address: 127.0.0.1:${node.restPort} }
etcd3: { hosts: 127.0.0.1:${etcdPort} }
bootstrap:
  dcs:
    ttl: 10
    loop_wait: 2
    retry_timeout: 5
    synchronous_mode: true
    postgresql:
      use_pg_rewind: true
      parameters: { wal_level: replica, hot_standby: "on", max_connections: 100, wal_log_hints: "on" }
  initdb: [ { encoding: UTF8 } ]
  pg_hba:
    - host replication replicator 127.0.0.1/32 md5
    - host all all 127.0.0.1/32 md5
postgresql:
  listen: 127.0.0.1:${node.pgPort}
  connect_address: 127.0.0.1:${node.pgPort}
  data_dir: ${node.dataDir}
  bin_dir: ${PG_BIN}
  pgpass: ${dir}/${node.name}.pgpass
  authentication:
    replication: { username: replicator, password: rep }
    superuser: { username: postgres, password: pg }
    rewind: { username: rewind, password: rw }
`

const startNode = (node: Node, etcdPort: number) => {
  const yaml = path.join(dir, `${node.name}.yml`)
  fs.writeFileSync(yaml, nodeYaml(node, etcdPort))
  const pidFile = path.join(dir, `${node.name}.patroni.pid`)
  // `exec`: Patroni keeps the pid written (the pid the kill needs).
  spawnLogged(node.name, "su", ["postgres", "-s", "/bin/sh", "-c", `echo $$ > ${pidFile}; exec patroni ${yaml}`])
}

interface Member {
  readonly name: string
  readonly role: string
  readonly state: string
  readonly port: number
}
const members = async (nodes: ReadonlyArray<Node>): Promise<Array<Member>> => {
  for (const n of nodes) {
    const res = await fetch(`http://127.0.0.1:${n.restPort}/cluster`, { signal: AbortSignal.timeout(1000) }).catch(() => undefined)
    if (res?.ok === true) return ((await res.json()) as { members: Array<Member> }).members
  }
  return []
}

/** Every process of a node: its Patroni, its postmaster and the postmaster's children. */
const processesOf = (node: Node): Array<number> => {
  const pids = [Number(fs.readFileSync(path.join(dir, `${node.name}.patroni.pid`), "utf8").trim())]
  const postmaster = Number(fs.readFileSync(path.join(node.dataDir, "postmaster.pid"), "utf8").split("\n")[0])
  pids.push(postmaster)
  for (const task of fs.readdirSync(`/proc/${postmaster}/task`)) {
    pids.push(...fs.readFileSync(`/proc/${postmaster}/task/${task}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number))
  }
  return pids
}

// ---------------------------------------------------------------------------------------------
// Load: what a wallet does, with every answer counted.

const statuses = new Map<string, number>()
const count = (key: string) => statuses.set(key, (statuses.get(key) ?? 0) + 1)
/** Every answer of the service, by status; a failed connection as `network`. */
const realFetch = globalThis.fetch
const serviceOrigin = { value: "" }
globalThis.fetch = (async (input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) => {
  const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url
  const ours = serviceOrigin.value !== "" && url.startsWith(serviceOrigin.value)
  try {
    const res = await realFetch(input, init)
    if (ours) {
      count(String(res.status))
      if (res.status >= 500 && res.status !== 503) {
        const body = await res.clone().text()
        log(`UNEXPECTED ${res.status} ${url}: ${body.slice(0, 300)}`)
      }
    }
    return res
  } catch (e) {
    if (ours) count("network")
    throw e
  }
}) as typeof fetch

interface Acknowledged {
  readonly userOpId: string
  readonly at: number
}
const acknowledged: Array<Acknowledged> = []
/** When a write (any 2xx of a POST) last succeeded, to find the longest time without one. */
const writeSuccesses: Array<number> = []
let stopLoad = false

const relayOne = async (baseUrl: string): Promise<void> => {
  const key = generatePrivateKey()
  const owner = privateKeyToAccount(key)
  const session = await Effect.runPromise(signIn(baseUrl, owner))
  writeSuccesses.push(Date.now())
  const api = await Effect.runPromise(makeClient({ baseUrl, token: session.token }))
  const build = await Effect.runPromise(api.accounts.buildRules({ payload: { intentType: "account_freeze" } }))
  writeSuccesses.push(Date.now())
  const signature = await owner.signTypedData(build.typedData as Eip712TypedData as never)
  const body = JSON.stringify({ ...build.userOp, signature } satisfies UserOperation)
  // The same signed operation again until it is answered: a retry after a 503 (or a dropped
  // answer) must never make a second operation.
  for (let attempt = 0; attempt < 600 && !stopLoad; attempt++) {
    const res = await fetch(`${baseUrl}/userops`, {
      method: "POST",
      headers: { authorization: `Bearer ${session.token}`, "content-type": "application/json" },
      body
    }).catch(() => undefined)
    if (res !== undefined && res.ok) {
      const { userOpId } = (await res.json()) as { userOpId: string }
      acknowledged.push({ userOpId, at: Date.now() })
      writeSuccesses.push(Date.now())
      return
    }
    if (res !== undefined && res.status !== 503 && res.status !== 504) {
      throw new Error(`POST /userops answered ${res.status}: ${await res.text()}`)
    }
    await sleep(200)
  }
}

const worker = async (baseUrl: string) => {
  while (!stopLoad) {
    // A failed sign-in or build (503 while the database is away) starts over with a fresh key.
    await relayOne(baseUrl).catch(async () => sleep(200))
  }
}

/** Readiness every 100 ms: when it was not 200. */
const readiness: Array<{ at: number; ok: boolean }> = []
const watchReadiness = async (baseUrl: string) => {
  while (!stopWatching) {
    const ok = await realFetch(`${baseUrl}/health/ready`, { signal: AbortSignal.timeout(2000) }).then((r) => r.ok, () => false)
    readiness.push({ at: Date.now(), ok })
    await sleep(100)
  }
}
let stopWatching = false

// ---------------------------------------------------------------------------------------------

const cleanup: Array<() => Promise<void> | void> = []
const run = async () => {
  ensurePackages()
  const [etcdClient, etcdPeer, pg1, pg2, rest1, rest2, apiPort] = await Promise.all(
    Array.from({ length: 7 }, () => freePort())
  )
  const nodes: Array<Node> = [
    { name: "node1", pgPort: pg1!, restPort: rest1!, dataDir: path.join(dir, "pg1") },
    { name: "node2", pgPort: pg2!, restPort: rest2!, dataDir: path.join(dir, "pg2") }
  ]
  execFileSync("chown", ["postgres:postgres", dir])
  log(`cluster folder ${dir}`)

  spawnLogged("etcd", "etcd", [
    "--name", "n0", "--data-dir", path.join(dir, "etcd"),
    "--listen-client-urls", `http://127.0.0.1:${etcdClient}`, "--advertise-client-urls", `http://127.0.0.1:${etcdClient}`,
    "--listen-peer-urls", `http://127.0.0.1:${etcdPeer}`, "--initial-advertise-peer-urls", `http://127.0.0.1:${etcdPeer}`,
    "--initial-cluster", `n0=http://127.0.0.1:${etcdPeer}`
  ], { ...process.env, ETCD_UNSUPPORTED_ARCH: process.arch === "x64" ? "" : process.arch })
  await until("etcd", 30, async () => ((await realFetch(`http://127.0.0.1:${etcdClient}/health`)).ok ? true : undefined))

  startNode(nodes[0]!, etcdClient!)
  const leader = await until("a leader", 90, async () => (await members(nodes)).find((m) => m.role === "leader" && m.state === "running"))
  log(`${leader.name} leads (PostgreSQL on ${leader.port})`)
  startNode(nodes[1]!, etcdClient!)
  await until("a synchronous standby", 120, async () =>
    (await members(nodes)).find((m) => m.role === "sync_standby" && (m.state === "streaming" || m.state === "running")))
  log("node2 follows as the synchronous standby")

  const admin = new pg.Client({ connectionString: `postgres://postgres:pg@127.0.0.1:${leader.port}/postgres` })
  await admin.connect()
  await admin.query("CREATE DATABASE das")
  await admin.end()

  const scope = Effect.runSync(Scope.make())
  cleanup.push(() => Effect.runPromise(Scope.close(scope, Exit.void)))
  const network = toJson(await Effect.runPromise(startLocalNetwork().pipe(Scope.provide(scope))))
  log(`local chain ${network.chainId} at ${network.rpcUrl}`)

  const databaseUrl = `postgres://postgres:pg@127.0.0.1:${pg1},127.0.0.1:${pg2}/das?target_session_attrs=read-write`
  const baseUrl = `http://127.0.0.1:${apiPort}`
  serviceOrigin.value = baseUrl
  const serviceLog = path.join(dir, "service.log")
  const service = spawnLogged("service", process.execPath, ["--import", "tsx", path.join(root, "src/main.ts")], {
    ...process.env,
    DATABASE_URL: databaseUrl,
    PORT: String(apiPort),
    HOST: "127.0.0.1",
    METRICS_PORT: "off",
    X402_FACILITATOR_PORT: "off",
    LOG_FORMAT: "json",
    SIWE_DOMAIN: "failover.local",
    SIWE_URI: "http://failover.local",
    ...configEnvOf([network]),
    [`CHAIN_${network.chainId}_ANCHOR_PRIVATE_KEY`]: ANCHOR_KEY,
    ANCHOR_INTERVAL: "2 seconds",
    FOLLOWER_INTERVAL: "500 millis",
    RELAY_RECONCILE_INTERVAL: "1 second",
    // Every operation is a fresh key from one address: no per-address limits in this scenario.
    RATE_LIMIT_NONCE_PER_MINUTE: "0",
    RATE_LIMIT_SESSION_PER_MINUTE: "0",
    RATE_LIMIT_BUILDS_PER_MINUTE: "0",
    SPONSOR_QUOTA_OPS: "0",
    SPONSOR_QUOTA_GAS: "0",
    SPONSOR_ADDRESS_QUOTA_OPS: "0",
    SPONSOR_ADDRESS_QUOTA_GAS: "0"
  }, root)
  const exited = await until("the service", 180, async () =>
    service.exitCode !== null ? "exited" : (await realFetch(`${baseUrl}/health/ready`)).ok ? "ready" : undefined)
  if (exited === "exited") throw new Error(`the service exited: ${fs.readFileSync(serviceLog, "utf8").slice(-2000)}`)
  log(`service (pid ${service.pid}) ready at ${baseUrl}, DATABASE_URL with both nodes`)

  const watching = watchReadiness(baseUrl)
  const load = Array.from({ length: workers }, () => worker(baseUrl))
  await sleep(loadBefore)

  // The kill: the primary's Patroni and PostgreSQL, at once, as a machine dies.
  const primary = nodes.find((n) => n.pgPort === leader.port)!
  const db = new pg.Client({ connectionString: `postgres://postgres:pg@127.0.0.1:${leader.port}/das` })
  await db.connect()
  const cursorBefore = BigInt((await db.query("SELECT block_number::text AS b FROM chain_cursor")).rows[0]?.b ?? "0")
  await db.end()
  const ackBefore = acknowledged.length
  const pids = processesOf(primary)
  const killedAt = Date.now()
  for (const pid of pids) {
    try {
      process.kill(pid, "SIGKILL")
    } catch {
      // gone already
    }
  }
  log(`KILL -9 ${primary.name} (Patroni and PostgreSQL: ${pids.length} processes); ${ackBefore} operations acknowledged so far`)

  const survivor = nodes.find((n) => n !== primary)!
  const promoted = await until("the standby's promotion", 90, async () =>
    (await members([survivor])).find((m) => m.name === survivor.name && m.role === "leader" && m.state === "running"))
  const promotedAt = Date.now()
  log(`${promoted.name} promoted ${((promotedAt - killedAt) / 1000).toFixed(1)} s after the kill`)
  const firstWrite = await until("a write after the switch", 90, async () => writeSuccesses.find((t) => t > promotedAt))
  log(`first write through the service ${((firstWrite - killedAt) / 1000).toFixed(1)} s after the kill`)
  await sleep(loadAfter)
  stopLoad = true
  await Promise.all(load)
  stopWatching = true
  await watching

  // ------------------------------------------------------------------------------------------
  // The checks, on the new primary.
  const check = new pg.Client({ connectionString: `postgres://postgres:pg@127.0.0.1:${survivor.pgPort}/das` })
  await check.connect()
  cleanup.push(() => check.end())
  const failures: Array<string> = []
  const ids = acknowledged.map((a) => a.userOpId)
  log(`load stopped: ${ids.length} operations acknowledged; waiting for every one to settle`)
  await until("every acknowledged operation settled", 120, async () => {
    const { rows } = await check.query(
      "SELECT count(*)::int AS n FROM user_operations WHERE id = ANY($1) AND status = 'submitted'",
      [ids]
    )
    return rows[0].n === 0 ? true : undefined
  }).catch((e) => failures.push(String(e)))

  const ops = await check.query(
    `SELECT o.id, o.status, (SELECT count(*)::int FROM audit_entries e WHERE e.operation_id = o.id) AS entries
     FROM user_operations o WHERE o.id = ANY($1)`,
    [ids]
  )
  const found = new Map<string, { status: string; entries: number }>(ops.rows.map((r) => [r.id, r]))
  const lost = ids.filter((id) => !found.has(id))
  const notIncluded = [...found].filter(([, r]) => r.status !== "included")
  const wrongEntries = [...found].filter(([, r]) => r.entries !== 1)
  const twice = await check.query("SELECT user_op_hash FROM user_operations GROUP BY user_op_hash HAVING count(*) > 1")
  const unacknowledged = await check.query("SELECT count(*)::int AS n FROM user_operations WHERE NOT (id = ANY($1))", [ids])
  if (new Set(ids).size !== ids.length) failures.push("one operation acknowledged under two ids")
  if (lost.length > 0) failures.push(`${lost.length} acknowledged operation(s) lost: ${lost.slice(0, 5).join(", ")}`)
  if (twice.rows.length > 0) failures.push(`${twice.rows.length} operation(s) stored twice`)
  if (notIncluded.length > 0) failures.push(`${notIncluded.length} acknowledged operation(s) not included: ${JSON.stringify(notIncluded.slice(0, 3))}`)
  if (wrongEntries.length > 0) failures.push(`${wrongEntries.length} operation(s) without exactly one audit entry`)

  // The follower went on from its cursor to the head; anchoring resumed and caught up.
  const head = await realFetch(network.rpcUrl, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_blockNumber", params: [] })
  }).then(async (r) => BigInt(((await r.json()) as { result: string }).result))
  const cursorAfter = await until("the follower at the head", 60, async () => {
    const b = BigInt((await check.query("SELECT block_number::text AS b FROM chain_cursor")).rows[0]?.b ?? "0")
    return b >= head ? b : undefined
  }).catch((e) => {
    failures.push(String(e))
    return 0n
  })
  if (cursorAfter <= cursorBefore) failures.push(`the follower did not move on (cursor ${cursorBefore} → ${cursorAfter})`)
  const anchoredAfter = await until("an anchor after the switch, every head anchored", 60, async () => {
    const { rows } = await check.query(
      `SELECT (SELECT count(*)::int FROM audit_anchors WHERE anchored_at > to_timestamp($1 / 1000.0)) AS anchors,
              (SELECT count(*)::int FROM audit_heads h LEFT JOIN audit_anchor_state s ON s.account_id = h.account_id
               WHERE s.length IS DISTINCT FROM h.length) AS behind`,
      [killedAt]
    )
    return rows[0].anchors > 0 && rows[0].behind === 0 ? rows[0].anchors as number : undefined
  }).catch((e) => {
    failures.push(String(e))
    return 0
  })

  const verify = spawnSync(process.execPath, ["--import", "tsx", path.join(root, "scripts/audit-verify.ts"), "--all"], {
    cwd: root,
    env: { ...process.env, DATABASE_URL: databaseUrl },
    encoding: "utf8"
  })
  const verified = verify.stdout.split("\n").filter((l) => l.includes(": ok,")).length
  if (verify.status !== 0) failures.push(`audit:verify --all exited ${verify.status}: ${verify.stdout.slice(-500)}${verify.stderr.slice(-500)}`)

  // The same service process all along, on the new primary by itself.
  const serviceOutput = fs.readFileSync(serviceLog, "utf8")
  if (service.exitCode !== null) failures.push(`the service exited (${service.exitCode})`)
  if (!serviceOutput.includes(`database: using 127.0.0.1:${survivor.pgPort}`)) failures.push("the service never said it uses the new primary")
  const bad = [...statuses].filter(([s]) => s !== "503" && !/^2\d\d$/.test(s) && !/^4\d\d$/.test(s))
  if (bad.length > 0) failures.push(`answers other than 2xx, 4xx and 503: ${JSON.stringify(bad)}`)

  // Figures.
  let longestGap = 0
  const sorted = [...writeSuccesses].sort((a, b) => a - b)
  for (let i = 1; i < sorted.length; i++) longestGap = Math.max(longestGap, sorted[i]! - sorted[i - 1]!)
  const notReady = readiness.filter((r) => !r.ok)
  const notReadyFor = notReady.length === 0 ? 0 : notReady[notReady.length - 1]!.at - notReady[0]!.at + 100
  const figures = {
    workers,
    acknowledged: ids.length,
    acknowledgedBeforeKill: ackBefore,
    lost: lost.length,
    storedTwice: twice.rows.length,
    storedNotAcknowledged: unacknowledged.rows[0].n as number,
    promotionSeconds: (promotedAt - killedAt) / 1000,
    firstWriteAfterKillSeconds: (firstWrite - killedAt) / 1000,
    longestWithoutWriteSeconds: longestGap / 1000,
    readinessNot200Seconds: notReadyFor / 1000,
    answers: Object.fromEntries([...statuses].sort()),
    followerCursor: { beforeKill: Number(cursorBefore), after: Number(cursorAfter), head: Number(head) },
    anchorsAfterKill: anchoredAfter,
    auditChainsVerified: verified
  }
  console.log(`FAILOVER_RESULT ${JSON.stringify(figures)}`)
  console.log([
    "",
    "Failover under relay load (Patroni, PostgreSQL 15, synchronous standby; kill -9 of the primary)",
    `  operations acknowledged         ${figures.acknowledged} (${ackBefore} before the kill), ${workers} workers`,
    `  acknowledged and lost           ${figures.lost}   (stored twice: ${figures.storedTwice})`,
    `  stored, answer never received   ${figures.storedNotAcknowledged}   (each exactly once; the client's retry would find it)`,
    `  standby promoted after          ${figures.promotionSeconds.toFixed(1)} s   (Patroni ttl 10 s)`,
    `  first write after the kill      ${figures.firstWriteAfterKillSeconds.toFixed(1)} s`,
    `  longest time without a write    ${figures.longestWithoutWriteSeconds.toFixed(1)} s`,
    `  readiness not 200 for           ${figures.readinessNot200Seconds.toFixed(1)} s`,
    `  answers                         ${JSON.stringify(figures.answers)}`,
    `  follower cursor                 ${cursorBefore} at the kill → ${cursorAfter} (head ${head})`,
    `  anchors after the kill          ${anchoredAfter}; audit chains verified: ${verified}`,
    ""
  ].join("\n"))
  if (failures.length > 0) {
    console.log(`FAILED:\n  - ${failures.join("\n  - ")}\n(logs in ${dir})`)
    return 1
  }
  console.log("OK: nothing acknowledged was lost; 503 (never 500) during the switch; the service, follower and anchoring resumed by themselves")
  return 0
}

const stopAll = async () => {
  for (const f of cleanup.reverse()) await Promise.resolve(f()).catch(() => undefined)
  // The service first (it drains), then Patroni (stops its PostgreSQL), then etcd.
  for (const child of [...children].reverse()) {
    if (child.exitCode !== null || child.pid === undefined) continue
    try {
      process.kill(-child.pid, "SIGTERM")
    } catch {
      // gone
    }
  }
  await sleep(3000)
  // What is left (a Patroni whose PostgreSQL was slow to stop): killed, by the pids this run started.
  for (const name of ["node1", "node2"]) {
    const pidFile = path.join(dir, `${name}.patroni.pid`)
    const dataPid = path.join(dir, name === "node1" ? "pg1" : "pg2", "postmaster.pid")
    for (const file of [pidFile, dataPid]) {
      if (!fs.existsSync(file)) continue
      const pid = Number(fs.readFileSync(file, "utf8").split("\n")[0])
      try {
        process.kill(pid, "SIGKILL")
      } catch {
        // gone
      }
    }
  }
  for (const child of children) {
    if (child.exitCode === null && child.pid !== undefined) {
      try {
        process.kill(-child.pid, "SIGKILL")
      } catch {
        // gone
      }
    }
  }
  if (process.env.KEEP_LOGS !== "1") fs.rmSync(dir, { recursive: true, force: true })
}

process.once("SIGINT", () => void stopAll().then(() => process.exit(130)))
process.once("SIGTERM", () => void stopAll().then(() => process.exit(143)))
const code = await run().catch((e) => {
  console.error(`failover scenario: ${e instanceof Error ? e.stack : String(e)}\n(logs in ${dir})`)
  return 2
})
if (code !== 0) process.env.KEEP_LOGS = "1"
await stopAll()
process.exit(code)
