/**
 * `GET /userops/{id}?wait=` (docs/relay.md, "Waiting for the outcome"): the answer comes when
 * the operation settles, woken by the settlement itself, in this process or another one; a
 * client that goes away frees its place; the time up answers the current state; a malformed
 * `wait` is a 400 naming the field; one signer cannot take every place.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Duration, Effect, Layer, Schedule } from "effect"
import * as http from "node:http"
import WebSocket, { WebSocketServer } from "ws"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { makeClient } from "../../src/client/Client.ts"
import { pollUserOp } from "../../src/client/poll.ts"
import { signIn } from "../../src/client/signIn.ts"
import { testNetwork } from "../support/TestChain.ts"
import pg from "pg"
import { databaseUrl, testDatabaseName } from "../support/TestDatabase.ts"
import { replicaEnv, startService, stopService } from "../support/ServiceProcess.ts"
import { TestServer, TestServerLive } from "../support/TestServer.ts"
import { bundlerProxy } from "./bundlerProxy.ts"
import { signBuild } from "./helpers.ts"

process.env.DO_NOT_TRACK = "1"

/** A service of its own (its config, optionally its bundler behind `bundlerUrl`), released with the scope. */
const service = (config: Record<string, string>, options: {
  readonly bundlerUrl?: string
  readonly rpcUrl?: string
  readonly wsUrl?: string
  readonly database?: { name: string; create?: boolean }
} = {}) =>
  Effect.gen(function*() {
    const context = yield* Layer.build(TestServerLive({
      config,
      chain: {
        ...(options.bundlerUrl === undefined ? {} : { bundlerUrl: options.bundlerUrl }),
        ...(options.rpcUrl === undefined ? {} : { rpcUrl: options.rpcUrl }),
        ...(options.wsUrl === undefined ? {} : { wsUrl: options.wsUrl })
      },
      ...(options.database === undefined ? {} : { database: options.database })
    }))
    return Context.get(context, TestServer)
  })

/** A fresh signer signed in at `baseUrl`, with its account's freeze built and signed. */
const signedFreeze = (baseUrl: string) =>
  Effect.gen(function*() {
    const key = generatePrivateKey()
    const session = yield* signIn(baseUrl, privateKeyToAccount(key))
    const api = yield* makeClient({ baseUrl, token: session.token })
    const build = yield* api.accounts.buildRules({ payload: { intentType: "account_freeze" } })
    return { token: session.token, api, build, signed: yield* signBuild(build, key) }
  })

/** Resolves once `ready` holds (checked every 20 ms), or after 30 s (then the test's assertions say what did not happen). */
const until = (ready: () => boolean) =>
  new Promise<void>((resolve) => {
    const started = Date.now()
    const check = () => (ready() || Date.now() - started > 30_000 ? resolve() : setTimeout(check, 20))
    check()
  })

/** A stored operation that nobody can send: submitted while the bundler is down (503), its id from the answer. */
const unsentOperation = (baseUrl: string, proxy: { setMode(mode: "down"): void }) =>
  Effect.gen(function*() {
    const user = yield* signedFreeze(baseUrl)
    proxy.setMode("down")
    const error = yield* user.api.userops.submit({ payload: user.signed }).pipe(Effect.flip)
    assert.strictEqual(error._tag, "ServiceUnavailable")
    const userOpId = (error as { details?: { userOpId?: string } }).details?.userOpId as string
    assert.isString(userOpId)
    return { ...user, userOpId }
  })

/** One raw GET (a client that may go away): its answer, or `abort` to drop the connection. */
const rawGet = (baseUrl: string, path: string, token: string) => {
  let req: http.ClientRequest | undefined
  const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
    req = http.get(`${baseUrl}${path}`, { headers: { authorization: `Bearer ${token}` } }, (res) => {
      let body = ""
      res.setEncoding("utf8")
      res.on("data", (c: string) => (body += c))
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }))
    })
    req.on("error", reject)
  })
  answer.catch(() => undefined)
  return { answer, abort: () => req?.destroy() }
}

/**
 * A loopback JSON-RPC proxy in front of the run's anvil that counts `eth_getLogs` by block hash
 * (EIP-234) and, when `refuseByHash`, answers them with an error (a node behind the one that
 * pushed the head), forwarding everything else; it counts the head reads (`eth_blockNumber`) it
 * has answered.
 */
