/**
 * A reorged x402 settlement, on a fork of the run's chain (rewinding it touches no other test),
 * with the real @x402 resource server and facilitator on the fork: an agent pays through the
 * service and the follower records the settlement; the chain is rewound past its block and
 * grows again without it: the owner's entry is compensated (`reorged`), the payment is no
 * longer settled and its budget is held again (not spent), as the owner's balance on chain
 * shows, and the smart-account agent's copy of the entry is compensated too; the facilitator's very transaction is then included again: recorded anew exactly once,
 * and the budget debited once.
 */
import { assert, it } from "@effect/vitest"
import { Context, Duration, Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { type Address, createPublicClient, encodeFunctionData, erc20Abi, http, parseAbi } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { startFork } from "../../src/chain/LocalNetwork.ts"
import { settlementOf } from "@das/x402-erc7710"
import { startFacilitator } from "../../src/payments/x402/world/FacilitatorService.ts"
import { startResourceServer } from "../../src/payments/x402/world/ResourceServer.ts"
import { miniBundler } from "../follower/miniBundler.ts"
import { testNetwork } from "../support/TestChain.ts"
import { TestServerLive } from "../support/TestServer.ts"
import { waitFor } from "../support/waitFor.ts"
import { ownerAndAgent, reservationsOf } from "./support.ts"
import { sendFromDevAccount } from "../../src/chain/DevAccount.ts"

process.env.DO_NOT_TRACK = "1"

const USD = (n: number) => BigInt(Math.round(n * 1_000_000))
const lower = (s: string) => s.toLowerCase()

const rpc = (url: string, method: string, params: ReadonlyArray<unknown> = []) =>
  Effect.promise(async () => {
    const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }) })
    const body = (await res.json()) as { result?: unknown; error?: { message: string } }
    if (body.error !== undefined) throw new Error(`${method}: ${body.error.message}`)
    return body.result
  })

