/**
 * Owner operations as a client without the service would make them: the account's own call
 * data, sponsored by the local VerifyingPaymaster, signed by one of the account's devices (its
 * EOA owner key or a software passkey), sent straight to the bundler. Used by the tests of the
 * account's on-chain foundation (devices, panic key, guardians and recovery).
 */
import { assert } from "@effect/vitest"
import { Duration, Effect, Layer, Redacted, Schedule } from "effect"
import { type Address, createWalletClient, decodeEventLog, erc20Abi, type Hash, type Hex, hashTypedData, http, parseEther } from "viem"
import { entryPoint07Abi } from "viem/account-abstraction"
import { privateKeyToAccount } from "viem/accounts"
import { AccountStack, type Call, type CounterfactualAccount } from "../../src/chain/Accounts4337.ts"
import { Bundler, BundlerRejected, type UserOperationV07 } from "../../src/chain/Bundler.ts"
import { Chain, viemChainOf } from "../../src/chain/Chain.ts"
import { permitStablecoinAbi } from "../../src/chain/contracts/TokenPaymaster.ts"
import { passkeyStubSignature } from "../../src/chain/Devices.ts"
import { LocalNetwork, type LocalNetworkDescription } from "../../src/chain/LocalNetwork.ts"
import { Network } from "../../src/chain/Network.ts"
import { Paymaster } from "../../src/chain/Paymaster.ts"
import { decodeRevert } from "../../src/chain/RevertReasons.ts"
import type { SoftwareAuthenticator } from "./SoftwareAuthenticator.ts"

/** The chain layers over a given network (the run's shared one, or a network of the test file's own). */
export const chainLayers = <E, R>(network: Layer.Layer<Network | LocalNetwork, E, R>) =>
  Layer.mergeAll(
    Chain.layer,
    Bundler.layerWith({ timeout: Duration.seconds(20), retries: 1 }),
    AccountStack.layerHybridDeleGator,
    Paymaster.layer
  ).pipe(Layer.provideMerge(network))

export const sharedNetworkLayer = (description: LocalNetworkDescription) =>
  Layer.mergeAll(Layer.succeed(Network, description), Layer.succeed(LocalNetwork, description))

/** A device of the account: its EOA owner key or a passkey. */
export type Device =
  | { readonly kind: "eoa"; readonly key: Hex }
  | { readonly kind: "passkey"; readonly authenticator: SoftwareAuthenticator }

export const eoaDevice = (key: Hex): Device => ({ kind: "eoa", key })
export const passkeyDevice = (authenticator: SoftwareAuthenticator): Device => ({ kind: "passkey", authenticator })

/** The account's signature of a digest (a user operation's EIP-712 digest, an ERC-1271 hash) by `device`. */
export const signDigest = (device: Device, hash: Hash) =>
  device.kind === "eoa"
    ? Effect.promise(() => privateKeyToAccount(device.key).sign({ hash }))
    : Effect.sync(() => device.authenticator.sign(hash))

export interface OwnerOpOptions {
  readonly account: CounterfactualAccount
  readonly device: Device
  readonly calls: ReadonlyArray<Call>
  /** Skip estimation and use these limits (to get a reverting call included). */
  readonly fixedGas?: { readonly callGasLimit: bigint; readonly verificationGasLimit: bigint; readonly preVerificationGas: bigint }
  /** false: the account pays its own gas (it must hold ETH); the paymaster's signature is valid 10 minutes of wall time only. */
  readonly sponsored?: boolean
}

export const sendOwnerOp = (opts: OwnerOpOptions) =>
  Effect.gen(function*() {
    const chain = yield* Chain
    const bundler = yield* Bundler
    const stack = yield* AccountStack
    const paymaster = yield* Paymaster
    const deployed = yield* chain.isDeployed(opts.account.address)
    const nonce = yield* chain.entryPointNonce(opts.account.address, 0n)
    const fees = yield* chain.feeData
    const sponsoredOp = opts.sponsored ?? true
    const stub = sponsoredOp ? yield* paymaster.stub : undefined
    const base = {
      sender: opts.account.address,
      nonce,
      ...(deployed ? {} : { factory: opts.account.factory, factoryData: opts.account.factoryData }),
      callData: stack.encodeExecute(opts.calls),
      maxFeePerGas: fees.maxFeePerGas,
      maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
      signature: opts.device.kind === "eoa" ? stack.stubSignature : passkeyStubSignature(opts.device.authenticator.keyId)
    }
    const estimate = opts.fixedGas === undefined ? yield* bundler.estimateUserOperationGas({ ...base, ...stub }) : undefined
    const gas = opts.fixedGas ?? {
      callGasLimit: estimate!.callGasLimit,
      verificationGasLimit: estimate!.verificationGasLimit,
      preVerificationGas: estimate!.preVerificationGas
    }
    const sponsored = stub === undefined ? {} : yield* paymaster.sponsor({
      ...base,
      ...gas,
      paymasterVerificationGasLimit: estimate?.paymasterVerificationGasLimit ?? (estimate === undefined ? 100_000n : stub.paymasterVerificationGasLimit),
      paymasterPostOpGasLimit: estimate?.paymasterPostOpGasLimit ?? 0n
    })
    const unsigned = { ...base, ...gas, ...sponsored }
    const signature = yield* signDigest(opts.device, hashTypedData(stack.userOperationTypedData(unsigned)))
    const op: UserOperationV07 = { ...unsigned, signature }
    const hash = yield* bundler.sendUserOperation(op)
    return { hash, op }
  })