const rpcProxy = (target: string, refuseByHash: boolean) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<{ url: string; byHash: () => number; ranged: () => number; headsAnswered: () => number; server: http.Server }>((resolve) => {
        let byHash = 0
        let ranged = 0
        let headsAnswered = 0
        const server = http.createServer((req, res) => {
          let body = ""
          req.on("data", (c: Buffer) => (body += c.toString("utf8")))
          req.on("end", async () => {
            const msg = JSON.parse(body) as { id: number; method: string; params?: Array<{ blockHash?: string }> }
            if (msg.method === "eth_getLogs" && msg.params?.[0]?.blockHash === undefined) ranged++
            if (msg.method === "eth_getLogs" && msg.params?.[0]?.blockHash !== undefined) {
              byHash++
              if (refuseByHash) {
                res.setHeader("content-type", "application/json")
                res.end(JSON.stringify({ jsonrpc: "2.0", id: msg.id, error: { code: -32000, message: "unknown block" } }))
                return
              }
            }
            const upstream = await fetch(target, { method: "POST", headers: { "content-type": "application/json" }, body })
            res.setHeader("content-type", "application/json")
            res.end(await upstream.text())
            if (msg.method === "eth_blockNumber") headsAnswered++
          })
        })
        server.listen(0, "127.0.0.1", () =>
          resolve({
            url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
            byHash: () => byHash,
            ranged: () => ranged,
            headsAnswered: () => headsAnswered,
            server
          }))
      })
    ),
    ({ server }) => Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve())))
  )

/**
 * A loopback WebSocket proxy in front of the run's anvil (new heads): it says when a
 * subscription has been confirmed to the service (`onSubscribed`), which the test waits for
 * instead of guessing how long the socket takes on a loaded machine.
 */
const wsProxy = (target: string, onSubscribed: () => void) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<{ url: string; server: WebSocketServer }>((resolve) => {
        const server: WebSocketServer = new WebSocketServer({ host: "127.0.0.1", port: 0 }, () =>
          resolve({ url: `ws://127.0.0.1:${(server.address() as { port: number }).port}`, server }))
        server.on("connection", (client: WebSocket) => {
          const upstream = new WebSocket(target)
          const early: Array<string> = []
          client.on("message", (data: WebSocket.RawData) => (upstream.readyState === WebSocket.OPEN ? upstream.send(String(data)) : early.push(String(data))))
          upstream.on("open", () => early.splice(0).forEach((m) => upstream.send(m)))
          upstream.on("message", (data) => {
            const text = String(data)
            client.send(text)
            const m = JSON.parse(text) as { id?: number; result?: unknown }
            if (m.id !== undefined && typeof m.result === "string") onSubscribed()
          })
          const closeBoth = () => (client.terminate(), upstream.terminate())
          client.on("close", closeBoth).on("error", closeBoth)
          upstream.on("close", closeBoth).on("error", closeBoth)
        })
      })
    ),
    ({ server }) =>
      Effect.promise(() =>
        new Promise<void>((resolve) => {
          for (const c of server.clients) c.terminate()
          server.close(() => resolve())
        })
      )
  )

/** The `das_userop_waiters` gauge of a service (its metrics listener). */
const waiters = (metricsUrl: string) =>
  Effect.promise(async () => {
    const text = await (await fetch(`${metricsUrl}`)).text()
    const line = text.split("\n").find((l) => l.startsWith("das_userop_waiters "))
    return line === undefined ? -1 : Number(line.split(" ")[1])
  })

const eventually = <A>(what: string, effect: Effect.Effect<A>, check: (a: A) => boolean) =>
  effect.pipe(
    Effect.flatMap((a) => (check(a) ? Effect.succeed(a) : Effect.fail(`not yet: ${what}`))),
    Effect.retry(Schedule.spaced(Duration.millis(50))),
    Effect.timeoutOrElse({ duration: Duration.seconds(90), orElse: () => Effect.die(new Error(`timed out waiting for ${what}`)) })
  )

/**
 * Waits (`wait=30s`, again while it is still submitted) until the operation settles, for at most
 * 3 minutes: where the claim is which read settled it (a pushed head, not the hourly poll), not
 * how soon; at load 40 inclusion alone took longer than one 30 s wait.
 */
const settledWithin3Minutes = (api: { readonly userops: { readonly get: (req: { params: { userOpId: string }; query: { wait: string } }) => Effect.Effect<{ readonly status: string }, unknown> } }, userOpId: string) =>
  Effect.gen(function*() {
    const deadline = Date.now() + 180_000
    let receipt = yield* api.userops.get({ params: { userOpId }, query: { wait: "30s" } })
    while (receipt.status === "submitted" && Date.now() < deadline) {
      receipt = yield* api.userops.get({ params: { userOpId }, query: { wait: "30s" } })
    }
    return receipt
  })

