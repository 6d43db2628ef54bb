/**
 * A grant that starts "now" reads as started on the chain (issue 45's leftover), on a local
 * network of this file's own whose head is minutes old: anvil mines on demand, so on a quiet
 * chain the latest block can be far older than the wall clock, and the bundler simulates at
 * "latest", whose `block.timestamp` the enforcers compare a start with. Here the chain's clock
 * trails the wall clock by minutes (its head then stays that old). The default start of a
 * renewing period (and of the lifetime allowance) is a time the chain has reached, and the
 * delegate's own redemption, around the service, goes through at once.
 */
import { assert, layer } from "@effect/vitest"
import { Duration, Effect, Layer } from "effect"
import type { Address, Hex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { Chain } from "../../src/chain/Chain.ts"
import { LocalNetworks, make as makeLocalNetwork } from "../../src/chain/LocalNetwork.ts"
import { mintOn } from "../support/TestChain.ts"
import { TestServerLive } from "../support/TestServer.ts"
import { balances, grant, makeAttacker, redeemCall, succeeds, transfer, withArgs } from "./attacker.ts"
import { newSession } from "./helpers.ts"

process.env.DO_NOT_TRACK = "1"

const AGE_SECONDS = 300
const USD = (n: number) => BigInt(Math.round(n * 1_000_000))
const randomAddress = () => privateKeyToAccount(generatePrivateKey()).address.toLowerCase() as Address

const OwnNetworkServer = Layer.unwrap(
  Effect.map(makeLocalNetwork({}), (network) => TestServerLive({ chain: { networks: [network] } }))
)

/**
 * The chain's clock is set `AGE_SECONDS` behind the wall clock and a block mined: its head is
 * that old, and every later block keeps the lag (anvil keeps the offset), as a chain whose
 * block times trail the service's clock. Block times stay monotonic, as on a real chain.
 */
const lagChain = Effect.gen(function*() {
  const chain = yield* Chain
  yield* Effect.promise(async () => {
    await chain.client.request({ method: "evm_setTime" as never, params: [Math.floor(Date.now() / 1000) - AGE_SECONDS] as never })
    await chain.client.request({ method: "evm_mine" as never, params: [] as never })
  })
  const head = yield* Effect.promise(() => chain.client.getBlock({ blockTag: "latest" }))
  return Number(head.timestamp)
})

layer(OwnNetworkServer, { timeout: Duration.seconds(180), excludeTestServices: true })("a default start the chain has reached", (it) => {
  it.effect("on a chain whose head is minutes old, grants starting now transfer at once by the delegate's own redemption", () =>
    Effect.gen(function*() {
      const [net] = yield* LocalNetworks
      const owner = yield* newSession()
      const delegate = yield* newSession()
      const alice = randomAddress()
      const usdc = net!.tokens.usd.address
      yield* mintOn(net!, "usd", owner.account.address as Hex, 10)
      const expiresAt = new Date(Date.now() + 3 * 86_400_000).toISOString()

      const builtAt = yield* lagChain
      assert.isAtLeast(Date.now() / 1000 - builtAt, AGE_SECONDS - 5, "the head is minutes old")
      // A daily allowance with no start, and a lifetime allowance: both start where the chain is.
      const daily = yield* grant(owner, delegate, {
        budgets: [{ token: { symbol: "USDC" }, amount: 2, period: { every: "day" } }],
        maxActions: 5,
        expiresAt
      })
      const lifetime = yield* grant(owner, delegate, { budgets: [{ token: { symbol: "USDC" }, amount: 2 }], maxActions: 5, expiresAt })
      const read = yield* owner.api.delegations.get({ params: { delegationId: daily.id } })
      const start = new Date(read.policySet.budgets[0]!.period!.start).getTime() / 1000
      assert.isAtMost(start, builtAt, "the period starts at a time the chain had reached")
      const iso = new Date(start * 1000).toISOString()
      assert.include(daily.summary, `from ${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC`, "the summary says the signed start")

      // The delegate redeems around the service: the bundler simulates at the chain's head, minutes
      // behind the wall clock (with a start "now" both would be refused `transfer-not-started`).
      const attacker = yield* makeAttacker(delegate.key, delegate.account.address, undefined, net!)
      const own = (g: typeof daily) =>
        redeemCall(withArgs(g.signed, net!.delegation.caveatEnforcers, { tokenIndex: 0 }), transfer(usdc, alice, USD(1)))
      const head = yield* Effect.promise(() => attacker.publicClient.getBlock({ blockTag: "latest" }))
      assert.isAtLeast(Date.now() / 1000 - Number(head.timestamp), AGE_SECONDS - 60, "the chain still trails the wall clock")
      yield* succeeds(attacker, own(daily))
      yield* succeeds(attacker, own(lifetime))
      assert.deepStrictEqual(yield* balances(attacker, [usdc], [alice]), [USD(2)])
    }))
})
