/**
 * The API reference teaches and stays true: every operation of `/openapi.json` has a summary, a
 * description and an example whose request and answer fit the operation's schemas; every example
 * is sent again to a real service on the local chain (the story of `scenario.ts`; the marketplace's
 * and the launchpad's upstreams are the loopback servers their own tests run) and must get the
 * recorded status and an answer of the recorded shape.
 * `REFERENCE_RECORD=1` (npm run reference:record) writes the examples from this run instead.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Context, Duration, Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { OpenApi } from "effect/http-api"
import { Anchor } from "../../src/anchor/Anchor.ts"
import { Api } from "../../src/Api.ts"
import { TOOL_NAMES } from "../../src/mcp/Tools.ts"
import { operationDocs } from "../../src/reference/index.ts"
import { MCP_TOOLS } from "../../src/reference/mcp.ts"
import type { OperationExample, ReferenceExamples } from "../../src/reference/Reference.ts"
import { TestServer, TestServerLive } from "../support/TestServer.ts"
import { type FakeUpstream as LaunchpadUpstream, fakeUpstream as launchpadUpstream } from "../launchpad/FakeUpstream.ts"
import { fakeUpstream as marketplaceUpstream, type FakeUpstream as MarketplaceUpstream, wallet } from "../marketplace/FakeUpstream.ts"
import { decodesWith, operations } from "./contract.ts"
import { type Bindings, type Ctx, send, steps } from "./scenario.ts"

const examplesFile = new URL("../../src/reference/examples.json", import.meta.url)
const recording = process.env.REFERENCE_RECORD === "1"
const recorded = (): ReferenceExamples => JSON.parse(fs.readFileSync(examplesFile, "utf8"))


/**
 * Replaces every occurrence of a recorded binding's value by this run's (case-insensitive: addresses).
 * Longest values first: a value may contain another (a permission context holds the agent's account).
 */
const rebind = (value: unknown, from: Bindings, to: Bindings): any => {
  if (typeof value === "string") {
    let out = value
    for (const [name, old] of Object.entries(from).sort(([, a], [, b]) => b.length - a.length)) {
      const now = to[name]
      if (now !== undefined && old.length > 0) out = out.replace(new RegExp(old.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"), "gi"), now)
    }
    return out
  }
  if (Array.isArray(value)) return value.map((v) => rebind(v, from, to))
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, rebind(v, from, to)]))
  }
  return value
}

describe("the reference's words", () => {
  it("every operation has a summary, a description (who, what on chain) and an example", () => {
    const ops = operations()
    const examples = recorded().operations
    const missing: Array<string> = []
    for (const id of ops.keys()) {
      const doc = operationDocs[id]
      if (doc === undefined || doc.summary.length < 8 || doc.description.length < 30 || doc.caller.length < 5 || doc.chain.length < 5) {
        missing.push(`${id}: words`)
      }
      if (examples[id] === undefined) missing.push(`${id}: example`)
    }
    assert.deepStrictEqual(missing, [])
    // No words or examples for operations that do not exist (a renamed endpoint).
    assert.deepStrictEqual(Object.keys(operationDocs).filter((id) => !ops.has(id)), [])
    assert.deepStrictEqual(Object.keys(examples).filter((id) => !ops.has(id)), [])
  })

  it("POST /mcp is in the reference: its auth, each tool the server registers, and no operation's words for it", () => {
    const spec = OpenApi.fromApi(Api) as any
    const mcp = spec.paths["/mcp"]?.post
    assert.isDefined(mcp, "/mcp is listed")
    assert.deepStrictEqual(mcp.security, [{ bearer: [] }])
    assert.include(mcp.description, "Authorization: Bearer")
    assert.include(mcp.description, "**Who may call:**")
    for (const name of TOOL_NAMES) assert.include(mcp.description, `\`${name}\``, `tool ${name} is named`)
    assert.deepStrictEqual(MCP_TOOLS.map(([name]) => name), [...TOOL_NAMES], "the reference's tools are the server's, in its order")
    assert.isDefined(spec.tags.find((t: { name: string }) => t.name === "MCP"))
  })

  it("every example's request and answer fit the operation's schemas and declared statuses", () => {
    const ops = operations()
    const bad: Array<string> = []
    for (const [id, example] of Object.entries(recorded().operations)) {
      const op = ops.get(id)!
      if (example.request.body !== undefined) {
        const why = decodesWith(op.payloads, example.request.body)
        if (why !== undefined) bad.push(`${id} request: ${why}`)
      }
      const schemas = op.answers.get(example.response.status)
      if (op.stream) continue // a stream's head only (its events are described, not recorded)
      if (schemas === undefined) bad.push(`${id}: status ${example.response.status} is not declared`)
      else if (example.response.body !== undefined) {
        const why = decodesWith(schemas, example.response.body)
        if (why !== undefined) bad.push(`${id} answer: ${why}`)
      }
    }
    assert.deepStrictEqual(bad, [])
  })

  it("the served document carries them, with the bearer scheme and no 501 on a served operation", () => {
    const spec = OpenApi.fromApi(Api) as any
    assert.deepStrictEqual(spec.components.securitySchemes.bearer.scheme, "bearer")
    const served501: Array<string> = []
    for (const item of Object.values<any>(spec.paths)) {
      for (const op of Object.values<any>(item)) {
        assert.isString(op.summary, op.operationId)
        assert.include(op.description, "**Who may call:**", op.operationId)
        if (op.responses["501"] !== undefined) served501.push(op.operationId)
      }
    }
    // Nothing answers 501: every intent is built or answered with a 400 saying why (issue 27).
    assert.deepStrictEqual(served501, [])
    const build = spec.paths["/delegations/build"].post
    assert.strictEqual(build.requestBody.content["application/json"].example.budgets[0].token.symbol, "USDC")
  })
})

