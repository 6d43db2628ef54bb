/**
 * Every branch of BasketPeriodEnforcer (src/chain/contracts/Basket.sol) on the run's local chain:
 * its hook called as a DelegationManager calls it, from a fresh key of the test's own (the state
 * is keyed by the caller, so each test's "manager" starts empty). The DelegationManager path, the
 * delegate's own redemption, is proven in test/delegations/basket.test.ts.
 */
import { assert, describe, it } from "@effect/vitest"
import {
  BaseError,
  ContractFunctionRevertedError,
  createPublicClient,
  createWalletClient,
  encodeFunctionData,
  encodePacked,
  erc20Abi,
  type Hex,
  http,
  pad,
  parseEther,
  parseUnits
} from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { basketTerms, decodeBasketTerms, MAX_BASKET_UNITS, toBasketUnits } from "../../src/chain/Basket.ts"
import { viemChainOf } from "../../src/chain/Chain.ts"
import { basketPeriodEnforcerAbi } from "../../src/chain/contracts/Basket.ts"
import { testNetwork } from "../support/TestChain.ts"

const net = testNetwork()
const chain = viemChainOf(net)
const client = createPublicClient({ chain, transport: http(net.rpcUrl), pollingInterval: 50 })
const enforcer = net.delegation.caveatEnforcers["BasketPeriodEnforcer"]!
const usdc = net.tokens.usd.address
const usdt = net.tokens.usdt.address
const dai = net.tokens.dai!.address
const someone = privateKeyToAccount(generatePrivateKey()).address

const SINGLE_DEFAULT: Hex = pad("0x00", { size: 32 })
const BATCH: Hex = pad("0x01", { dir: "right", size: 32 })
const SINGLE_TRY: Hex = pad("0x0001", { dir: "right", size: 32 })
const USD = (n: string) => parseUnits(n, 18)
const basket = (units: bigint, periodSeconds: number, startSeconds: number) =>
  basketTerms({ units, periodSeconds, startSeconds, tokens: [{ token: usdc, decimals: 6 }, { token: usdt, decimals: 6 }, { token: dai, decimals: 18 }] })
const transferData = (units: bigint) => encodeFunctionData({ abi: erc20Abi, functionName: "transfer", args: [someone, units] })
const execution = (target: Hex, callData: Hex, value = 0n) => encodePacked(["address", "uint256", "bytes"], [target, value, callData])
const hashOf = () => generatePrivateKey() as Hex

const reasonOf = (e: unknown) => {
  const revert = e instanceof BaseError ? e.walk((x) => x instanceof ContractFunctionRevertedError) : undefined
  return revert instanceof ContractFunctionRevertedError ? revert.reason ?? revert.shortMessage : String(e)
}

/** A caller of its own (the "DelegationManager"), with gas: its hooks are sent as transactions. */
const manager = async () => {
  const account = privateKeyToAccount(generatePrivateKey())
  await client.request({ method: "anvil_setBalance" as never, params: [account.address, `0x${parseEther("1").toString(16)}`] as never })
  const wallet = createWalletClient({ chain, transport: http(net.rpcUrl), account })
  /** `beforeHook` simulated then sent: "ok" once mined, or the revert reason (nothing sent). */
  const before = async (terms: Hex, exec: Hex, hash: Hex, mode: Hex = SINGLE_DEFAULT) => {
    try {
      const { request } = await client.simulateContract({
        account,
        // The pending block: the node's time now (the latest block may be older).
        blockTag: "pending",
        address: enforcer,
        abi: basketPeriodEnforcerAbi,
        functionName: "beforeHook",
        args: [terms, "0x", mode, exec, hash, someone, someone]
      })
      const receipt = await client.waitForTransactionReceipt({ hash: await wallet.writeContract(request) })
      return receipt.status === "success" ? "ok" : "reverted"
    } catch (e) {
      return reasonOf(e)
    }
  }
  const available = (terms: Hex, hash: Hex) =>
    client.readContract({ address: enforcer, abi: basketPeriodEnforcerAbi, functionName: "getAvailableAmount", args: [hash, account.address, terms], blockTag: "pending" })
  return { before, available, address: account.address }
}

