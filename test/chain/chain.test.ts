/**
 * The chain layers against the real local network (anvil + canonical EntryPoint v0.7 +
 * Delegation Framework + Alto), started once for this file, plus the fake Bundler.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import verifyingPaymasterArtifact from "@account-abstraction/contracts/artifacts/VerifyingPaymaster.json" with { type: "json" }
import { DelegationManager } from "@metamask/delegation-abis"
import { createDelegation, Implementation, toMetaMaskSmartAccount } from "@metamask/smart-accounts-kit"
import { Duration, Effect, Layer, Redacted, Schedule } from "effect"
import * as http from "node:http"
import {
  type Abi,
  type Address,
  createPublicClient,
  createWalletClient,
  decodeFunctionResult,
  encodeFunctionData,
  erc20Abi,
  type Hash,
  type Hex,
  http as viemHttp
} from "viem"
import { toPackedUserOperation } from "viem/account-abstraction"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { AccountStack } from "../../src/chain/Accounts4337.ts"
import {
  Bundler,
  BundlerRejected,
  BundlerTimeout,
  BundlerUnavailable,
  type UserOperationV07
} from "../../src/chain/Bundler.ts"
import { FakeBundlerCalls, layerFakeBundler } from "../../src/chain/FakeBundler.ts"
import { CallReverted, Chain, viemChainOf } from "../../src/chain/Chain.ts"
import { permitStablecoinAbi as testStablecoinAbi } from "../../src/chain/contracts/TokenPaymaster.ts"
import { LocalNetwork } from "../../src/chain/LocalNetwork.ts"
import { ENTRY_POINT_V07, Network } from "../../src/chain/Network.ts"
import { Paymaster, verifyingPaymasterHash } from "../../src/chain/Paymaster.ts"

process.env.DO_NOT_TRACK = "1"

const ChainLayers = Layer.mergeAll(
  Chain.layer,
  Bundler.layerWith({ timeout: Duration.seconds(10), retries: 1 }),
  AccountStack.layerHybridDeleGator,
  Paymaster.layer
).pipe(Layer.provideMerge(LocalNetwork.layerNetwork))

const USDC = (n: number) => BigInt(Math.round(n * 1_000_000))

/** Mints test USDC to `to` from the deployer (the token's minter). */
const mint = (to: Address, amount: bigint) =>
  Effect.gen(function*() {
    const net = yield* LocalNetwork
    const chain = viemChainOf(net)
    const wallet = createWalletClient({
      chain,
      transport: viemHttp(net.rpcUrl),
      account: privateKeyToAccount(Redacted.value(net.deployerKey))
    })
    const client = createPublicClient({ chain, transport: viemHttp(net.rpcUrl), pollingInterval: 20 })
    yield* Effect.promise(async () => {
      const hash = await wallet.writeContract({
        address: net.tokens.usd.address,
        abi: testStablecoinAbi,
        functionName: "mint",
        args: [to, amount]
      })
      await client.waitForTransactionReceipt({ hash })
    })
  })

/** Builds, sponsors, signs (with `signerKey`) and sends one operation of `owner`'s account #`index`. */
const sendOp = (opts: {
  readonly ownerKey: Hex
  readonly signerKey?: Hex
  readonly index?: bigint
  readonly callData: Hex
  /** Skip estimation and use these limits (to get a reverting call included). */
  readonly fixedGas?: { readonly callGasLimit: bigint; readonly verificationGasLimit: bigint; readonly preVerificationGas: bigint }
}) =>
  Effect.gen(function*() {
    const chain = yield* Chain
    const bundler = yield* Bundler
    const stack = yield* AccountStack
    const paymaster = yield* Paymaster
    const owner = privateKeyToAccount(opts.ownerKey).address
    const account = yield* stack.counterfactualAccount(owner, opts.index ?? 0n)
    const deployed = yield* chain.isDeployed(account.address)
    const nonce = yield* chain.entryPointNonce(account.address, 0n)
    const fees = yield* chain.feeData
    const stub = yield* paymaster.stub
    const base = {
      sender: account.address,
      nonce,
      ...(deployed ? {} : { factory: account.factory, factoryData: account.factoryData }),
      callData: opts.callData,
      maxFeePerGas: fees.maxFeePerGas,
      maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
      signature: stack.stubSignature
    }
    const gas = opts.fixedGas !== undefined
      ? { ...opts.fixedGas, paymasterVerificationGasLimit: 100_000n, paymasterPostOpGasLimit: 0n }
      : yield* bundler.estimateUserOperationGas({ ...base, ...stub }).pipe(
        Effect.map((g) => ({
          callGasLimit: g.callGasLimit,
          verificationGasLimit: g.verificationGasLimit,
          preVerificationGas: g.preVerificationGas,
          paymasterVerificationGasLimit: g.paymasterVerificationGasLimit ?? stub.paymasterVerificationGasLimit,
          paymasterPostOpGasLimit: g.paymasterPostOpGasLimit ?? 0n
        }))
      )
    const sponsored = yield* paymaster.sponsor({ ...base, ...gas })
    const unsigned = { ...base, ...gas, ...sponsored }
    const signature = yield* stack.signUserOperation(opts.signerKey ?? opts.ownerKey, unsigned)
    const op: UserOperationV07 = { ...unsigned, signature }
    const hash = yield* bundler.sendUserOperation(op)
    return { hash, op, account }
  })