const hookReceiver = Effect.acquireRelease(
  Effect.promise(() =>
    new Promise<http.Server>((resolve) => {
      const server = http.createServer((req, res) => {
        req.resume()
        req.on("end", () => res.writeHead(200).end())
      })
      server.listen(0, "127.0.0.1", () => resolve(server))
    })
  ),
  (server) => Effect.promise(() => new Promise<void>((r) => server.close(() => r())))
)

/** The upstreams of the marketplace and the launchpad: the same loopback servers their own tests run. */
class Upstreams extends Context.Service<Upstreams, { readonly marketplace: MarketplaceUpstream; readonly launchpad: LaunchpadUpstream }>()(
  "test/reference/Upstreams"
) {}

/** The service on the local chain, its marketplace and launchpad pointed at the loopback upstreams (started first). */
const ServiceWithUpstreams = Layer.unwrap(Effect.gen(function*() {
  const { marketplace, launchpad } = yield* Upstreams
  return TestServerLive({
    config: {
      ANCHOR_INTERVAL: "1 seconds",
      WEBHOOKS_ALLOW_LOOPBACK: "true",
      WEBHOOKS_POLL_INTERVAL: "200 millis",
      MARKETPLACE_API_URL: marketplace.url,
      MARKETPLACE_EVALUATOR_WALLET: wallet(0xe7a1),
      LAUNCHPAD_API_URL: launchpad.url,
      LAUNCHPAD_PRICES_URL: launchpad.url
    }
  })
})).pipe(Layer.provideMerge(Layer.effect(Upstreams, Effect.all({ marketplace: marketplaceUpstream, launchpad: launchpadUpstream }))))

layer(ServiceWithUpstreams, {
  timeout: Duration.seconds(180),
  excludeTestServices: true
})("every example, sent to the service", (it) => {
  it.effect("gets the recorded status and an answer of the recorded shape", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const upstreams = yield* Upstreams
      const receiver = yield* hookReceiver
      const anchor = yield* Anchor
      const ops = operations()
      const ctx: Ctx = {
        baseUrl,
        owner: privateKeyToAccount(generatePrivateKey()),
        agent: privateKeyToAccount(generatePrivateKey()),
        panic: privateKeyToAccount(generatePrivateKey()),
        guardian: privateKeyToAccount(generatePrivateKey()),
        tokens: {},
        b: { webhookUrl: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks/das` },
        anchorNow: () => Effect.runPromise(Effect.asVoid(anchor.anchorNow)),
        answers: {},
        marketplace: upstreams.marketplace
      }
      const before = recording ? undefined : recorded()
      const written: Record<string, OperationExample> = {}
      const failures: Array<string> = []
      yield* Effect.promise(async () => {
        for (const step of steps) {
          const op = ops.get(step.op)
          if (op === undefined) throw new Error(`no operation ${step.op}`)
          await step.before?.(ctx)
          const made = await step.request(ctx)
          const example = before?.operations[step.op]
          const request = example === undefined || step.fresh === true
            ? made
            : rebind({ params: example.request.params, query: example.request.query, body: example.request.body }, before!.bindings, ctx.b)
          const answer = await send(ctx, op.method, op.path, step.as, request, op.stream)
          ctx.answers[step.op] = answer.body
          const expected = step.expect === undefined ? answer.status < 300 : answer.status === step.expect
          if (!expected) throw new Error(`${step.op}: ${answer.status} ${JSON.stringify(answer.body)}`)
          if (recording) {
            written[step.op] = {
              request: { as: step.as, ...made },
              response: { status: answer.status, ...(answer.body === undefined ? {} : { body: answer.body }) }
            }
          } else {
            if (example === undefined) failures.push(`${step.op}: no recorded example`)
            else if (answer.status !== example.response.status) {
              failures.push(`${step.op}: ${answer.status} (recorded ${example.response.status}) ${JSON.stringify(answer.body)}`)
            } else if (op.stream) {
              if (!answer.contentType?.startsWith("text/event-stream")) failures.push(`${step.op}: ${answer.contentType}`)
            } else if (answer.body !== undefined) {
              const why = decodesWith(op.answers.get(answer.status) ?? [], answer.body)
              if (why !== undefined) failures.push(`${step.op}: the answer does not fit: ${why}`)
            }
          }
          if (answer.status < 300 && step.learn !== undefined) await step.learn(answer.body, ctx)
        }
      })
      if (recording) {
        const { webhookUrl: _w, ...bindings } = ctx.b
        fs.writeFileSync(examplesFile, `${JSON.stringify({ bindings: { ...bindings, webhookUrl: ctx.b.webhookUrl }, operations: written }, null, 2)}\n`)
      }
      assert.deepStrictEqual(failures, [])
      // The story covers every operation of /openapi.json.
      const covered = new Set(steps.map((s) => s.op))
      assert.deepStrictEqual([...ops.keys()].filter((id) => !covered.has(id)), [])
    }), { timeout: 240_000 })
})
