/**
 * Fixtures for the ApprovalEnforcer tests on the run's local chain: funded fresh keys, a
 * deployed HybridDeleGator as an ERC-1271 approver, the chain's own clock, and the
 * single-call execution encoding the DelegationManager hands to enforcers.
 */
import { Effect } from "effect"
import { type Address, createPublicClient, createWalletClient, encodeFunctionData, encodePacked, erc20Abi, type Hex, http, parseEther } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { makeHybridDeleGator } from "../../src/chain/Accounts4337.ts"
import type { Execution } from "../../src/chain/Approvals.ts"
import { viemChainOf } from "../../src/chain/Chain.ts"
import { testNetwork } from "../support/TestChain.ts"

export const net = testNetwork()
export const chain = viemChainOf(net)
export const client = createPublicClient({ chain, transport: http(net.rpcUrl), pollingInterval: 50 })
export const approvalEnforcer = net.delegation.caveatEnforcers["ApprovalEnforcer"]!

/** A fresh key whose EOA holds 10 ETH (anvil_setBalance): it can send its own transactions. */
export const fundedKey = async () => {
  const key = generatePrivateKey()
  const account = privateKeyToAccount(key)
  await client.request({ method: "anvil_setBalance" as never, params: [account.address, `0x${parseEther("10").toString(16)}`] as never })
  return { key, account, wallet: createWalletClient({ chain, transport: http(net.rpcUrl), account }) }
}

/** A deployed HybridDeleGator owned by a fresh key (through its factory): an ERC-1271 signer. */
export const deployedAccount = async () => {
  const owner = await fundedKey()
  const stack = makeHybridDeleGator({ chainId: net.chainId, entryPoint: net.entryPoint, environment: net.delegation })
  const cf = await Effect.runPromise(stack.counterfactualAccount(owner.account.address, 0n))
  const hash = await owner.wallet.sendTransaction({ to: cf.factory, data: cf.factoryData })
  const receipt = await client.waitForTransactionReceipt({ hash })
  if (receipt.status !== "success") throw new Error("account deployment reverted")
  return { ...owner, address: cf.address }
}

/** The latest block's timestamp: the chain's clock (tests elsewhere move it forward). */
export const chainNow = async () => (await client.getBlock({ blockTag: "latest" })).timestamp

export const transferCall = (to: Address, units: bigint): Hex =>
  encodeFunctionData({ abi: erc20Abi, functionName: "transfer", args: [to, units] })

export const transferOf = (token: Address, to: Address, units: bigint): Execution => ({ target: token, value: 0n, callData: transferCall(to, units) })

/** A single call as the DelegationManager passes it to enforcers: target(20) ‖ value(32) ‖ callData. */
export const packed = (e: Execution): Hex => encodePacked(["address", "uint256", "bytes"], [e.target, e.value, e.callData])
