/**
 * One chain failing does not take the others down (issue 29 item 5). The service reaches the
 * second chain (31338) through loopback stand-ins in front of its RPC and its bundler, and the
 * test cuts both: chain B's operations answer 503 naming the chain, readiness says chain B is
 * degraded and stays ready, reads that span both chains still answer, chain A builds and
 * executes as before. Meanwhile the delegate redeems its chain-B grant itself (around the
 * service, straight to the chain): the follower cannot see it while the chain is cut, and
 * records it once the chain is back, from where its cursor stood.
 */
import { assert, layer } from "@effect/vitest"
import { Context, Duration, Effect, Layer, Schedule } from "effect"
import { type Address, type Hex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { signIn } from "../../src/client/signIn.ts"
import { makeAttacker, redeemCall, succeeds, transfer, withArgs } from "../delegations/attacker.ts"
import { newSession, relay, session, signOp } from "../delegations/helpers.ts"
import { mint, secondNetwork } from "../support/TestChain.ts"
import { TestServer, TestServerLive } from "../support/TestServer.ts"
import { type BundlerProxy, bundlerProxy } from "../userops/bundlerProxy.ts"
import { accountOn, balanceOn, grantOn } from "./support.ts"

process.env.DO_NOT_TRACK = "1"

const A = 31337
const B = 31338

class ChainBProxies extends Context.Service<ChainBProxies, { readonly rpc: BundlerProxy; readonly bundler: BundlerProxy }>()(
  "test/chains/ChainBProxies"
) {}

const Live = Layer.unwrap(Effect.gen(function*() {
  const rpc = yield* bundlerProxy(secondNetwork().rpcUrl)
  const bundler = yield* bundlerProxy(secondNetwork().bundlerUrl)
  return TestServerLive({
    chain: { chainId: B, rpcUrl: rpc.url, bundlerUrl: bundler.url },
    config: { FOLLOWER_INTERVAL: "200 millis" }
  }).pipe(Layer.provideMerge(Layer.succeed(ChainBProxies, { rpc, bundler })))
}))

interface Answer {
  readonly status: number
  readonly body: {
    readonly error?: { readonly code: string; readonly details?: Record<string, unknown> }
    readonly chains?: ReadonlyArray<{ chainId: number; status: string }>
  }
}

const call = (url: string, init: { token?: string; method?: string; body?: unknown } = {}) =>
  Effect.promise(async (): Promise<Answer> => {
    const res = await fetch(url, {
      method: init.method ?? (init.body === undefined ? "GET" : "POST"),
      headers: {
        ...(init.token === undefined ? {} : { authorization: `Bearer ${init.token}` }),
        ...(init.body === undefined ? {} : { "content-type": "application/json" })
      },
      ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) })
    })
    return { status: res.status, body: (await res.json()) as Answer["body"] }
  })

/** Polls until `ok` holds (readiness is cached for 2 s; the follower passes every 200 ms). */
const eventually = <A>(effect: Effect.Effect<A>, ok: (a: A) => boolean, what: string) =>
  effect.pipe(
    Effect.flatMap((a) => (ok(a) ? Effect.succeed(a) : Effect.fail(what))),
    Effect.retry(Schedule.spaced(Duration.millis(200))),
    Effect.timeout(Duration.seconds(30)),
    Effect.orDie
  )

