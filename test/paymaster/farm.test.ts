/**
 * The token paymaster cannot be farmed (issue 11): an attacker who bundles its own
 * operations (its own `handleOps`, its EOA as beneficiary, a high gas price) against the
 * run's TokenPaymaster, with an account that holds tokens but gives no allowance, is refused
 * at validation and the paymaster's EntryPoint deposit does not move; an operation that
 * drops its allowance and spends its tokens during execution has already paid; a stale
 * price and the estimation mode are refused by the EntryPoint itself. Nothing here goes
 * through the service: viem, MetaMask's kit and the chain only.
 */
import { Implementation, toMetaMaskSmartAccount } from "@metamask/smart-accounts-kit"
import { Effect, Redacted } from "effect"
import {
  type Abi,
  type Address,
  concat,
  createPublicClient,
  createWalletClient,
  decodeErrorResult,
  decodeEventLog,
  encodeDeployData,
  encodeFunctionData,
  erc20Abi,
  type Hex,
  http,
  maxUint256,
  numberToHex,
  pad,
  parseEther,
  parseGwei,
  parseUnits
} from "viem"
import { entryPoint07Abi, toPackedUserOperation } from "viem/account-abstraction"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { assert, describe, it } from "vitest"
import { viemChainOf } from "../../src/chain/Chain.ts"
import { tokenPaymasterAbi, tokenPaymasterBytecode } from "../../src/chain/contracts/TokenPaymaster.ts"
import { allowanceEstimationData, allowancePaymasterData } from "../../src/chain/TokenPaymaster.ts"
import { mint, testNetwork } from "../support/TestChain.ts"
import { sendFromDevAccount } from "../../src/chain/DevAccount.ts"

const net = testNetwork()
const chain = viemChainOf(net)
const publicClient = createPublicClient({ chain, transport: http(net.rpcUrl), pollingInterval: 50 })
const usdt = net.tokens.usdt
const HIGH_FEE = parseGwei("1000")

const ethBalance = (address: Address) => publicClient.getBalance({ address })
const tokenBalance = (address: Address) =>
  publicClient.readContract({ address: usdt.address, abi: erc20Abi, functionName: "balanceOf", args: [address] })
const depositOf = (address: Address) =>
  publicClient.readContract({ address: net.entryPoint, abi: entryPoint07Abi, functionName: "balanceOf", args: [address] })
const mined = async (hash: Hex) => {
  const receipt = await publicClient.waitForTransactionReceipt({ hash })
  return receipt
}

/** The EntryPoint's `FailedOp*` reason ("AA33 reverted") and the paymaster's own Error(string) inside it. */
const reasonOf = (message: string): string => {
  const code = message.match(/AA\d\d [a-z ]+/)?.[0] ?? message.slice(0, 200)
  const inner = message.match(/0x08c379a0[0-9a-f]+/)?.[0]
  if (inner === undefined) return code
  const decoded = decodeErrorResult({ abi: [{ type: "error", name: "Error", inputs: [{ name: "m", type: "string" }] }], data: inner as Hex })
  return `${code}: ${String(decoded.args[0])}`
}

