/**
 * Every branch of our own caveat enforcer, TransferCapEnforcer (src/chain/contracts/Enforcers.sol),
 * on the run's local chain: its hooks called as the DelegationManager calls them (the
 * DelegationManager path itself is proven in bypass.test.ts).
 */
import { assert, describe, it } from "@effect/vitest"
import { BaseError, ContractFunctionRevertedError, createPublicClient, encodeFunctionData, encodePacked, erc20Abi, type Hex, http, pad } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { viemChainOf } from "../../src/chain/Chain.ts"
import { transferCapEnforcerAbi } from "../../src/chain/contracts/Enforcers.ts"
import { transferCapTerms } from "../../src/delegations/Grant.ts"
import { testNetwork } from "../support/TestChain.ts"

const net = testNetwork()
const client = createPublicClient({ chain: viemChainOf(net), transport: http(net.rpcUrl) })
const enforcer = net.delegation.caveatEnforcers["TransferCapEnforcer"]!
const usdc = net.tokens.usd.address
const usdt = net.tokens.usdt.address
const someone = privateKeyToAccount(generatePrivateKey()).address

const SINGLE_DEFAULT: Hex = pad("0x00", { size: 32 })
const BATCH: Hex = pad("0x01", { dir: "right", size: 32 })
const SINGLE_TRY: Hex = pad("0x0001", { dir: "right", size: 32 })
const terms = transferCapTerms([{ token: usdc, perActionUnits: 3_000_000n }, { token: usdt, perActionUnits: 1_000_000n }])
const transferData = (units: bigint) => encodeFunctionData({ abi: erc20Abi, functionName: "transfer", args: [someone, units] })
const execution = (target: Hex, callData: Hex, value = 0n) => encodePacked(["address", "uint256", "bytes"], [target, value, callData])

/** `beforeHook` by eth_call: "ok" or the revert reason. */
const before = async (t: Hex, mode: Hex, exec: Hex) => {
  try {
    await client.simulateContract({
      address: enforcer,
      abi: transferCapEnforcerAbi,
      functionName: "beforeHook",
      args: [t, "0x", mode, exec, pad("0x01", { size: 32 }), someone, someone]
    })
    return "ok"
  } catch (e) {
    const revert = e instanceof BaseError ? e.walk((x) => x instanceof ContractFunctionRevertedError) : undefined
    return revert instanceof ContractFunctionRevertedError ? revert.reason ?? revert.shortMessage : String(e)
  }
}

describe("TransferCapEnforcer", () => {
  it("is deployed on the local network", async () => {
    const code = await client.getCode({ address: enforcer })
    assert.isTrue(code !== undefined && code.length > 2)
  })

  it("lets a transfer up to each token's cap through", async () => {
    assert.strictEqual(await before(terms, SINGLE_DEFAULT, execution(usdc, transferData(3_000_000n))), "ok")
    assert.strictEqual(await before(terms, SINGLE_DEFAULT, execution(usdt, transferData(1_000_000n))), "ok")
    assert.strictEqual(await before(terms, SINGLE_DEFAULT, execution(usdc, transferData(0n))), "ok")
  })

  it("refuses one unit over the token's own cap (the other token's larger cap does not apply)", async () => {
    assert.strictEqual(await before(terms, SINGLE_DEFAULT, execution(usdc, transferData(3_000_001n))), "TransferCapEnforcer:amount-exceeded")
    assert.strictEqual(await before(terms, SINGLE_DEFAULT, execution(usdt, transferData(1_000_001n))), "TransferCapEnforcer:amount-exceeded")
  })

  it("refuses a token not in the terms", async () => {
    assert.strictEqual(await before(terms, SINGLE_DEFAULT, execution(someone, transferData(1n))), "TransferCapEnforcer:token-not-allowed")
  })

  it("refuses anything but exactly transfer(address,uint256)", async () => {
    const approve = encodeFunctionData({ abi: erc20Abi, functionName: "approve", args: [someone, 1n] })
    const transferFrom = encodeFunctionData({ abi: erc20Abi, functionName: "transferFrom", args: [someone, someone, 1n] })
    const exact = transferData(1n)
    for (const data of [approve, transferFrom, "0x" as Hex, `${exact}00` as Hex, exact.slice(0, -2) as Hex]) {
      assert.strictEqual(await before(terms, SINGLE_DEFAULT, execution(usdc, data)), "TransferCapEnforcer:invalid-method", data)
    }
  })

  it("refuses batch and try modes", async () => {
    assert.strictEqual(await before(terms, BATCH, execution(usdc, transferData(1n))), "TransferCapEnforcer:invalid-call-type")
    assert.strictEqual(await before(terms, SINGLE_TRY, execution(usdc, transferData(1n))), "TransferCapEnforcer:invalid-execution-type")
  })

  it("refuses malformed terms and execution data", async () => {
    assert.strictEqual(await before("0x", SINGLE_DEFAULT, execution(usdc, transferData(1n))), "TransferCapEnforcer:invalid-terms-length")
    assert.strictEqual(await before(terms.slice(0, -2) as Hex, SINGLE_DEFAULT, execution(usdc, transferData(1n))), "TransferCapEnforcer:invalid-terms-length")
    assert.strictEqual(await before(terms, SINGLE_DEFAULT, usdc), "TransferCapEnforcer:invalid-execution-length")
  })

  it("the other hooks accept anything; capOf reads the first entry naming the token", async () => {
    for (const functionName of ["beforeAllHook", "afterHook", "afterAllHook"] as const) {
      await client.simulateContract({
        address: enforcer,
        abi: transferCapEnforcerAbi,
        functionName,
        args: [terms, "0x", BATCH, "0x", pad("0x01", { size: 32 }), someone, someone]
      })
    }
    const twice = transferCapTerms([{ token: usdc, perActionUnits: 5n }, { token: usdc, perActionUnits: 9n }])
    assert.deepStrictEqual(await client.readContract({ address: enforcer, abi: transferCapEnforcerAbi, functionName: "capOf", args: [twice, usdc] }), [true, 5n])
    assert.deepStrictEqual(await client.readContract({ address: enforcer, abi: transferCapEnforcerAbi, functionName: "capOf", args: [twice, usdt] }), [false, 0n])
  })
})
