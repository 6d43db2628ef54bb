/**
 * The bundler is down when the owner relays a delegation's enable: the relay keeps the
 * operation (503, naming the chain) and its reconciler sends it once the bundler is back. The delegation must
 * follow the operation's settlement: it executed, so it is active (not `failed` while its
 * signed legs are on chain and the owner cannot see or revoke it).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { Network } from "../../src/chain/Network.ts"
import { testNetwork } from "../support/TestChain.ts"
import { TestServerLive } from "../support/TestServer.ts"
import { bundlerProxy } from "../userops/bundlerProxy.ts"
import { failure, newSession, signLeg, signOp } from "./helpers.ts"

process.env.DO_NOT_TRACK = "1"

describe("delegation enable during a bundler outage", () => {
  it.live("503 at POST /delegations, sent by the reconciler later: the repeated request answers it active", () =>
    Effect.gen(function*() {
      const proxy = yield* bundlerProxy(testNetwork().bundlerUrl)
      const context = yield* Layer.build(TestServerLive({
        config: {
          RELAY_RECONCILE_INTERVAL: "300 millis",
          BUNDLER_RETRIES: "0",
          BUNDLER_TIMEOUT: "3 seconds",
          DELEGATION_ENABLE_WAIT: "2 seconds"
        },
        chain: { bundlerUrl: proxy.url }
      }))
      yield* Effect.gen(function*() {
        const net = yield* Network
        const owner = yield* newSession()
        const delegate = yield* newSession()
        const build = yield* owner.api.delegations.build({
          payload: {
            name: "outage",
            kind: "agent",
            delegateeAddress: delegate.account.address,
            chainId: net.chainId,
            budgets: [{ token: { symbol: "USDC" }, amount: 10 }],
            perActionMax: { token: { symbol: "USDC" }, amount: 5 },
            maxActions: 2
          }
        })
        const leg = build.delegations[0]!
        const payload = {
          userOp: yield* signOp(owner.key, build.enableUserOp),
          userOpHash: build.userOpHash,
          intentType: "delegation_enable" as const,
          delegationSignatures: [{ permissionId: leg.permissionId, signature: yield* signLeg(owner.key, leg.typedData) }]
        }
        // A value viem cannot pack into the hash is the client's mistake: 400, not a 500.
        const huge = yield* failure(owner.api.delegations.create({
          payload: { ...payload, userOp: { ...payload.userOp, callGasLimit: (2n ** 128n).toString() } }
        }))
        assert.strictEqual(huge.tag, "BadRequest")

        proxy.setMode("down")
        const down = yield* failure(owner.api.delegations.create({ payload }))
        // The chain's bundler is down: 503 naming the chain (its operations only; the service is up).
        assert.strictEqual(down.tag, "ServiceUnavailable")
        proxy.setMode("up")

        // Repeat the request until the reconciler has sent and settled the enable.
        let status: string | undefined
        for (let i = 0; i < 15 && status === undefined; i++) {
          const answer = yield* owner.api.delegations.create({ payload }).pipe(
            Effect.map((d) => d.status as string),
            Effect.catchTag("UpstreamTimeout", () => Effect.succeed(undefined)),
            // The chain may have been found degraded while its bundler was down: 503 until the
            // monitor finds it back (docs/chains.md, "One chain failing"); asked again after a pause.
            Effect.catchTag("ServiceUnavailable", () => Effect.as(Effect.sleep("500 millis"), undefined))
          )
          status = answer
        }
        assert.strictEqual(status, "active")
        const listed = yield* owner.api.delegations.list({ query: {} })
        assert.deepStrictEqual(listed.map((d) => d.permissionId), [leg.permissionId])
      }).pipe(Effect.provide(context))
    }).pipe(Effect.scoped), { timeout: 90_000 })
})
