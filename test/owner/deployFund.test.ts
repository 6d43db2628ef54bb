/**
 * `account_deploy` and `account_fund` through the service, on the local chain: the funding
 * request names the account's address, its chain and the token's contract there (an ERC-681
 * URI a wallet takes, the balance read from the chain; a wallet paying it moves the funds there);
 * the deploy is one owner operation with no other call, after which the chain holds the
 * account's code and a second deploy is refused. Bad input is a 400 naming the field.
 */
import { assert, layer } from "@effect/vitest"
import { Duration, Effect } from "effect"
import type { Address } from "viem"
import { Chain } from "../../src/chain/Chain.ts"
import { Network } from "../../src/chain/Network.ts"
import { mint } from "../support/TestChain.ts"
import { TestServerLive } from "../support/TestServer.ts"
import { failure, newSession } from "../delegations/helpers.ts"
import { run } from "./helpers.ts"

process.env.DO_NOT_TRACK = "1"

layer(TestServerLive(), { timeout: Duration.seconds(120), excludeTestServices: true })("account_deploy and account_fund", (it) => {
  it.effect("a funding request for the account's address and chain; a deploy with no other call, once", () =>
    Effect.gen(function*() {
      const net = yield* Network
      const chain = yield* Chain
      const owner = yield* newSession()
      const A = owner.account.address as Address

      const fund = yield* owner.api.accounts.getFunding({ query: { token: "USDC", amount: "12.5" } })
      assert.deepStrictEqual([fund.intentType, fund.address, fund.chainId, fund.deployed, fund.amount, fund.balance], [
        "account_fund", A.toLowerCase(), net.chainId, false, "12.5", "0"
      ])
      assert.strictEqual(fund.token.address, net.tokens.usd.address.toLowerCase())
      assert.strictEqual(fund.paymentUri, `ethereum:${net.tokens.usd.address}@${net.chainId}/transfer?address=${A}&uint256=12500000`)
      assert.include(fund.humanSummary, `chain ${net.chainId}`)
      const eth = yield* owner.api.accounts.getFunding({ query: { token: "eth", amount: "0.5" } })
      assert.strictEqual(eth.paymentUri, `ethereum:${A}@${net.chainId}?value=500000000000000000`)
      // Funds arrive (a wallet paying the request), read back from the chain.
      yield* mint("usd", A, 12.5)
      assert.strictEqual((yield* owner.api.accounts.getFunding({ query: {} })).balance, "12.5")

      for (const [query, field] of [[{ token: "DOGE" }, "token"], [{ token: "USDC", amount: "1.1234567" }, "amount"], [{ amount: "0" }, "amount"]] as const) {
        const refused = yield* failure(owner.api.accounts.getFunding({ query }))
        assert.deepStrictEqual([refused.tag, refused.details["field"]], ["BadRequest", field], JSON.stringify(query))
      }
      const asBuild = yield* failure(owner.api.accounts.buildRules({ payload: { intentType: "account_fund" } }))
      assert.deepStrictEqual([asBuild.tag, asBuild.details["field"]], ["BadRequest", "intentType"])

      // The deploy: the factory's call and nothing else.
      assert.include((yield* owner.api.accounts.getRules({ query: {} })).buildableIntents, "account_deploy")
      const deploy = yield* owner.api.accounts.buildRules({ payload: { intentType: "account_deploy" } })
      assert.strictEqual(deploy.intentType, "account_deploy")
      assert.isDefined(deploy.userOp.factory)
      assert.isFalse(yield* chain.isDeployed(A))
      assert.strictEqual((yield* run(owner.api, deploy, { kind: "eoa", key: owner.key })).outcome, "mined")
      assert.isTrue(yield* chain.isDeployed(A))
      assert.strictEqual(yield* chain.erc20Balance(net.tokens.usd.address, A), 12_500_000n)
      const again = yield* failure(owner.api.accounts.buildRules({ payload: { intentType: "account_deploy" } }))
      assert.strictEqual(again.tag, "Conflict")
      assert.notInclude((yield* owner.api.accounts.getRules({ query: {} })).buildableIntents, "account_deploy")
      assert.isTrue((yield* owner.api.accounts.getFunding({ query: {} })).deployed)
      const log = yield* owner.api.activity.list({ query: { limit: 10 } })
      assert.deepStrictEqual(log.items.filter((e) => e.action === "account_deploy").length, 1)
    }))
})