const nowSeconds = async () => Number((await client.getBlock()).timestamp)

describe("BasketPeriodEnforcer", () => {
  it("is deployed on the local network, with an 18-decimals DAI beside the 6-decimals USDC and USDT", async () => {
    const code = await client.getCode({ address: enforcer })
    assert.isTrue(code !== undefined && code.length > 2)
    const decimals = await Promise.all([usdc, usdt, dai].map((address) => client.readContract({ address, abi: erc20Abi, functionName: "decimals" })))
    assert.deepStrictEqual(decimals, [6, 6, 18])
  })

  it("counts USDC, USDT and DAI against one allowance, each at 1:1 after its decimals; one unit over is refused", async () => {
    const m = await manager()
    const terms = basket(USD("100"), 3_600, (await nowSeconds()) - 60)
    const hash = hashOf()
    assert.strictEqual(await m.before(terms, execution(usdc, transferData(40_000_000n)), hash), "ok") // 40 USDC
    assert.strictEqual(await m.before(terms, execution(usdt, transferData(35_000_000n)), hash), "ok") // 35 USDT
    // 25 DAI (18 decimals) would end the allowance; 25 DAI and one wei is one wei too many.
    assert.strictEqual(await m.before(terms, execution(dai, transferData(USD("25") + 1n)), hash), "BasketPeriodEnforcer:basket-amount-exceeded")
    const [left, spent] = await m.available(terms, hash)
    assert.deepStrictEqual([left, spent], [USD("25"), USD("75")])
    assert.strictEqual(await m.before(terms, execution(dai, transferData(USD("25"))), hash), "ok")
    // The allowance is used up: one base unit of any basket token is refused.
    for (const token of [usdc, usdt, dai]) {
      assert.strictEqual(await m.before(terms, execution(token, transferData(1n)), hash), "BasketPeriodEnforcer:basket-amount-exceeded")
    }
    assert.deepStrictEqual((await m.available(terms, hash)).slice(0, 2), [0n, USD("100")])
  })

  it("keeps each (caller, delegation) apart: another delegation or another manager starts afresh", async () => {
    const m = await manager()
    const other = await manager()
    const terms = basket(USD("1"), 3_600, (await nowSeconds()) - 60)
    const hash = hashOf()
    assert.strictEqual(await m.before(terms, execution(usdc, transferData(1_000_000n)), hash), "ok")
    assert.strictEqual(await m.before(terms, execution(usdc, transferData(1n)), hash), "BasketPeriodEnforcer:basket-amount-exceeded")
    assert.strictEqual(await m.before(terms, execution(usdc, transferData(1_000_000n)), hashOf()), "ok")
    assert.deepStrictEqual((await other.available(terms, hash)).slice(0, 2), [USD("1"), 0n], "the other caller's allowance is untouched")
  })

  it("renews every period (what is unspent does not carry over) and refuses before the start", async () => {
    const m = await manager()
    // Wall-clock seconds: each transaction's block takes the node's time (anvil mines on demand).
    const wall = () => Date.now() / 1000
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
    const period = 6
    const start = Math.floor(wall()) + 4
    const terms = basket(USD("2"), period, start)
    const hash = hashOf()
    assert.strictEqual(await m.before(terms, execution(usdc, transferData(1n)), hash), "BasketPeriodEnforcer:transfer-not-started")
    // At the beginning of a period, so that the spend and the refusal fall inside it (4 s of slack).
    while (wall() < start + 0.2 || (wall() - start) % period > 2) await sleep(100)
    assert.strictEqual(await m.before(terms, execution(usdc, transferData(2_000_000n)), hash), "ok")
    assert.strictEqual(await m.before(terms, execution(dai, transferData(1n)), hash), "BasketPeriodEnforcer:basket-amount-exceeded")
    const [, spent, first] = await m.available(terms, hash)
    assert.strictEqual(spent, USD("2"))
    // The next period: the allowance in full again, spent in the other token.
    const next = start + Number(first) * period
    while (wall() < next + 0.2) await sleep(100)
    assert.strictEqual(await m.before(terms, execution(dai, transferData(USD("2"))), hash), "ok")
    const [left, spentNow, current] = await m.available(terms, hash)
    assert.deepStrictEqual([left, spentNow, current > first], [0n, USD("2"), true])
  })

  it("refuses a token outside the basket, anything but transfer, value, batch and try modes", async () => {
    const m = await manager()
    const terms = basket(USD("100"), 3_600, (await nowSeconds()) - 60)
    const hash = hashOf()
    assert.strictEqual(await m.before(terms, execution(someone, transferData(1n)), hash), "BasketPeriodEnforcer:token-not-in-basket")
    const approve = encodeFunctionData({ abi: erc20Abi, functionName: "approve", args: [someone, 1n] })
    const exact = transferData(1n)
    for (const data of [approve, "0x" as Hex, `${exact}00` as Hex, exact.slice(0, -2) as Hex]) {
      assert.strictEqual(await m.before(terms, execution(usdc, data), hash), "BasketPeriodEnforcer:invalid-method", data)
    }
    assert.strictEqual(await m.before(terms, execution(usdc, exact, 1n), hash), "BasketPeriodEnforcer:invalid-value")
    assert.strictEqual(await m.before(terms, execution(usdc, exact), hash, BATCH), "BasketPeriodEnforcer:invalid-call-type")
    assert.strictEqual(await m.before(terms, execution(usdc, exact), hash, SINGLE_TRY), "BasketPeriodEnforcer:invalid-execution-type")
    assert.strictEqual(await m.before(terms, "0x1234", hash), "BasketPeriodEnforcer:invalid-execution-length")
  })

  it("refuses terms that cannot hold a basket, and the decoder reads what the contract reads", async () => {
    const m = await manager()
    const now = await nowSeconds()
    const exec = execution(usdc, transferData(1n))
    const good = basket(USD("5"), 60, now - 10)
    assert.deepStrictEqual(decodeBasketTerms(good), {
      units: USD("5"), periodSeconds: 60, startSeconds: now - 10,
      tokens: [{ token: usdc.toLowerCase(), decimals: 6 }, { token: usdt.toLowerCase(), decimals: 6 }, { token: dai.toLowerCase(), decimals: 18 }]
    } as never)
    const info = await client.readContract({ address: enforcer, abi: basketPeriodEnforcerAbi, functionName: "getTermsInfo", args: [good] })
    assert.deepStrictEqual(info, [USD("5"), 60n, BigInt(now - 10)])
    const cases: ReadonlyArray<readonly [Hex, string]> = [
      [good.slice(0, 2 + 96 * 2) as Hex, "BasketPeriodEnforcer:invalid-terms-length"],
      [`${good}00` as Hex, "BasketPeriodEnforcer:invalid-terms-length"],
      [basket(0n, 60, now), "BasketPeriodEnforcer:invalid-zero-amount"],
      [basket(MAX_BASKET_UNITS, 60, now), "BasketPeriodEnforcer:invalid-amount"],
      [basket(1n, 0, now), "BasketPeriodEnforcer:invalid-zero-duration"],
      [basket(1n, 60, 0), "BasketPeriodEnforcer:invalid-zero-start-date"],
      [basketTerms({ units: 1n, periodSeconds: 60, startSeconds: now - 10, tokens: [{ token: usdc, decimals: 19 }] }), "BasketPeriodEnforcer:invalid-decimals"]
    ]
    for (const [terms, reason] of cases) {
      assert.strictEqual(await m.before(terms, exec, hashOf()), reason, reason)
      if (reason !== "BasketPeriodEnforcer:invalid-decimals") assert.isUndefined(decodeBasketTerms(terms), reason)
    }
    assert.isUndefined(decodeBasketTerms(basketTerms({ units: 1n, periodSeconds: 60, startSeconds: 1, tokens: [{ token: usdc, decimals: 19 }] })))
    assert.strictEqual(toBasketUnits(1n, 6), 10n ** 12n)
  })
})