layer(Live, { excludeTestServices: true, timeout: 180_000 })("one chain down", (it) => {
  it.effect("chain B cut: its operations answer 503 naming it, readiness says so, chain A is served, the follower resumes", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const proxies = yield* ChainBProxies
      const owner = yield* newSession()
      const delegateKey = generatePrivateKey()
      // The delegate through the typed client, and a second session of its own for raw answers.
      const delegateSignIn = yield* signIn(baseUrl, privateKeyToAccount(delegateKey))
      const delegate = yield* session(delegateKey)
      const recipient = privateKeyToAccount(generatePrivateKey()).address.toLowerCase()
      const ownerB = yield* accountOn(owner, B)
      yield* mint("usd", ownerB.address as Address, 20, B)
      const { created, signed } = yield* grantOn(owner, delegate, B, recipient)

      const ready = yield* call(`${baseUrl}/health/ready`)
      assert.strictEqual(ready.status, 200)
      assert.deepStrictEqual(ready.body.chains?.map((c) => [c.chainId, c.status]), [[A, "ok"], [B, "ok"]])

      // Chain B's RPC and bundler go away.
      proxies.rpc.setMode("down")
      proxies.bundler.setMode("down")

      // The delegate redeems its grant itself, straight to chain B (around the service).
      const usdB = secondNetwork().tokens.usd.address
      const delegateB = yield* accountOn(delegate, B)
      const attacker = yield* makeAttacker(delegateKey as Hex, delegateB.address, undefined, secondNetwork())
      yield* succeeds(attacker, redeemCall(withArgs(signed, secondNetwork().delegation.caveatEnforcers, { tokenIndex: 0, group: 0 }), transfer(usdB, recipient as Address, 1_000_000n)))
      assert.strictEqual(yield* balanceOn(secondNetwork(), usdB, recipient), 1_000_000n)

      // Chain B's operations: 503 naming the chain (never a 500, never a hang).
      const act = yield* call(`${baseUrl}/delegations/${created.id}/actions`, {
        token: delegateSignIn.token,
        body: { recipient, amount: 1 }
      })
      assert.strictEqual(act.status, 503, JSON.stringify(act.body))
      assert.strictEqual(act.body.error?.code, "service_unavailable")
      assert.strictEqual(act.body.error?.details?.["chainId"], B)
      const freezeB = yield* call(`${baseUrl}/account/rules/build`, { token: delegateSignIn.token, body: { intentType: "account_freeze", chainId: B } })
      assert.strictEqual(freezeB.status, 503, JSON.stringify(freezeB.body))
      assert.strictEqual(freezeB.body.error?.details?.["chainId"], B)

      // Readiness: still ready (chain A is served), chain B degraded.
      const degraded = yield* eventually(
        call(`${baseUrl}/health/ready`),
        (r) => r.body.chains?.some((c) => c.chainId === B && c.status === "degraded") === true,
        "chain B degraded"
      )
      assert.strictEqual(degraded.status, 200)
      assert.deepStrictEqual(degraded.body.chains?.find((c) => c.chainId === A)?.status, "ok")

      // Reads that span both chains still answer; chain A builds and executes as before.
      assert.isTrue((yield* owner.api.delegations.list({ query: {} })).some((d) => d.id === created.id))
      yield* owner.api.activity.list({ query: { limit: 10 } })
      const freezeA = yield* owner.api.accounts.buildRules({ payload: { intentType: "account_freeze", chainId: A } })
      assert.strictEqual((yield* relay(owner.api, yield* signOp(owner.key, freezeA.userOp))).outcome, "mined")
      assert.isTrue((yield* owner.api.accounts.getRules({ query: { chainId: A } })).frozen)

      // Nothing of the redemption is in the record while chain B is cut.
      const whileCut = yield* owner.api.activity.list({ query: { limit: 50, chainId: B, delegationId: created.id } })
      assert.isFalse(whileCut.items.some((e) => e.action === "delegated_action"), "the follower cannot have seen chain B")

      // Chain B is back: the follower resumes from its cursor and records the redemption once.
      proxies.rpc.setMode("up")
      proxies.bundler.setMode("up")
      const recorded = yield* eventually(
        owner.api.activity.list({ query: { limit: 50, chainId: B, delegationId: created.id } }).pipe(Effect.orDie),
        (page) => page.items.some((e) => e.action === "delegated_action"),
        "the redemption recorded"
      )
      const redemptions = recorded.items.filter((e) => e.action === "delegated_action")
      assert.lengthOf(redemptions, 1)
      assert.deepStrictEqual(
        [redemptions[0]!.amount, redemptions[0]!.recipient, redemptions[0]!.provenance, redemptions[0]!.chainId],
        [1, recipient, "onchain_unrelayed", B]
      )
      yield* eventually(
        call(`${baseUrl}/health/ready`),
        (r) => r.body.chains?.every((c) => c.status === "ok") === true,
        "chain B ok again"
      )
      // And chain B's operations are served again, the grant's spend read from the chain.
      const again = yield* delegate.api.delegations.act({ params: { delegationId: created.id }, payload: { recipient, amount: 1 } })
      assert.strictEqual(again.userOp.chainId, B)
      const listed = (yield* owner.api.delegations.list({ query: { chainId: B } })).find((d) => d.id === created.id)!
      assert.strictEqual(listed.spentToDate[0]!.spent, 1)
    }))
})
