/**
 * A chain that hangs fails fast (issue 45 item 4). The service reaches the second chain
 * (31338) through loopback gates in front of its RPC and its bundler (test/support/rpcGate.ts);
 * the test makes both hold every request, as a frozen anvil and Alto do (the connection is
 * taken, no answer ever comes). A build on chain B already under way answers 504 within chain
 * B's own timeout (`CHAIN_31338_RPC_TIMEOUT`, 4 s here; before: 29–30 s, viem's 10 s three
 * times); once the monitor finds chain B degraded (readiness says so), a build there answers
 * 503 at once, with `Retry-After`, naming the chain; chain A is served as before, and fast.
 * Released, chain B is found back and served again.
 */
import { assert, layer } from "@effect/vitest"
import { Context, Duration, Effect, Layer, Schedule } from "effect"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { signIn } from "../../src/client/signIn.ts"
import { secondNetwork } from "../support/TestChain.ts"
import { type Gate, rpcGate } from "../support/rpcGate.ts"
import { client, TestServer, TestServerLive } from "../support/TestServer.ts"

process.env.DO_NOT_TRACK = "1"

const A = 31337
const B = 31338
const RPC_TIMEOUT_MS = 4_000

class Gates extends Context.Service<Gates, { readonly rpc: Gate; readonly bundler: Gate }>()("test/chains/HangingGates") {}

const Live = Layer.unwrap(Effect.gen(function*() {
  const rpc = yield* rpcGate(secondNetwork().rpcUrl)
  const bundler = yield* rpcGate(secondNetwork().bundlerUrl)
  return TestServerLive({
    chain: { chainId: B, rpcUrl: rpc.url, bundlerUrl: bundler.url },
    config: {
      CHAIN_31338_RPC_TIMEOUT: `${RPC_TIMEOUT_MS} millis`,
      CHAIN_31338_BUNDLER_TIMEOUT: `${RPC_TIMEOUT_MS} millis`,
      // The monitor's defaults (a probe every 2 s, 5 s each, confirmed once): chain B is found
      // down well after the 4 s timeout of a call already under way, whose answer is the timeout's.
    }
  }).pipe(Layer.provideMerge(Layer.succeed(Gates, { rpc, bundler })))
}))

interface Answer {
  readonly status: number
  readonly ms: number
  readonly retryAfter: string | null
  readonly body: {
    readonly error?: { readonly code: string; readonly details?: Record<string, unknown> }
    readonly chains?: ReadonlyArray<{ chainId: number; status: string; rpc: string; bundler: string }>
  }
}

const call = (url: string, init: { token?: string; body?: unknown } = {}) =>
  Effect.promise(async (): Promise<Answer> => {
    const started = Date.now()
    const res = await fetch(url, {
      method: init.body === undefined ? "GET" : "POST",
      headers: {
        ...(init.token === undefined ? {} : { authorization: `Bearer ${init.token}` }),
        ...(init.body === undefined ? {} : { "content-type": "application/json" })
      },
      ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) })
    })
    const body = (await res.json()) as Answer["body"]
    return { status: res.status, ms: Date.now() - started, retryAfter: res.headers.get("retry-after"), body }
  })

const eventually = <A>(effect: Effect.Effect<A>, ok: (a: A) => boolean, what: string) =>
  effect.pipe(
    Effect.flatMap((a) => (ok(a) ? Effect.succeed(a) : Effect.fail(what))),
    Effect.retry(Schedule.spaced(Duration.millis(200))),
    Effect.timeout(Duration.seconds(40)),
    Effect.orDie
  )

layer(Live, { excludeTestServices: true, timeout: 180_000 })("one chain hanging", (it) => {
  it.effect("chain B frozen: a call under way 504 within its timeout, then 503 at once with Retry-After; chain A fast", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const gates = yield* Gates
      const owner = yield* signIn(baseUrl, privateKeyToAccount(generatePrivateKey()))
      // The owner's account on each chain exists once listed.
      yield* Effect.flatMap(client(owner.token), (api) => api.accounts.listAccounts())
      const freeze = (chainId: number) =>
        call(`${baseUrl}/account/rules/build`, { token: owner.token, body: { intentType: "account_freeze", chainId } })

      const warm = yield* freeze(B)
      assert.strictEqual(warm.status, 200, JSON.stringify(warm.body))
      const ready = yield* call(`${baseUrl}/health/ready`)
      assert.deepStrictEqual(ready.body.chains?.map((c) => [c.chainId, c.status]), [[A, "ok"], [B, "ok"]])

      // Chain B's node and bundler freeze: every request is taken and never answered.
      gates.rpc.hold(() => true)
      gates.bundler.hold(() => true)

      // A build under way: its chain read waits chain B's timeout, once, and answers 504.
      const underWay = yield* freeze(B)
      assert.strictEqual(underWay.status, 504, JSON.stringify(underWay.body))
      assert.strictEqual(underWay.body.error?.code, "upstream_timeout")
      assert.strictEqual(underWay.body.error?.details?.["chainId"], B)
      assert.isAtLeast(underWay.ms, RPC_TIMEOUT_MS - 100)
      assert.isBelow(underWay.ms, 3 * RPC_TIMEOUT_MS, "the timed-out call was retried (before: 29–30 s)")

      // The monitor finds chain B's node and bundler not answering: readiness shows it degraded, still ready.
      const degraded = yield* eventually(
        call(`${baseUrl}/health/ready`),
        (r) => r.body.chains?.some((c) => c.chainId === B && c.status === "degraded" && c.rpc === "down") === true,
        "chain B degraded"
      )
      assert.strictEqual(degraded.status, 200)
      assert.strictEqual(degraded.body.chains?.find((c) => c.chainId === A)?.status, "ok")

      // Now chain B's builds answer 503 at once (no wait for the chain), with Retry-After, naming it.
      // (The monitor's probes read the block number; a build reads anything but.)
      const notProbe = (body: string) => !body.includes("eth_blockNumber")
      const reached = gates.rpc.seen(notProbe)
      for (let i = 0; i < 3; i++) {
        const fast = yield* freeze(B)
        assert.strictEqual(fast.status, 503, JSON.stringify(fast.body))
        assert.strictEqual(fast.body.error?.code, "service_unavailable")
        assert.strictEqual(fast.body.error?.details?.["chainId"], B)
        assert.isNotNull(fast.retryAfter, "503 without Retry-After")
        assert.isAbove(Number(fast.retryAfter), 0)
        assert.isBelow(fast.ms, RPC_TIMEOUT_MS / 2, "a build on a degraded chain waited for the chain")
      }
      // They never reached the node (only the monitor's probes did).
      assert.strictEqual(gates.rpc.seen(notProbe), reached)

      // Chain A meanwhile: built as before, and fast.
      for (let i = 0; i < 3; i++) {
        const onA = yield* freeze(A)
        assert.strictEqual(onA.status, 200, JSON.stringify(onA.body))
        assert.isBelow(onA.ms, RPC_TIMEOUT_MS, "chain A waited on chain B")
      }

      // Chain B answers again: found back, served again.
      gates.rpc.release()
      gates.bundler.release()
      yield* eventually(
        call(`${baseUrl}/health/ready`),
        (r) => r.body.chains?.every((c) => c.status === "ok") === true,
        "chain B ok again"
      )
      const back = yield* freeze(B)
      assert.strictEqual(back.status, 200, JSON.stringify(back.body))
    }))
})