/**
 * The time a test may take: a service of its own started (15-20 s at load 35, beside 4 CPU
 * burners), a service process up to its own bound (ServiceProcess.ts, 300 s). The bounds that
 * matter are the waits' own (`wait=30s`, "woken before the end of the wait"); a test bound below
 * the starts ended tests that were only slow.
 */
const IN_PROCESS = 180_000
const WITH_PROCESS = 420_000

describe("GET /userops/{id}?wait=", () => {
  it.live("answers the outcome as soon as it settles; pollUserOp waits the same way", () =>
    Effect.gen(function*() {
      // Nothing settles it but the long-poll's own wake-up: no reconciler, no follower.
      const s = yield* service({ RELAY_RECONCILE_INTERVAL: "1 hour", FOLLOWER_INTERVAL: "0 seconds" })
      const user = yield* signedFreeze(s.baseUrl)
      const submitted = yield* user.api.userops.submit({ payload: user.signed })
      assert.strictEqual(submitted.status, "submitted")
      const started = Date.now()
      const receipt = yield* user.api.userops.get({ params: { userOpId: submitted.userOpId }, query: { wait: "30s" } })
      assert.strictEqual(receipt.status, "included")
      assert.strictEqual(receipt.outcome, "mined")
      assert.isString(receipt.auditEventId)
      // Woken, not timed out.
      assert.isBelow(Date.now() - started, 25_000)
      // The typed client's polling: one try is enough when the service waits (4 s between tries otherwise).
      let tries = 0
      const polled = yield* pollUserOp(user.api, submitted.userOpId, { onReceipt: () => tries++ })
      assert.strictEqual(polled.status, "included")
      assert.strictEqual(tries, 1)
      assert.strictEqual(yield* waiters(s.metricsUrl), 0)
    }).pipe(Effect.scoped), IN_PROCESS)

  it.live("a settlement made in this process answers its waiter itself, after its commit, without the NOTIFY", () =>
    Effect.gen(function*() {
      const database = testDatabaseName()
      // Only this process's chain watcher settles (no reconciler, no follower).
      const s = yield* service({ RELAY_RECONCILE_INTERVAL: "1 hour", FOLLOWER_INTERVAL: "0 seconds" }, { database: { name: database } })
      // The cross-process announcement is switched off: the waiter can only be woken in-process.
      const db = yield* Effect.acquireRelease(
        Effect.promise(async () => {
          const c = new pg.Client({ connectionString: databaseUrl(database) })
          await c.connect()
          return c
        }),
        (c) => Effect.promise(() => c.end())
      )
      yield* Effect.promise(() => db.query("ALTER TABLE user_operations DISABLE TRIGGER user_operations_settled"))
      const user = yield* signedFreeze(s.baseUrl)
      const submitted = yield* user.api.userops.submit({ payload: user.signed })
      const started = Date.now()
      const receipt = yield* user.api.userops.get({ params: { userOpId: submitted.userOpId }, query: { wait: "30s" } })
      assert.strictEqual(receipt.status, "included")
      assert.isBelow(Date.now() - started, 20_000, "woken in-process, not by the end of the wait")
      // What it answered is committed: another connection reads the same settlement.
      const { rows } = yield* Effect.promise(() =>
        db.query<{ status: string; audit_event_id: string | null; transaction_hash: string | null }>(
          "SELECT status, audit_event_id, transaction_hash FROM user_operations WHERE id = $1",
          [submitted.userOpId]
        )
      )
      assert.strictEqual(rows[0]?.status, "included")
      assert.isString(receipt.auditEventId)
      assert.strictEqual(rows[0]?.audit_event_id, receipt.auditEventId)
      assert.strictEqual(rows[0]?.transaction_hash, receipt.transactionHash)
      assert.strictEqual(yield* waiters(s.metricsUrl), 0)
    }).pipe(Effect.scoped), IN_PROCESS)

  it.live("new heads pushed by the node wake the watcher: settled at once although it would poll once an hour", () =>
    Effect.gen(function*() {
      // The run's anvil pushes new heads (its wsUrl); without them this watcher reads the chain
      // hourly, and the bundler never gives a receipt: only a pushed head can settle it in time.
      const proxy = yield* bundlerProxy(testNetwork().bundlerUrl)
      const s = yield* service({ RELAY_RECONCILE_INTERVAL: "1 hour", FOLLOWER_INTERVAL: "0 seconds", USEROPS_WATCH_INTERVAL: "1 hour" }, {
        bundlerUrl: proxy.url
      })
      const op = yield* unsentOperation(s.baseUrl, proxy)
      proxy.setMode("receipt-null")
      const started = Date.now()
      // The GET sends it (its first read finds it unsent), then waits; the block comes ~100 ms later.
      // Nothing but a pushed head settles it before the hourly poll (the bundler gives no receipt).
      const receipt = yield* settledWithin3Minutes(op.api, op.userOpId)
      assert.strictEqual(receipt.status, "included")
      assert.isBelow(Date.now() - started, 180_000, "woken by a pushed head, not by the hourly poll")
    }).pipe(Effect.scoped), 2 * IN_PROCESS)

  it.live("a pushed head is read by its hash; a node that cannot answer for that block is read by range instead", () =>
    Effect.gen(function*() {
      for (const refuseByHash of [false, true]) {
        const proxy = yield* bundlerProxy(testNetwork().bundlerUrl)
        const rpc = yield* rpcProxy(testNetwork().rpcUrl, refuseByHash)
        // The head reads answered when the watcher's subscription was confirmed (none yet: undefined).
        let subscribedAt: number | undefined
        const heads = yield* wsProxy(testNetwork().wsUrl!, () => (subscribedAt ??= rpc.headsAnswered()))
        const s = yield* service({ RELAY_RECONCILE_INTERVAL: "1 hour", FOLLOWER_INTERVAL: "0 seconds", USEROPS_WATCH_INTERVAL: "1 hour" }, {
          bundlerUrl: proxy.url,
          rpcUrl: rpc.url,
          wsUrl: heads.url
        })
        const op = yield* unsentOperation(s.baseUrl, proxy)
        proxy.setMode("receipt-null")
        // The operation reaches the bundler only once the watcher is subscribed to new heads and has
        // read the head after that (its pass on the confirmation): its block is then pushed, and is
        // the one after the last read. Sent before, its block could be mined before the subscription
        // (on a loaded machine the socket is slow) or before that read, and be read by range: the
        // failure this test had at load 25.
        proxy.deferNextSend(op.build.userOpHash, until(() => subscribedAt !== undefined && rpc.headsAnswered() > subscribedAt))
        const receipt = yield* settledWithin3Minutes(op.api, op.userOpId)
        assert.strictEqual(receipt.status, "included", `refuseByHash=${refuseByHash}`)
        assert.isAbove(rpc.byHash(), 0, "the pushed block was asked for by its hash")
      }
    }).pipe(Effect.scoped), 3 * IN_PROCESS)

  it.live("new heads that cannot be pushed (no WebSocket there): the watcher polls, and the waiter is answered all the same", () =>
    Effect.gen(function*() {
      const s = yield* service({ RELAY_RECONCILE_INTERVAL: "1 hour", FOLLOWER_INTERVAL: "0 seconds" }, { wsUrl: "ws://127.0.0.1:1" })
      const user = yield* signedFreeze(s.baseUrl)
      const submitted = yield* user.api.userops.submit({ payload: user.signed })
      const started = Date.now()
      const receipt = yield* user.api.userops.get({ params: { userOpId: submitted.userOpId }, query: { wait: "30s" } })
      assert.strictEqual(receipt.status, "included")
      assert.isBelow(Date.now() - started, 20_000, "settled by the polling watcher, not by the end of the wait")
    }).pipe(Effect.scoped), IN_PROCESS)

  it.live("two processes: the waiter in one is woken by the settlement made in the other", () =>
    Effect.gen(function*() {
      const database = testDatabaseName()
      // A: its bundler unreachable, so the operation is stored unsent; its follower settles it later.
      const proxy = yield* bundlerProxy(testNetwork().bundlerUrl)
      const a = yield* service({ RELAY_RECONCILE_INTERVAL: "1 hour", USEROPS_WATCH_INTERVAL: "0 seconds" }, {
        bundlerUrl: proxy.url,
        database: { name: database }
      })
      const op = yield* unsentOperation(a.baseUrl, proxy)
      // B: its own OS process, unable to settle anything itself (no follower, no reconciler, no
      // chain watching): its waiter can only be woken by A's settlement, through PostgreSQL.
      const b = yield* Effect.acquireRelease(
        startService(replicaEnv(database, {
          RELAY_RECONCILE_INTERVAL: "1 hour",
          FOLLOWER_INTERVAL: "0 seconds",
          USEROPS_WATCH_INTERVAL: "0 seconds"
        })),
        (b) => stopService(b.child)
      )
      const started = Date.now()
      // B's GET finds it unsent and sends it to its (working) bundler, then waits; A's follower sees it on chain.
      const waited = rawGet(b.baseUrl, `/userops/${op.userOpId}?wait=30s`, op.token)
      const answer = yield* Effect.promise(() => waited.answer)
      assert.strictEqual(answer.status, 200, answer.body)
      const receipt = JSON.parse(answer.body) as { status: string; outcome: string }
      assert.strictEqual(receipt.status, "included")
      assert.strictEqual(receipt.outcome, "mined")
      assert.isBelow(Date.now() - started, 25_000, "woken by the settlement, not by the end of the wait")
      assert.strictEqual(yield* stopService(b.child), 0, b.output())
    }).pipe(Effect.scoped), WITH_PROCESS)

  it.live("a client that goes away frees its place; many waiters on one operation; the time up answers the current state", () =>
    Effect.gen(function*() {
      const proxy = yield* bundlerProxy(testNetwork().bundlerUrl)
      const s = yield* service({ RELAY_RECONCILE_INTERVAL: "1 hour", USEROPS_WAIT_MAX_PER_SIGNER: "5" }, { bundlerUrl: proxy.url })
      const op = yield* unsentOperation(s.baseUrl, proxy)
      const path = `/userops/${op.userOpId}?wait=30s`
      const five = Array.from({ length: 5 }, () => rawGet(s.baseUrl, path, op.token))
      yield* eventually("five waiters", waiters(s.metricsUrl), (n) => n === 5)
      // The signer's share is taken: a sixth waits nowhere, and says why.
      const sixth = yield* Effect.promise(() => rawGet(s.baseUrl, path, op.token).answer)
      assert.strictEqual(sixth.status, 429, sixth.body)
      assert.include(sixth.body, "maxPerSigner")
      // A plain GET still answers.
      const plain = yield* op.api.userops.get({ params: { userOpId: op.userOpId }, query: {} })
      assert.strictEqual(plain.status, "submitted")
      // Two clients drop their connections: their places are freed at once.
      five[0]!.abort()
      five[1]!.abort()
      yield* eventually("three waiters", waiters(s.metricsUrl), (n) => n === 3)
      for (const w of five.slice(2)) w.abort()
      yield* eventually("no waiter", waiters(s.metricsUrl), (n) => n === 0)
      // The time up: the current state, after waiting.
      const started = Date.now()
      const timedOut = yield* op.api.userops.get({ params: { userOpId: op.userOpId }, query: { wait: "1s" } })
      assert.strictEqual(timedOut.status, "submitted")
      assert.strictEqual(timedOut.outcome, "pending")
      assert.isAtLeast(Date.now() - started, 950)
      assert.strictEqual(yield* waiters(s.metricsUrl), 0)
    }).pipe(Effect.scoped), IN_PROCESS)

  it.live("a malformed wait is a 400 naming the field, and waits for nothing", () =>
    Effect.gen(function*() {
      const proxy = yield* bundlerProxy(testNetwork().bundlerUrl)
      const s = yield* service({ RELAY_RECONCILE_INTERVAL: "1 hour", USEROPS_WAIT_MAX: "1 second" }, { bundlerUrl: proxy.url })
      const op = yield* unsentOperation(s.baseUrl, proxy)
      for (const bad of ["%00", "30%00s", "abc", "-1", "1.5s", "30m", "", "9999999", "1e3", "30%20s"]) {
        const r = yield* Effect.promise(() => rawGet(s.baseUrl, `/userops/${op.userOpId}?wait=${bad}`, op.token).answer)
        assert.strictEqual(r.status, 400, `wait=${bad}: ${r.body}`)
        const body = JSON.parse(r.body) as { error: { code: string; details?: { field?: string } } }
        assert.strictEqual(body.error.details?.field, "wait", r.body)
      }
      // Another signer's operation is a 404 whether or not it waits.
      const other = yield* signIn(s.baseUrl, privateKeyToAccount(generatePrivateKey()))
      const notYours = yield* Effect.promise(() => rawGet(s.baseUrl, `/userops/${op.userOpId}?wait=5s`, other.token).answer)
      assert.strictEqual(notYours.status, 404)
      // A wait above the maximum (here 1 s) is shortened to it, not refused.
      const started = Date.now()
      const long = yield* op.api.userops.get({ params: { userOpId: op.userOpId }, query: { wait: "600s" } })
      assert.strictEqual(long.status, "submitted")
      assert.isAtLeast(Date.now() - started, 950)
      assert.isBelow(Date.now() - started, 20_000)
    }).pipe(Effect.scoped), IN_PROCESS)
})