/** A fresh attacker: its EOA (10 ETH, the bundler and beneficiary) and its smart account holding 10,000 USDT. */
const attacker = async () => {
  const eoa = privateKeyToAccount(generatePrivateKey())
  await publicClient.request({ method: "anvil_setBalance" as never, params: [eoa.address, numberToHex(parseEther("10"))] as never })
  const account = await toMetaMaskSmartAccount({
    client: publicClient as never,
    implementation: Implementation.Hybrid,
    deployParams: [eoa.address, [], [], []],
    deploySalt: pad("0x00", { size: 32 }),
    signer: { account: eoa },
    environment: net.delegation as never
  })
  await mined(await Effect.runPromise(mint("usdt", account.address, 10_000)))
  const wallet = createWalletClient({ chain, transport: http(net.rpcUrl), account: eoa })

  /** The attacker's operation through `paymaster` with `paymasterData`, signed by the account. */
  const op = async (paymaster: Address, paymasterData: Hex, calls: ReadonlyArray<{ to: Address; data: Hex }>) => {
    const factory = (await publicClient.getCode({ address: account.address })) === undefined ? await account.getFactoryArgs() : {}
    const unsigned = {
      sender: account.address,
      nonce: await account.getNonce(),
      ...factory,
      callData: await account.encodeCalls(calls.map((c) => ({ ...c, value: 0n }))),
      callGasLimit: 300_000n,
      verificationGasLimit: 1_000_000n,
      preVerificationGas: 100_000n,
      maxFeePerGas: HIGH_FEE,
      maxPriorityFeePerGas: HIGH_FEE,
      paymaster,
      paymasterVerificationGasLimit: 300_000n,
      paymasterPostOpGasLimit: 100_000n,
      paymasterData,
      signature: "0x" as Hex
    }
    const signature = await account.signUserOperation(unsigned as never)
    return toPackedUserOperation({ ...unsigned, signature } as never)
  }
  const handleOps = (packed: Awaited<ReturnType<typeof op>>) => ({
    address: net.entryPoint,
    abi: entryPoint07Abi,
    functionName: "handleOps" as const,
    args: [[packed], eoa.address] as const,
    account: eoa
  })
  /** The EntryPoint's verdict without mining: the revert message, or "" when it would execute. */
  const verdict = async (packed: Awaited<ReturnType<typeof op>>) => {
    try {
      await publicClient.simulateContract(handleOps(packed))
      return ""
    } catch (e) {
      return reasonOf(e instanceof Error ? e.message : String(e))
    }
  }
  /** Mined regardless of the verdict (a fixed gas limit, no estimation), at the attacker's high gas price. */
  const send = async (packed: Awaited<ReturnType<typeof op>>) =>
    mined(await wallet.writeContract({ ...handleOps(packed), gas: 5_000_000n, maxFeePerGas: HIGH_FEE, maxPriorityFeePerGas: HIGH_FEE }))
  /** The account deployed (its factory called by the EOA), then its allowance to `spender` given as the account on anvil. */
  const approveDirectly = async (spender: Address) => {
    const { factory, factoryData } = await account.getFactoryArgs()
    await mined(await wallet.sendTransaction({ to: factory!, data: factoryData! }))
    await publicClient.request({ method: "anvil_impersonateAccount" as never, params: [account.address] as never })
    await publicClient.request({ method: "anvil_setBalance" as never, params: [account.address, numberToHex(parseEther("1"))] as never })
    const asAccount = createWalletClient({ chain, transport: http(net.rpcUrl), account: account.address })
    await mined(await asAccount.writeContract({ address: usdt.address, abi: erc20Abi, functionName: "approve", args: [spender, maxUint256], chain }))
    await publicClient.request({ method: "anvil_stopImpersonatingAccount" as never, params: [account.address] as never })
    await publicClient.request({ method: "anvil_setBalance" as never, params: [account.address, "0x0"] as never })
  }
  return { eoa, account, op, verdict, send, approveDirectly }
}