const waitReceipt = (hash: Hash) =>
  Effect.gen(function*() {
    const bundler = yield* Bundler
    const receipt = yield* bundler.getUserOperationReceipt(hash)
    if (receipt === null) return yield* Effect.fail("pending" as const)
    return receipt
  }).pipe(
    Effect.retry({ while: (e) => e === "pending", schedule: Schedule.spaced(Duration.millis(50)), times: 200 })
  )

const transferData = (to: Address, amount: bigint) =>
  encodeFunctionData({ abi: erc20Abi, functionName: "transfer", args: [to, amount] })

layer(ChainLayers, { timeout: Duration.seconds(60), excludeTestServices: true })("local network", (it) => {
  it.effect("the bundler serves the canonical EntryPoint on chain 31337", () =>
    Effect.gen(function*() {
      const bundler = yield* Bundler
      const chain = yield* Chain
      const net = yield* Network
      const eps = yield* bundler.supportedEntryPoints
      assert.deepStrictEqual(eps.map((a) => a.toLowerCase()), [ENTRY_POINT_V07.toLowerCase()])
      assert.strictEqual(chain.chainId, 31337)
      assert.isTrue(yield* chain.isDeployed(ENTRY_POINT_V07))
      assert.isTrue(yield* chain.isDeployed(net.delegation.DelegationManager))
      assert.isTrue(yield* chain.isDeployed(net.tokens.usd.address))
      assert.isTrue(yield* chain.isDeployed(net.tokens.usdt.address))
      const fees = yield* chain.feeData
      assert.isTrue(fees.maxFeePerGas >= fees.maxPriorityFeePerGas && fees.maxPriorityFeePerGas > 0n)
    }))

  it.effect("counterfactual address matches the kit's HybridDeleGator account", () =>
    Effect.gen(function*() {
      const stack = yield* AccountStack
      const net = yield* LocalNetwork
      const owner = privateKeyToAccount(generatePrivateKey())
      const ours = yield* stack.counterfactualAccount(owner.address, 7n)
      const kit = yield* Effect.promise(() =>
        toMetaMaskSmartAccount({
          client: createPublicClient({ chain: viemChainOf(net), transport: viemHttp(net.rpcUrl) }),
          implementation: Implementation.Hybrid,
          deployParams: [owner.address, [], [], []],
          deploySalt: "0x0000000000000000000000000000000000000000000000000000000000000007",
          environment: net.delegation as never,
          signer: { account: owner }
        })
      )
      assert.strictEqual(ours.address, kit.address)
      const other = yield* stack.counterfactualAccount(owner.address, 8n)
      assert.notStrictEqual(other.address, ours.address)
      // call data round trip, single and batch
      const calls = [{ to: net.tokens.usd.address, value: 0n, data: transferData(owner.address, 5n) }]
      assert.deepStrictEqual(stack.decodeExecute(stack.encodeExecute(calls)), calls)
      const batch = [...calls, { to: owner.address, value: 3n, data: "0x" as Hex }]
      assert.deepStrictEqual(stack.decodeExecute(stack.encodeExecute(batch)), batch)
    }))

  it.effect("deploys a fresh owner's account through a sponsored user operation and moves tokens", () =>
    Effect.gen(function*() {
      const chain = yield* Chain
      const net = yield* LocalNetwork
      const ownerKey = generatePrivateKey()
      const recipient = privateKeyToAccount(generatePrivateKey()).address
      const stack = yield* AccountStack
      const account = yield* stack.counterfactualAccount(privateKeyToAccount(ownerKey).address, 0n)
      assert.isFalse(yield* chain.isDeployed(account.address))
      yield* mint(account.address, USDC(10))

      const sent = yield* sendOp({
        ownerKey,
        callData: stack.encodeExecute([{ to: net.tokens.usd.address, data: transferData(recipient, USDC(2.5)) }])
      })
      // The paymaster hash we sign equals the contract's own getHash.
      const onChainHash = yield* chain.call({
        to: net.paymaster.address,
        data: encodeFunctionData({
          abi: verifyingPaymasterArtifact.abi as Abi,
          functionName: "getHash",
          args: [toPackedUserOperation(sent.op), 0, 0]
        })
      })
      assert.strictEqual(onChainHash, verifyingPaymasterHash(sent.op, net.paymaster.address, net.chainId, 0, 0))

      const receipt = yield* waitReceipt(sent.hash)
      assert.isTrue(receipt.success)
      assert.strictEqual(receipt.userOpHash, sent.hash)
      assert.strictEqual(receipt.sender.toLowerCase(), account.address.toLowerCase())
      assert.strictEqual(receipt.paymaster?.toLowerCase(), net.paymaster.address.toLowerCase())
      assert.isTrue(yield* chain.isDeployed(account.address))
      assert.strictEqual(yield* chain.erc20Balance(net.tokens.usd.address, recipient), USDC(2.5))
      assert.strictEqual(yield* chain.erc20Balance(net.tokens.usd.address, account.address), USDC(7.5))
      assert.strictEqual(yield* chain.entryPointNonce(account.address), 1n)
      assert.strictEqual(yield* chain.nativeBalance(account.address), 0n) // sponsored: never held gas
      const tx = yield* chain.getTransactionReceipt(receipt.transactionHash)
      assert.strictEqual(tx?.status, "success")
      assert.strictEqual(yield* chain.permitNonce(net.tokens.usd.address, account.address), 0n)
      assert.strictEqual(yield* chain.erc20Allowance(net.tokens.usd.address, account.address, recipient), 0n)

      // A bad signature (another key) is refused by the bundler with ERC-7769 -32507.
      const bad = yield* sendOp({
        ownerKey,
        signerKey: generatePrivateKey(),
        callData: stack.encodeExecute([{ to: net.tokens.usd.address, data: transferData(recipient, 1n) }])
      }).pipe(Effect.flip)
      assert.instanceOf(bad, BundlerRejected)
      assert.strictEqual((bad as BundlerRejected).code, -32507)
      assert.strictEqual((bad as BundlerRejected).reason, "invalid_signature")
      assert.include((bad as BundlerRejected).message, "AA24")

      // Estimation of a reverting call fails with a typed rejection ...
      const overdraw = stack.encodeExecute([{ to: net.tokens.usd.address, data: transferData(recipient, USDC(1000)) }])
      const estimateFailure = yield* sendOp({ ownerKey, callData: overdraw }).pipe(Effect.flip)
      assert.instanceOf(estimateFailure, BundlerRejected)
      assert.strictEqual((estimateFailure as BundlerRejected).code, -32521)
      assert.strictEqual((estimateFailure as BundlerRejected).reason, "execution_reverted")
      assert.strictEqual((estimateFailure as BundlerRejected).revertReason, "ERC20: insufficient balance")
      // ... sent with its own gas limits, it is included and reverts.
      const reverting = yield* sendOp({
        ownerKey,
        callData: overdraw,
        fixedGas: { callGasLimit: 200_000n, verificationGasLimit: 300_000n, preVerificationGas: 60_000n }
      })
      const reverted = yield* waitReceipt(reverting.hash)
      assert.isFalse(reverted.success)
      assert.strictEqual((yield* chain.getTransactionReceipt(reverted.transactionHash))?.status, "success")
      assert.strictEqual(yield* chain.erc20Balance(net.tokens.usd.address, account.address), USDC(7.5))
      assert.strictEqual(yield* chain.entryPointNonce(account.address), 2n)
    }))

  it.effect("revoking a delegation: permission id = getDelegationHash, decoded from the call data, disabled on chain", () =>
    Effect.gen(function*() {
      const chain = yield* Chain
      const net = yield* LocalNetwork
      const stack = yield* AccountStack
      const ownerKey = generatePrivateKey()
      const account = yield* stack.counterfactualAccount(privateKeyToAccount(ownerKey).address, 0n)
      const delegation = createDelegation({
        environment: net.delegation as never,
        from: account.address,
        to: privateKeyToAccount(generatePrivateKey()).address,
        scope: { type: "erc20TransferAmount", tokenAddress: net.tokens.usd.address, maxAmount: USDC(50) }
      })
      const permissionId = stack.permissionIdOf(delegation)
      const onChain = yield* chain.call({
        to: net.delegation.DelegationManager,
        data: encodeFunctionData({
          abi: DelegationManager,
          functionName: "getDelegationHash",
          args: [{ ...delegation, salt: BigInt(delegation.salt) }]
        })
      })
      assert.strictEqual(onChain, permissionId)
      const callData = stack.encodeDisableDelegation(delegation)
      assert.strictEqual(stack.decodeRevokedPermissionId(callData), permissionId)
      assert.isUndefined(stack.decodeRevokedPermissionId(stack.encodeExecute([{ to: account.address }])))

      const sent = yield* sendOp({ ownerKey, callData })
      assert.isTrue((yield* waitReceipt(sent.hash)).success)
      const disabled = yield* chain.call({
        to: net.delegation.DelegationManager,
        data: encodeFunctionData({ abi: DelegationManager, functionName: "disabledDelegations", args: [permissionId] })
      })
      assert.isTrue(decodeFunctionResult({ abi: DelegationManager, functionName: "disabledDelegations", data: disabled }))
    }))

  it.effect("eth_call reverts are typed with their reason", () =>
    Effect.gen(function*() {
      const chain = yield* Chain
      const net = yield* LocalNetwork
      const err = yield* chain.call({
        to: net.tokens.usd.address,
        data: encodeFunctionData({ abi: testStablecoinAbi, functionName: "mint", args: [net.paymaster.address, 1n] }),
        from: net.paymaster.address
      }).pipe(Effect.flip)
      assert.instanceOf(err, CallReverted)
      assert.include((err as CallReverted).reason ?? "", "not minter")
    }))
})