export const waitReceipt = (hash: Hash) =>
  Effect.gen(function*() {
    const bundler = yield* Bundler
    const receipt = yield* bundler.getUserOperationReceipt(hash)
    if (receipt === null) return yield* Effect.fail("pending" as const)
    return receipt
  }).pipe(
    Effect.retry({ schedule: Schedule.spaced(Duration.millis(100)), times: 300, while: (e) => e === "pending" }),
    Effect.orDie
  )

/** Sends and waits; the operation must execute. */
export const ownerOp = (opts: OwnerOpOptions) =>
  Effect.gen(function*() {
    const sent = yield* sendOwnerOp(opts)
    const receipt = yield* waitReceipt(sent.hash)
    assert.isTrue(receipt.success, `owner operation reverted: ${receipt.reason ?? ""}`)
    return receipt
  })

/** The revert reason the EntryPoint logged for an included operation that reverted. */
const revertReasonOf = (logs: ReadonlyArray<{ readonly topics: ReadonlyArray<Hex>; readonly data: Hex }>) => {
  for (const log of logs) {
    try {
      const ev = decodeEventLog({ abi: entryPoint07Abi, topics: log.topics as [Hex, ...Array<Hex>], data: log.data })
      if (ev.eventName === "UserOperationRevertReason") return decodeRevert(ev.args.revertReason) ?? ev.args.revertReason
    } catch {
      // another event
    }
  }
  return undefined
}

/**
 * The chain refuses the owner operation with `reason`: its simulation (the bundler's
 * estimation) reverts with it, and sent with its own gas limits it is included and reverts
 * with it (the EntryPoint's `UserOperationRevertReason`).
 */
export const refusedOwnerOp = (opts: OwnerOpOptions, reason: string) =>
  Effect.gen(function*() {
    const estimate = yield* sendOwnerOp(opts).pipe(Effect.flip)
    assert.instanceOf(estimate, BundlerRejected)
    assert.include((estimate as BundlerRejected).revertReason ?? (estimate as BundlerRejected).message, reason)
    const sent = yield* sendOwnerOp({
      ...opts,
      fixedGas: opts.fixedGas ?? { callGasLimit: 600_000n, verificationGasLimit: 800_000n, preVerificationGas: 100_000n }
    })
    const receipt = yield* waitReceipt(sent.hash)
    assert.isFalse(receipt.success, `the operation executed; it should have reverted with ${reason}`)
    const chain = yield* Chain
    const tx = yield* chain.getTransactionReceipt(receipt.transactionHash)
    assert.include(revertReasonOf(tx?.logs ?? []) ?? "", reason)
  })

/** ETH for an EOA that sends its own transactions (guardians, relayers). */
export const fundEth = (address: Address, eth = "10") =>
  Effect.gen(function*() {
    const chain = yield* Chain
    yield* Effect.promise(() =>
      chain.client.request({ method: "anvil_setBalance" as never, params: [address, `0x${parseEther(eth).toString(16)}`] as never })
    )
  })

/** Test USDC (6 decimals) minted by the deployer (unlocked on anvil: the node assigns the nonce). */
export const mintUsd = (to: Address, units: bigint) =>
  Effect.gen(function*() {
    const net = yield* LocalNetwork
    const chain = yield* Chain
    const wallet = createWalletClient({ chain: viemChainOf(net), transport: http(net.rpcUrl) })
    const hash = yield* Effect.promise(() =>
      wallet.writeContract({
        account: privateKeyToAccount(Redacted.value(net.deployerKey)).address,
        address: net.tokens.usd.address,
        abi: permitStablecoinAbi,
        functionName: "mint",
        args: [to, units]
      })
    )
    yield* Effect.promise(() => chain.client.waitForTransactionReceipt({ hash, pollingInterval: 50 }))
  })

export const usdBalance = (holder: Address) =>
  Effect.gen(function*() {
    const net = yield* LocalNetwork
    const chain = yield* Chain
    return yield* Effect.promise(() => chain.client.readContract({ address: net.tokens.usd.address, abi: erc20Abi, functionName: "balanceOf", args: [holder] }))
  })