describe("token paymaster: no farming", { timeout: 60_000 }, () => {
  it("self-bundled, tokens but no allowance: refused at validation (AA33), the deposit and the tokens untouched", async () => {
    const paymaster = net.tokenPaymaster!.address
    const a = await attacker()
    const transferAway = { to: usdt.address, data: encodeFunctionData({ abi: erc20Abi, functionName: "transfer", args: [a.eoa.address, 1n] }) }
    const packed = await a.op(paymaster, allowancePaymasterData(usdt.address), [transferAway])
    assert.match(await a.verdict(packed), /AA33 reverted: TokenPaymaster: allowance below the maximum cost/)

    const [depositBefore, tokensBefore, paymasterTokensBefore, eoaBefore] = await Promise.all([
      depositOf(paymaster),
      tokenBalance(a.account.address),
      tokenBalance(paymaster),
      ethBalance(a.eoa.address)
    ])
    // Ten tries, mined: each reverts as a whole and costs the attacker its own gas.
    for (let i = 0; i < 10; i++) {
      const receipt = await a.send(packed)
      assert.strictEqual(receipt.status, "reverted")
    }
    assert.strictEqual(await depositOf(paymaster), depositBefore, "the paymaster's EntryPoint deposit did not move")
    assert.strictEqual(await tokenBalance(a.account.address), tokensBefore)
    assert.strictEqual(await tokenBalance(paymaster), paymasterTokensBefore)
    assert.isBelow(Number(await ethBalance(a.eoa.address)), Number(eoaBefore), "the attacker only lost its own gas")
  })

  it("an operation that drops its allowance and spends its tokens during execution has already paid", async () => {
    const paymaster = net.tokenPaymaster!.address
    const a = await attacker()
    // The account's allowance to the paymaster, given directly (the account impersonated on anvil).
    await a.approveDirectly(paymaster)

    const everything = await tokenBalance(a.account.address)
    const calls = [
      { to: usdt.address, data: encodeFunctionData({ abi: erc20Abi, functionName: "approve", args: [paymaster, 0n] }) },
      { to: usdt.address, data: encodeFunctionData({ abi: erc20Abi, functionName: "transfer", args: [a.eoa.address, everything / 4n] }) }
    ]
    const packed = await a.op(paymaster, allowancePaymasterData(usdt.address), calls)
    const [depositBefore, paymasterTokensBefore] = await Promise.all([depositOf(paymaster), tokenBalance(paymaster)])
    const receipt = await a.send(packed)
    assert.strictEqual(receipt.status, "success")
    let actualGasCost = 0n
    let charged = 0n
    for (const log of receipt.logs) {
      try {
        const ev = decodeEventLog({ abi: [...entryPoint07Abi, ...tokenPaymasterAbi] as Abi, topics: log.topics, data: log.data }) as unknown as {
          eventName: string
          args: Record<string, unknown>
        }
        if (ev.eventName === "UserOperationEvent") actualGasCost = ev.args["actualGasCost"] as bigint
        if (ev.eventName === "GasCharged") charged = ev.args["tokenAmount"] as bigint
      } catch {
        // another event
      }
    }
    assert.isAbove(Number(actualGasCost), 0)
    assert.strictEqual(await depositOf(paymaster), depositBefore - actualGasCost)
    // The paymaster holds the charge: at least its own price of the ETH its deposit paid.
    const owed = await publicClient.readContract({ address: paymaster, abi: tokenPaymasterAbi, functionName: "tokenCost", args: [usdt.address, actualGasCost] })
    assert.isTrue(charged >= owed, `charged ${charged} for ${owed} owed`)
    assert.strictEqual(await tokenBalance(paymaster), paymasterTokensBefore + charged)
    assert.strictEqual(await tokenBalance(a.account.address), everything - everything / 4n - charged)
  })

  it("a stale price and the estimation mode are refused by the EntryPoint", async () => {
    const owner = privateKeyToAccount(Redacted.value(net.deployerKey)).address
    // A paymaster of this test's own (the run's is shared), its price age bound 0: any price set in an earlier block is stale.
    const paymaster = (await sendFromDevAccount(net.rpcUrl, {
      from: owner,
      data: encodeDeployData({ abi: tokenPaymasterAbi, bytecode: tokenPaymasterBytecode, args: [net.entryPoint, owner, 11_000n, 50_000n, 0n] })
    })).contractAddress!
    const write = (functionName: "setTokenPrice" | "setMaxPriceAge" | "deposit", args: ReadonlyArray<unknown>, value?: bigint) =>
      sendFromDevAccount(net.rpcUrl, {
        from: owner,
        to: paymaster,
        data: encodeFunctionData({ abi: tokenPaymasterAbi, functionName, args } as never),
        ...(value === undefined ? {} : { value })
      })
    await write("setTokenPrice", [usdt.address, parseUnits("3000", 6)])
    // Blocks mined after this one carry a later timestamp.
    await new Promise((resolve) => setTimeout(resolve, 1_100))
    await write("deposit", [], parseEther("5"))

    const a = await attacker()
    await a.approveDirectly(paymaster)

    const noop = [{ to: usdt.address, data: encodeFunctionData({ abi: erc20Abi, functionName: "transfer", args: [a.eoa.address, 0n] }) }]
    const allowanceOp = await a.op(paymaster, allowancePaymasterData(usdt.address), noop)
    assert.match(await a.verdict(allowanceOp), /AA33 reverted: TokenPaymaster: price too old/)
    const estimateOp = await a.op(paymaster, concat([allowanceEstimationData(usdt.address), "0x"]), noop)
    assert.match(await a.verdict(estimateOp), /AA33 reverted: TokenPaymaster: price too old/)

    await write("setMaxPriceAge", [3600n])
    assert.strictEqual(await a.verdict(allowanceOp), "", "a fresh price: the same operation executes")
    // The estimation mode does the work and fails the "signature": never executable.
    assert.match(await a.verdict(estimateOp), /AA34 signature error/)
  })
})
