/**
 * `erc20-basket-periodic` (issue 44): one USD allowance across USDC, USDT and DAI as an ERC-7715
 * permission of this service. Listed by `getSupported` where BasketPeriodEnforcer is deployed;
 * requested over the HTTP twin of `wallet_requestExecutionPermissions`, the owner signs; then the
 * AGENT redeems the permission context itself (its own transactions, ERC-7710): USDC then USDT then
 * DAI within the basket pass, the next unit is refused by the chain, a token outside the basket too;
 * the granted list shows it with spent and left in USD. Hostile requests store nothing.
 */
import { assert, layer } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { type Address, type Hex, toHex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { Network } from "../../src/chain/Network.ts"
import { failure, newSession } from "../delegations/helpers.ts"
import { mint } from "../support/TestChain.ts"
import { TestServerLive } from "../support/TestServer.ts"
import { accepted, eoaAgent, erc20Transfer, refusedOnChain, tokenBalance } from "./agent.ts"
import { signApproval } from "./wallet.ts"

process.env.DO_NOT_TRACK = "1"

const DAY = 86_400
const nowS = () => Math.floor(Date.now() / 1000)
const E6 = (n: number) => BigInt(n) * 1_000_000n
const E18 = (n: number) => BigInt(n) * 10n ** 18n

layer(TestServerLive({ config: { DELEGATION_MIN_LIFETIME: "1 second", PERMISSIONS_APPROVAL_WAIT: "60 seconds" } }), {
  timeout: Duration.seconds(240),
  excludeTestServices: true
})("erc20-basket-periodic", (it) => {
  it.effect("listed, granted, redeemed by the agent: the chain holds the basket across tokens", () =>
    Effect.gen(function*() {
      const net = yield* Network
      const owner = yield* newSession()
      const agentKey = generatePrivateKey()
      const agent = yield* eoaAgent(agentKey)
      const alice = privateKeyToAccount(generatePrivateKey()).address.toLowerCase() as Address
      const [usdc, usdt, dai] = [net.tokens.usd.address, net.tokens.usdt.address, net.tokens.dai!.address] as Array<Address>
      const supported = yield* owner.api.permissions.supported()
      assert.deepStrictEqual(supported["erc20-basket-periodic"]?.chainIds.includes(toHex(net.chainId)), true)
      yield* mint("usd", owner.account.address as Hex, 20)
      yield* mint("usdt", owner.account.address as Hex, 20)
      yield* mint("dai", owner.account.address as Hex, 20)
      const request = (data: Record<string, unknown>) => ({
        chainId: toHex(net.chainId),
        to: agent.address,
        rules: [{ type: "expiry", data: { timestamp: nowS() + 7 * DAY } }],
        permission: { type: "erc20-basket-periodic", isAdjustmentAllowed: false, data }
      })
      const good = { tokens: [usdc, usdt, dai], periodAmount: toHex(E18(10)), periodDuration: DAY, justification: "groceries" }

      // Hostile requests: a clear 400 naming the field, nothing offered to the owner.
      const unknownToken = privateKeyToAccount(generatePrivateKey()).address
      for (const [data, field] of [
        [{ ...good, tokens: [] }, "permission.data.tokens"],
        [{ ...good, tokens: [usdc, unknownToken] }, "permission.data.tokens[1]"],
        [{ ...good, tokens: [usdc, usdc.toUpperCase().replace("0X", "0x")] }, "permission.data.tokens[1]"],
        [{ ...good, justification: "a\u0000b" }, "permission.data.justification"],
        [{ ...good, justification: "x".repeat(10_000) }, "permission.data.justification"],
        [{ ...good, periodAmount: `0x1${"0".repeat(64)}` }, "permission.data.periodAmount"],
        [{ ...good, tokenAddress: usdc }, "permission.data.tokenAddress"]
      ] as const) {
        const e = yield* failure(owner.api.permissions.request({ payload: { requests: [request(data)] as never } }))
        assert.strictEqual(e.tag, "BadRequest", JSON.stringify(data).slice(0, 200))
        assert.include(JSON.stringify(e), field)
      }
      // The JSON-RPC methods a wallet calls: the type listed, the same decoding (-32602 naming the field).
      const rpc = (id: number, method: string, params: ReadonlyArray<unknown>) =>
        owner.api.permissions.rpc({ payload: { jsonrpc: "2.0", id, method, params } as never })
      const listed = (yield* rpc(1, "wallet_getSupportedExecutionPermissions", [])).result as Record<string, { chainIds: Array<string> }>
      assert.include(listed["erc20-basket-periodic"]?.chainIds, toHex(net.chainId))
      const viaRpc = yield* rpc(2, "wallet_requestExecutionPermissions", [request({ ...good, tokens: [usdc, unknownToken] })])
      assert.deepStrictEqual([viaRpc.error?.code, (viaRpc.error?.data as { field?: string }).field], [-32602, "params[0].permission.data.tokens[1]"])
      assert.lengthOf(yield* owner.api.permissions.approvals({ query: { status: "pending" } }), 0, "nothing stored")

      const offered = yield* owner.api.permissions.request({ payload: { requests: [request(good)] as never } })
      const summary = offered.grants![0]!.build.humanSummary
      assert.include(summary, "Across USDC, USDT and DAI together it may spend at most 10 USD per day")
      assert.include(summary, "only what the basket below allows")
      assert.notInclude(offered.grants![0]!.build.enableUserOp.callData.toLowerCase(), net.delegation.caveatEnforcers["MultiTokenPeriodEnforcer"]!.slice(2).toLowerCase())
      const approved = yield* owner.api.permissions.approve({ params: { approvalId: offered.id }, payload: { signatures: yield* signApproval(owner, offered) } })
      assert.strictEqual(approved.status, "granted")
      const context = approved.permissions![0]!.context as Hex

      // The agent's own redemptions: 4 USDC, 3 USDT, 3 DAI = 10 USD; one more unit of anything is refused.
      accepted(yield* Effect.promise(() => agent.redeem({ to: usdc, data: erc20Transfer(alice, E6(4)) }, context)))
      accepted(yield* Effect.promise(() => agent.redeem({ to: usdt, data: erc20Transfer(alice, E6(3)) }, context)))
      accepted(yield* Effect.promise(() => agent.redeem({ to: dai, data: erc20Transfer(alice, E18(3)) }, context)))
      const balances = Effect.all([tokenBalance(usdc, alice), tokenBalance(usdt, alice), tokenBalance(dai, alice)])
      const before = yield* balances
      assert.deepStrictEqual(before, [E6(4), E6(3), E18(3)])
      refusedOnChain(yield* Effect.promise(() => agent.redeem({ to: usdc, data: erc20Transfer(alice, 1n) }, context)),
        "BasketPeriodEnforcer:basket-amount-exceeded", before, yield* balances)
      refusedOnChain(yield* Effect.promise(() => agent.redeem({ to: dai, data: erc20Transfer(alice, 1n) }, context)),
        "BasketPeriodEnforcer:basket-amount-exceeded", before, yield* balances)

      // The granted list: the basket type, with what the chain shows spent and left, in USD.
      const granted = (yield* owner.api.permissions.granted()).find((g) => g.context === context)
      assert.strictEqual(granted?.permission.type, "erc20-basket-periodic")
      assert.deepStrictEqual((granted?.permission.data as { tokens: Array<string> }).tokens, [usdc, usdt, dai].map((a) => a.toLowerCase()))
      assert.strictEqual(granted?.basketToDate?.spent, 10)
      assert.strictEqual(granted?.basketToDate?.remaining, 0)
    }))

  it.effect("a token outside the basket is refused by the chain", () =>
    Effect.gen(function*() {
      const net = yield* Network
      const owner = yield* newSession()
      const agent = yield* eoaAgent(generatePrivateKey())
      const alice = privateKeyToAccount(generatePrivateKey()).address.toLowerCase() as Address
      const [usdc, usdt] = [net.tokens.usd.address, net.tokens.usdt.address] as Array<Address>
      yield* mint("usd", owner.account.address as Hex, 20)
      yield* mint("usdt", owner.account.address as Hex, 20)
      const offered = yield* owner.api.permissions.request({
        payload: {
          requests: [{
            chainId: toHex(net.chainId),
            to: agent.address,
            permission: { type: "erc20-basket-periodic", isAdjustmentAllowed: false, data: { tokens: [usdc], periodAmount: toHex(E18(5)), periodDuration: DAY } }
          }] as never
        }
      })
      const approved = yield* owner.api.permissions.approve({ params: { approvalId: offered.id }, payload: { signatures: yield* signApproval(owner, offered) } })
      const context = approved.permissions![0]!.context as Hex
      // Each caveat runs: the basket's own refusal needs the targets to allow the token, so the first refusal is the targets'.
      const balances = Effect.all([tokenBalance(usdt, alice), tokenBalance(usdt, owner.account.address)])
      const before = yield* balances
      const outcome = yield* Effect.promise(() => agent.redeem({ to: usdt, data: erc20Transfer(alice, 1n) }, context))
      assert.isFalse(outcome.ok)
      assert.deepStrictEqual(yield* balances, before)
      accepted(yield* Effect.promise(() => agent.redeem({ to: usdc, data: erc20Transfer(alice, E6(5)) }, context)))
    }))
})