/** A bundler stand-in on 127.0.0.1 answering each request with the next scripted reply. */
const stubServer = (replies: ReadonlyArray<{ status: number; body?: unknown; delayMs?: number }>) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<{ url: string; hits: () => number; close: () => void }>((resolve) => {
        let hits = 0
        const server = http.createServer((req, res) => {
          req.resume()
          const reply = replies[Math.min(hits, replies.length - 1)]!
          hits++
          setTimeout(() => {
            res.writeHead(reply.status, { "content-type": "application/json" })
            res.end(reply.body === undefined ? "" : JSON.stringify(reply.body))
          }, reply.delayMs ?? 0)
        })
        server.listen(0, "127.0.0.1", () => {
          const addr = server.address() as { port: number }
          resolve({ url: `http://127.0.0.1:${addr.port}`, hits: () => hits, close: () => server.close() })
        })
      })
    ),
    (s) => Effect.sync(() => s.close())
  )

const networkAt = (bundlerUrl: string) =>
  Network.layer({
    chainId: 31337,
    name: "Local devnet",
    rpcUrl: "http://127.0.0.1:1",
    bundlerUrl,
    entryPoint: ENTRY_POINT_V07,
    delegation: { DelegationManager: ENTRY_POINT_V07, EntryPoint: ENTRY_POINT_V07, SimpleFactory: ENTRY_POINT_V07, implementations: {}, caveatEnforcers: {} },
    tokens: {
      usd: { address: ENTRY_POINT_V07, symbol: "USDC", name: "USD Coin", decimals: 6 },
      usdt: { address: ENTRY_POINT_V07, symbol: "USDT", name: "Tether USD", decimals: 6 }
    },
    paymaster: undefined
  })

