/**
 * `/metrics` (src/platform/Metrics.ts) on the service as its own process, scraped after real
 * traffic: requests per route and status, a rate-limit refusal, a relayed operation, webhook
 * attempts to a real receiver (failed, then delivered), and the gauges read at scrape time
 * (follower lag, relay and webhook queues, unanchored entries, pool usage). The listener is its
 * own (never the API's port), and what it shows holds no per-user data.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { makeClient } from "../../src/client/Client.ts"
import { signIn } from "../../src/client/signIn.ts"
import { killGroup, replicaEnv, startService, stopService } from "../support/ServiceProcess.ts"
import { createDatabase, testDatabaseName } from "../support/TestDatabase.ts"
import { settle, signBuild } from "../userops/helpers.ts"
import { startReceiver } from "../notifications/webhooks/Receiver.ts"

/** The samples of a Prometheus text exposition: `name{labels}` → value. */
const parse = (text: string): Map<string, number> => {
  const samples = new Map<string, number>()
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue
    const i = line.lastIndexOf(" ")
    samples.set(line.slice(0, i), Number(line.slice(i + 1)))
  }
  return samples
}

const sample = (samples: Map<string, number>, name: string, labels: Record<string, string> = {}) => {
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`)
  let total: number | undefined
  for (const [key, value] of samples) {
    const brace = key.indexOf("{")
    const base = brace < 0 ? key : key.slice(0, brace)
    if (base !== name) continue
    if (!wanted.every((w) => key.includes(w))) continue
    total = (total ?? 0) + value
  }
  return total
}

describe("metrics", () => {
  it.live("after real traffic the scrape shows it: requests, refusals, relay, webhooks, queues, lag, pool", () =>
    Effect.gen(function*() {
      const database = testDatabaseName()
      yield* createDatabase(database)
      const receiver = yield* Effect.promise(startReceiver)
      receiver.answer = (_r, n) => (n === 1 ? 500 : 200)
      const service = yield* startService(replicaEnv(database, {
        RATE_LIMIT_NONCE_PER_MINUTE: "3",
        WEBHOOKS_ALLOW_LOOPBACK: "true",
        WEBHOOKS_POLL_INTERVAL: "50 millis",
        WEBHOOKS_BACKOFF_BASE: "50 millis",
        WEBHOOKS_BACKOFF_MAX: "100 millis",
        SPONSOR_QUOTA_OPS: "100"
      }))
      try {
        const metricsLine = service.output().split("\n").find((l) => l.includes("metrics: http://"))
        const metricsUrl = /metrics: (http:\/\/\S+?)"/.exec(metricsLine ?? "")?.[1]
        assert.isDefined(metricsUrl, service.output())
        assert.notInclude(metricsUrl!, new URL(service.baseUrl).host, "metrics are on a listener of their own")
        const scrape = () =>
          Effect.promise(async () => {
            const res = await fetch(metricsUrl!)
            assert.strictEqual(res.status, 200)
            assert.match(res.headers.get("content-type") ?? "", /^text\/plain; version=0\.0\.4/)
            return res.text()
          })
        // The API's port does not serve them.
        const onApi = yield* Effect.promise(() => fetch(`${service.baseUrl}/metrics`))
        assert.strictEqual(onApi.status, 404)

        const before = parse(yield* scrape())
        const key = generatePrivateKey()
        const signer = privateKeyToAccount(key)
        const session = yield* signIn(service.baseUrl, signer)
        const api = yield* makeClient({ baseUrl: service.baseUrl, token: session.token })
        const auth = { authorization: `Bearer ${session.token}` }

        // A webhook endpoint: the relayed operation's notification is delivered to it (first try 500).
        const hook = yield* Effect.promise(() =>
          fetch(`${service.baseUrl}/notifications/webhooks`, {
            method: "POST",
            headers: { ...auth, "content-type": "application/json" },
            body: JSON.stringify({ url: receiver.url })
          })
        )
        assert.strictEqual(hook.status, 201)

        for (let i = 0; i < 3; i++) {
          const res = yield* Effect.promise(() => fetch(`${service.baseUrl}/accounts`, { headers: auth }))
          assert.strictEqual(res.status, 200)
        }
        assert.strictEqual((yield* Effect.promise(() => fetch(`${service.baseUrl}/accounts`))).status, 401)
        assert.strictEqual((yield* Effect.promise(() => fetch(`${service.baseUrl}/no/such/route`))).status, 404)
        // Nonces: 3 per minute per address, one spent signing in; the rest are refused.
        for (let i = 0; i < 4; i++) yield* Effect.promise(() => fetch(`${service.baseUrl}/auth/nonce`, { method: "POST" }))

        // A relayed operation (the account's freeze), accepted and settled.
        const build = yield* api.accounts.buildRules({ payload: { intentType: "account_freeze" } })
        const receipt = yield* api.userops.submit({ payload: yield* signBuild(build, key) })
        yield* settle(api, receipt.userOpId)
        yield* Effect.promise(() => receiver.waitFor(() => receiver.received.length >= 2, 20_000))

        const text = yield* scrape()
        const after = parse(text)
        const moved = (name: string, labels: Record<string, string>) =>
          (sample(after, name, labels) ?? 0) - (sample(before, name, labels) ?? 0)

        const requests = "das_http_server_request_duration_seconds_count"
        assert.isAtLeast(moved(requests, { method: "GET", route: "/accounts", status: "200" }), 3)
        assert.isAtLeast(moved(requests, { method: "GET", route: "/accounts", status: "401" }), 1)
        assert.isAtLeast(moved(requests, { method: "GET", route: "unmatched", status: "404" }), 1)
        assert.isAtLeast(moved(requests, { method: "POST", route: "/auth/nonce", status: "429" }), 1)
        assert.isAtLeast(moved(requests, { method: "POST", route: "/userops", status: "202" }), 1)
        assert.isAbove(sample(after, "das_http_server_request_duration_seconds_sum", { route: "/accounts" }) ?? 0, 0)
        assert.isAtLeast(moved("das_rate_limit_refusals_total", { bucket: "nonce" }), 1)
        assert.strictEqual(moved("das_relay_submissions_total", { outcome: "accepted" }), 1)
        assert.strictEqual(moved("das_webhook_attempts_total", { result: "failed" }), 1)
        assert.isAtLeast(moved("das_webhook_attempts_total", { result: "delivered" }), 1)
        assert.strictEqual(sample(after, "das_relay_pending_operations"), 0)
        assert.isDefined(sample(after, "das_webhook_queue_deliveries", { state: "pending" }))
        assert.isDefined(sample(after, "das_follower_lag_blocks"))
        assert.isDefined(sample(after, "das_follower_lag_seconds"))
        // Anchoring is off here: the entries the freeze wrote wait for an anchor.
        assert.isAtLeast(sample(after, "das_audit_unanchored_entries") ?? 0, 1)
        // Sponsorship: the freeze was sponsored (never counted against a quota: it reduces risk), so
        // the paymaster's deposit paid for it.
        assert.isDefined(sample(after, "das_sponsorship_period_operations"))
        assert.isBelow(sample(after, "das_paymaster_deposit_wei") ?? 0, sample(before, "das_paymaster_deposit_wei") ?? 0)
        assert.isAtLeast(sample(after, "das_db_connections") ?? 0, 1)
        assert.strictEqual(sample(after, "das_db_pool_max_connections"), 10)
        assert.isDefined(sample(after, "das_notification_stream_subscribers"))
        assert.isDefined(sample(after, "process_cpu_seconds_total"))

        // No per-user data: no address, account, token or operation id.
        for (const secret of [signer.address, signer.address.toLowerCase(), session.accounts[0]!.id, session.token, receipt.userOpId]) {
          assert.notInclude(text, secret)
        }
        assert.strictEqual(yield* stopService(service.child), 0)
      } finally {
        if (service.child.exitCode === null) killGroup(service.child)
        yield* Effect.promise(() => receiver.close())
      }
    }), 180_000)
})
