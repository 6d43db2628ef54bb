/**
 * A fuzz run over every endpoint of the `HttpApi` (cases derived from its own Schemas,
 * `cases.ts`), with a valid session, against the real stack: Node server, router,
 * HttpApi, real PostgreSQL, the run's chain, loopback stand-ins for the public upstreams.
 *
 * Asserted: no answer is a 5xx, and every error answer is the contract's envelope.
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as http from "node:http"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { signIn } from "../../src/client/signIn.ts"
import { startFakeUpstream as startLaunchpad } from "../launchpad/FakeUpstream.ts"
import { agentFixture, startFakeUpstream as startMarketplace } from "../marketplace/FakeUpstream.ts"
import { TestServer, TestServerLive } from "../support/TestServer.ts"
import { casesFor, endpointModels, type FuzzCase, prng } from "./cases.ts"
import { isEnvelope } from "./support.ts"

const PER_ENDPOINT = 80
const SEED = 20261123

/** The server over loopback stand-ins of the marketplace and launchpad upstreams. */
const FuzzServer = Layer.unwrap(
  Effect.gen(function*() {
    const launchpad = yield* Effect.acquireRelease(Effect.promise(() => startLaunchpad()), (u) => Effect.promise(() => u.close()))
    const marketplace = yield* Effect.acquireRelease(
      Effect.promise(() => startMarketplace()),
      (u) => Effect.promise(() => u.close())
    )
    marketplace.state.agents = Array.from({ length: 30 }, (_, i) => agentFixture(i + 1, 100_000 - i * 1000))
    return TestServerLive({
      config: {
        LAUNCHPAD_API_URL: launchpad.url,
        LAUNCHPAD_PRICES_URL: launchpad.url,
        MARKETPLACE_API_URL: marketplace.url,
        // Builds that pass validation go to the chain: the per-signer limit bounds that work.
        RATE_LIMIT_BUILDS_PER_MINUTE: "0",
        DELEGATION_ENABLE_WAIT: "1 second"
      }
    })
  })
)

interface Answer {
  readonly status: number
  readonly contentType: string | undefined
  readonly body: string
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 8 })

const send = (baseUrl: string, c: FuzzCase) =>
  new Promise<Answer>((resolve) => {
    // Node's client frames an OPTIONS or DELETE body with no Content-Length: always declare it.
    const headers = c.body === undefined ? c.headers : { ...c.headers, "content-length": String(Buffer.byteLength(c.body)) }
    const req = http.request(`${baseUrl}${c.url}`, { method: c.method, headers, agent }, (res) => {
      // The live stats stream never ends: its status and headers are the answer.
      if (res.statusCode === 200 && res.headers["content-type"]?.startsWith("text/event-stream")) {
        req.destroy()
        return resolve({ status: 200, contentType: res.headers["content-type"], body: "" })
      }
      const chunks: Array<Buffer> = []
      res.on("data", (d) => chunks.push(d))
      res.on("end", () =>
        resolve({
          status: res.statusCode ?? 0,
          contentType: res.headers["content-type"],
          body: Buffer.concat(chunks).toString("utf8")
        }))
      res.on("error", (e) => resolve({ status: 0, contentType: undefined, body: `no answer: ${e.message}` }))
    })
    // A dropped connection is a failure of the service, reported with its case below.
    req.on("error", (e) => resolve({ status: 0, contentType: undefined, body: `no answer: ${e.message}` }))
    req.setTimeout(30_000, () => req.destroy(new Error(`no answer: ${c.method} ${c.url}`)))
    req.end(c.body)
  })

layer(FuzzServer, { excludeTestServices: true, timeout: 120_000 })("fuzz", (it) => {
  it.effect("every endpoint, valid and hostile input: no 5xx, every error an envelope", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const session = yield* signIn(baseUrl, privateKeyToAccount(generatePrivateKey()))
      // Log-out revokes its token: it gets a session of its own, so the others keep theirs.
      const logout = yield* signIn(baseUrl, privateKeyToAccount(generatePrivateKey()))
      const models = yield* endpointModels(16, SEED)
      const rnd = prng(SEED)
      const cases = models.flatMap((m) =>
        casesFor(m, PER_ENDPOINT, rnd, m.endpoint.method === "DELETE" && m.endpoint.path === "/auth/session" ? logout.token : session.token)
      )
      assert.isAtLeast(cases.length, 3000)
      // Every endpoint got generated (Schema-derived) valid input where it takes any.
      for (const m of models) {
        if (m.hasBody) assert.isAbove(m.bodies.length, 0, `no body generated for ${m.endpoint.method} ${m.endpoint.path}`)
      }

      const started = Date.now()
      const answers = yield* Effect.forEach(
        cases,
        (c) => Effect.promise(() => send(baseUrl, c)).pipe(Effect.map((a) => ({ c, a }))),
        { concurrency: 8 }
      )
      const seconds = (Date.now() - started) / 1000

      const serverErrors = answers.filter(({ a }) => a.status >= 500 || a.status === 0)
      const notEnvelopes = answers.filter(({ c, a }) =>
        a.status >= 400 && !(c.method === "HEAD" && a.body === "") && !isEnvelopeText(a.body)
      )
      const byStatus = new Map<number, number>()
      for (const { a } of answers) byStatus.set(a.status, (byStatus.get(a.status) ?? 0) + 1)
      console.log(
        `fuzz: ${answers.length} requests in ${seconds.toFixed(1)} s; statuses`,
        Object.fromEntries([...byStatus].sort((x, y) => x[0] - y[0]))
      )
      const show = (xs: typeof answers) =>
        xs.slice(0, 10).map(({ c, a }) => `${a.status} ${c.method} ${c.url} ${c.body?.slice(0, 120) ?? ""} → ${a.body.slice(0, 200)}`)
      assert.deepStrictEqual(show(serverErrors), [], `${serverErrors.length} answers were 5xx`)
      assert.deepStrictEqual(show(notEnvelopes), [], `${notEnvelopes.length} error answers were not envelopes`)
      // NUL bytes and unpaired surrogates are refused by the wire Schemas, never by PostgreSQL
      // (the edge's SQL-error fallback answers "cannot be stored": nothing may reach it).
      const reachedDatabase = answers.filter(({ a }) => a.body.includes("cannot be stored"))
      assert.deepStrictEqual(show(reachedDatabase), [], "unstorable input got past the Schemas")
      // Both sides were exercised: plenty of successes and plenty of refusals.
      assert.isAbove(answers.filter(({ a }) => a.status < 300).length, 200)
      assert.isAbove(answers.filter(({ a }) => a.status === 400).length, 500)
    }), { timeout: 300_000 }) // every endpoint × PER_ENDPOINT cases: grows with the API (valid faucet cases mint on chain)
})

const isEnvelopeText = (text: string) => {
  try {
    return isEnvelope(JSON.parse(text))
  } catch {
    return false
  }
}