it.live("a settlement reorged out is no longer settled and its budget held again; included again, it is recorded and debited once", () =>
  Effect.gen(function*() {
    const shared = testNetwork()
    const usdc = shared.tokens.usd.address
    const fork = yield* startFork(shared.rpcUrl)
    const bundler = yield* miniBundler(fork.rpcUrl, shared.entryPoint, shared.chainId)
    const context = yield* Layer.build(TestServerLive({
      chain: { rpcUrl: fork.rpcUrl, bundlerUrl: bundler.url },
      config: { FOLLOWER_INTERVAL: "200 millis" }
    }))
    const sql = Context.get(context, SqlClient.SqlClient)
    const client = createPublicClient({ transport: http(fork.rpcUrl) })
    const balanceOf = (holder: Address) => Effect.promise(() => client.readContract({ address: usdc, abi: erc20Abi, functionName: "balanceOf", args: [holder] }))

    // The x402 world on the fork: a facilitator with gas there, a resource server charging USDC.
    const facilitatorKey = generatePrivateKey()
    yield* rpc(fork.rpcUrl, "anvil_setBalance", [privateKeyToAccount(facilitatorKey).address, "0x8ac7230489e80000"])
    const facilitator = yield* Effect.acquireRelease(
      Effect.promise(() => startFacilitator({ network: { ...shared, rpcUrl: fork.rpcUrl }, key: facilitatorKey, pollingIntervalMs: 50 })),
      (f) => Effect.promise(() => f.close())
    )
    const merchant = privateKeyToAccount(generatePrivateKey()).address
    const resource = yield* Effect.acquireRelease(
      Effect.promise(() =>
        startResourceServer({
          facilitatorUrl: facilitator.url,
          chainId: shared.chainId,
          asset: { address: usdc, decimals: 6, symbol: "USDC" },
          payTo: merchant,
          price: USD(0.01),
          meteredMax: USD(1),
          unitPrice: USD(0.05)
        })
      ),
      (r) => Effect.promise(() => r.close())
    )
    // The owner's USDC, minted on the fork by the deployer (an unlocked dev account there too).
    const deployer = privateKeyToAccount(Redacted.value(shared.deployerKey)).address
    const fund = (owner: Address) =>
      Effect.promise(async () => {
        const data = encodeFunctionData({ abi: parseAbi(["function mint(address to, uint256 amount)"]), functionName: "mint", args: [owner, USD(10)] })
        await sendFromDevAccount(fork.rpcUrl, { from: deployer, to: usdc, data })
      })

    yield* Effect.gen(function*() {
      // The delegate is the agent's smart account: its own log holds a copy of the payment's entry, which follows too.
      const p = yield* ownerAndAgent(facilitator.address, { budget: 1, perAction: 0.5 }, { fund, delegate: "account" })
      const owner = p.owner.account.address as Address
      const before = yield* balanceOf(owner)
      const spent = Effect.map(p.owner.api.delegations.get({ params: { delegationId: p.grantId } }), (g) => g.spentToDate.find((s) => s.token.symbol === "USDC")!)
      const payments = p.owner.api.payments.list({ query: { delegationId: p.grantId } }).pipe(Effect.orDie)
      const entriesOf = (api: typeof p.owner.api) =>
        api.activity.list({ query: { limit: 50, delegationId: p.grantId } }).pipe(
          Effect.orDie,
          Effect.map((page) => [...page.items].reverse().filter((e) => e.action === "x402_payment"))
        )
      const x402Entries = entriesOf(p.owner.api)
      const agentEntries = entriesOf(p.agentSession.api)

      const snapshot = yield* rpc(fork.rpcUrl, "evm_snapshot")
      const res = yield* Effect.promise(() => p.pay(`${resource.url}/report`, { maxAmount: USD(0.05) }))
      assert.strictEqual(res.status, 200)
      const tx = lower(settlementOf(res)!.transaction)
      const first = yield* waitFor("the payment settled", Effect.map(payments, (list) => list.find((x) => x.status === "settled")))
      assert.strictEqual(first.txHash, tx)
      assert.strictEqual((yield* spent).spent, 0.01)
      assert.strictEqual(yield* balanceOf(owner), before - USD(0.01))
      const raw = yield* rpc(fork.rpcUrl, "eth_getRawTransactionByHash", [tx])

      // The settlement's block leaves the chain; the chain grows past where it was, without it.
      yield* rpc(fork.rpcUrl, "evm_revert", [snapshot])
      yield* rpc(fork.rpcUrl, "anvil_mine", ["0x3"])
      const unsettled = yield* waitFor("the payment unsettled", Effect.map(payments, (list) => list.find((x) => x.id === first.id && x.status !== "settled")))
      assert.strictEqual(unsettled.status, "authorized", "redeemable again until its deadline")
      assert.isUndefined(unsettled.txHash)
      assert.isUndefined(unsettled.settledUnits)
      assert.strictEqual(yield* balanceOf(owner), before, "the chain shows nothing moved")
      // Not spent; held again (the same payment may still be included before its deadline).
      const held = yield* spent
      assert.strictEqual(held.spent, 0)
      assert.closeTo(held.remaining, 0.99, 1e-9)
      assert.deepStrictEqual((yield* reservationsOf(p.grantId).pipe(Effect.provideService(SqlClient.SqlClient, sql))).map((r) => [r.status, r.units, r.tx_hash]), [
        ["reserved", USD(0.01).toString(), null]
      ])
      const compensated = yield* waitFor("the compensating entry", Effect.map(x402Entries, (e) => e.length >= 2 ? e : undefined))
      assert.deepStrictEqual(compensated.map((e) => [e.status, e.txHash]), [["executed", tx], ["reorged", tx]])
      assert.deepStrictEqual((yield* agentEntries).map((e) => [e.status, e.amount, e.txHash]), [["executed", 0.01, tx], ["reorged", 0.01, tx]])

      // The facilitator's very transaction is included again: recorded anew, once; the budget debited once.
      assert.strictEqual(yield* rpc(fork.rpcUrl, "eth_sendRawTransaction", [raw]), tx)
      const again = yield* waitFor("the payment settled again", Effect.map(payments, (list) => list.find((x) => x.status === "settled")))
      assert.strictEqual(again.id, first.id)
      assert.strictEqual(again.txHash, tx)
      assert.notStrictEqual(again.auditEventId, first.auditEventId, "a new entry for the new inclusion")
      assert.strictEqual(yield* balanceOf(owner), before - USD(0.01))
      assert.strictEqual((yield* spent).spent, 0.01)
      assert.lengthOf(yield* payments, 1)
      assert.deepStrictEqual((yield* reservationsOf(p.grantId).pipe(Effect.provideService(SqlClient.SqlClient, sql))).map((r) => [r.status, r.units, r.tx_hash]), [
        ["final", USD(0.01).toString(), tx]
      ])
      const entries = yield* waitFor("the new entry", Effect.map(x402Entries, (e) => e.length >= 3 ? e : undefined))
      assert.deepStrictEqual(entries.map((e) => e.status), ["executed", "reorged", "executed"])
      const agentAll = yield* waitFor("the agent's new entry", Effect.map(agentEntries, (e) => e.length >= 3 ? e : undefined))
      assert.deepStrictEqual(agentAll.map((e) => e.status), ["executed", "reorged", "executed"])
      // Passes later, nothing more is written.
      yield* Effect.sleep(Duration.seconds(1))
      assert.lengthOf(yield* x402Entries, 3)
      assert.lengthOf(yield* agentEntries, 3)
      assert.strictEqual((yield* spent).spent, 0.01)
    }).pipe(Effect.provide(context))
  }).pipe(Effect.scoped), { timeout: 180_000 })