const withBundlerAt = <A, E>(url: string, options: { timeout: Duration.Input; retries: number }, body: Effect.Effect<A, E, Bundler>) =>
  body.pipe(Effect.provide(Bundler.layerWith(options).pipe(Layer.provide(networkAt(url)))))

describe("Bundler over HTTP (stand-in servers)", () => {
  it.live("retries transport faults (5xx) and then succeeds", () =>
    Effect.gen(function*() {
      const s = yield* stubServer([
        { status: 502 },
        { status: 200, body: { jsonrpc: "2.0", id: 1, result: [ENTRY_POINT_V07] } }
      ])
      const eps = yield* withBundlerAt(s.url, { timeout: "2 seconds", retries: 2 }, Effect.gen(function*() { const b = yield* Bundler; return yield* b.supportedEntryPoints }))
      assert.deepStrictEqual(eps, [ENTRY_POINT_V07])
      assert.strictEqual(s.hits(), 2)
    }).pipe(Effect.scoped))

  it.live("never retries a JSON-RPC error, and maps its ERC-7769 code", () =>
    Effect.gen(function*() {
      const s = yield* stubServer([
        { status: 200, body: { jsonrpc: "2.0", id: 1, error: { code: -32501, message: "AA33 reverted" } } }
      ])
      const err = yield* withBundlerAt(
        s.url,
        { timeout: "2 seconds", retries: 3 },
        Effect.gen(function*() { const b = yield* Bundler; return yield* b.getUserOperationReceipt(`0x${"11".repeat(32)}`) })
      ).pipe(Effect.flip)
      assert.instanceOf(err, BundlerRejected)
      assert.strictEqual((err as BundlerRejected).code, -32501)
      assert.strictEqual((err as BundlerRejected).reason, "rejected_by_paymaster")
      assert.strictEqual(s.hits(), 1)
    }).pipe(Effect.scoped))

  it.live("times out a slow answer once (a timed-out call is not retried: issue 45) and reports BundlerTimeout", () =>
    Effect.gen(function*() {
      const s = yield* stubServer([{ status: 200, body: { jsonrpc: "2.0", id: 1, result: null }, delayMs: 1500 }])
      const err = yield* withBundlerAt(
        s.url,
        { timeout: "150 millis", retries: 1 },
        Effect.gen(function*() { const b = yield* Bundler; return yield* b.getUserOperationReceipt(`0x${"11".repeat(32)}`) })
      ).pipe(Effect.flip)
      assert.instanceOf(err, BundlerTimeout)
      assert.strictEqual(s.hits(), 1)
    }).pipe(Effect.scoped))

  it.live("a closed port is BundlerUnavailable; a null receipt is null", () =>
    Effect.gen(function*() {
      const err = yield* withBundlerAt(
        "http://127.0.0.1:1",
        { timeout: "1 second", retries: 1 },
        Effect.gen(function*() { const b = yield* Bundler; return yield* b.supportedEntryPoints })
      ).pipe(Effect.flip)
      assert.instanceOf(err, BundlerUnavailable)
      const s = yield* stubServer([{ status: 200, body: { jsonrpc: "2.0", id: 1, result: null } }])
      const receipt = yield* withBundlerAt(
        s.url,
        { timeout: "1 second", retries: 0 },
        Effect.gen(function*() { const b = yield* Bundler; return yield* b.getUserOperationReceipt(`0x${"11".repeat(32)}`) })
      )
      assert.isNull(receipt)
    }).pipe(Effect.scoped))
})

describe("layerFakeBundler", () => {
  const hash: Hash = `0x${"ab".repeat(32)}`
  it.effect("plays scripted results and faults in order and records the calls", () =>
    Effect.gen(function*() {
      const bundler = yield* Bundler
      const calls = yield* FakeBundlerCalls
      const op = { sender: ENTRY_POINT_V07, nonce: 0n } as UserOperationV07
      const first = yield* bundler.sendUserOperation(op).pipe(Effect.flip)
      assert.instanceOf(first, BundlerUnavailable)
      assert.strictEqual(yield* bundler.sendUserOperation(op), hash)
      assert.isNull(yield* bundler.getUserOperationReceipt(hash))
      const settled = yield* bundler.getUserOperationReceipt(hash)
      assert.isTrue(settled?.success)
      const rejected = yield* bundler.estimateUserOperationGas(op).pipe(Effect.flip)
      assert.strictEqual((rejected as BundlerRejected).code, -32507)
      assert.deepStrictEqual(yield* bundler.supportedEntryPoints, [ENTRY_POINT_V07])
      assert.strictEqual(calls.sendUserOperation.length, 2)
      assert.deepStrictEqual(calls.getUserOperationReceipt, [hash, hash])
    }).pipe(
      Effect.provide(
        layerFakeBundler({
          sendUserOperation: [
            Effect.fail(new BundlerUnavailable({ method: "eth_sendUserOperation", message: "down" })),
            Effect.succeed(hash)
          ],
          getUserOperationReceipt: (h, i) =>
            Effect.succeed(
              i === 0 ? null : {
                userOpHash: h,
                sender: ENTRY_POINT_V07,
                nonce: 0n,
                success: true,
                actualGasCost: 1n,
                actualGasUsed: 1n,
                transactionHash: h,
                blockNumber: 1n,
                blockHash: h,
                logs: []
              }
            ),
          estimateUserOperationGas: [
            Effect.fail(
              new BundlerRejected({ method: "eth_estimateUserOperationGas", code: -32507, reason: "invalid_signature", message: "AA24" })
            )
          ]
        })
      )
    ))
})
