/**
 * Reads from the chain through a viem public client: EntryPoint nonces, account code,
 * fee data, ERC-20 balances / allowances / permit nonces, and `eth_call` simulation.
 * Never writes: operations reach the chain through the `Bundler`.
 */
import { Context, Duration, Effect, Layer, Schema } from "effect"
import {
  type Address,
  BaseError,
  type Chain as ViemChain,
  createPublicClient,
  defineChain,
  erc20Abi,
  ExecutionRevertedError,
  type Hash,
  type Hex,
  http,
  type PublicClient,
  RawContractError,
  type TransactionReceipt,
  type Transport
} from "viem"
import { entryPoint07Abi } from "viem/account-abstraction"
import { ChainCallTimeoutError, ChainDegradedError, type ChainHealth, isChainTimeout } from "./ChainHealth.ts"
import { Network, type NetworkDescription } from "./Network.ts"
import { decodeRevert } from "./RevertReasons.ts"
import { pooledFetch } from "./RpcFetch.ts"

/** The RPC node failed or answered nonsense (not a revert). */
export class ChainUnavailable extends Schema.TaggedError<ChainUnavailable>()("ChainUnavailable", {
  operation: Schema.String,
  message: Schema.String,
  /** The chain whose node failed (set by the per-chain reader). */
  chainId: Schema.optionalKey(Schema.Int),
  /** The node did not answer within the chain's timeout (a 504, not a 503). */
  timedOut: Schema.optionalKey(Schema.Boolean),
  cause: Schema.optionalKey(Schema.Defect())
}) {}

/** An `eth_call` reverted: `data` is the raw revert data, `reason` its decoded text when it has one. */
export class CallReverted extends Schema.TaggedError<CallReverted>()("CallReverted", {
  data: Schema.String,
  reason: Schema.optionalKey(Schema.String)
}) {}

export interface FeeData {
  readonly maxFeePerGas: bigint
  readonly maxPriorityFeePerGas: bigint
}

export interface CallRequest {
  readonly to: Address
  readonly data: Hex
  readonly from?: Address
  readonly value?: bigint
}

const permitNonceAbi = [
  {
    type: "function",
    name: "nonces",
    stateMutability: "view",
    inputs: [{ name: "owner", type: "address" }],
    outputs: [{ name: "", type: "uint256" }]
  }
] as const

/** Decodes revert data into a readable reason: `Error(string)`, `Panic(uint256)` or a selector. */
export const revertReason = (data: Hex): string | undefined => decodeRevert(data)

/** The revert data when `error` is an execution revert (`0x` when the node gave none), else undefined. */
const revertDataOf = (error: unknown): Hex | undefined => {
  if (!(error instanceof BaseError)) return undefined
  const isRevert = error.walk((e) => e instanceof RawContractError || e instanceof ExecutionRevertedError) !== null
  if (!isRevert) return undefined
  // viem keeps the node's revert data on an inner cause (RpcRequestError or the raw RPC error).
  let cause: unknown = error
  while (cause !== null && typeof cause === "object") {
    const data = (cause as { data?: unknown }).data
    if (typeof data === "string" && data.startsWith("0x")) return data as Hex
    if (data !== null && typeof data === "object" && typeof (data as { data?: unknown }).data === "string") {
      return (data as { data: Hex }).data
    }
    cause = (cause as { cause?: unknown }).cause
  }
  return "0x"
}

export const viemChainOf = (network: Pick<NetworkDescription, "chainId" | "rpcUrl">): ViemChain =>
  defineChain({
    id: network.chainId,
    name: `chain ${network.chainId}`,
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [network.rpcUrl] } }
  })

export class Chain extends Context.Service<Chain, {
  readonly chainId: number
  readonly entryPoint: Address
  /** The underlying client, for contract reads that belong to another module (e.g. Accounts4337). */
  readonly client: PublicClient
  /** `EntryPoint.getNonce(sender, key)`: the full 256-bit nonce (key << 64 | sequence). */
  entryPointNonce(sender: Address, key?: bigint): Effect.Effect<bigint, ChainUnavailable>
  getCode(address: Address): Effect.Effect<Hex | undefined, ChainUnavailable>
  isDeployed(address: Address): Effect.Effect<boolean, ChainUnavailable>
  readonly feeData: Effect.Effect<FeeData, ChainUnavailable>
  readonly blockNumber: Effect.Effect<bigint, ChainUnavailable>
  /**
   * The latest block's timestamp (unix seconds): the time the chain has reached. What is
   * simulated at "latest" (the bundler's validation, an `eth_call`) reads it; on a quiet chain
   * that mines on demand it can lag the wall clock by minutes.
   */
  readonly headTimestamp: Effect.Effect<number, ChainUnavailable>
  erc20Balance(token: Address, owner: Address): Effect.Effect<bigint, ChainUnavailable>
  erc20Allowance(token: Address, owner: Address, spender: Address): Effect.Effect<bigint, ChainUnavailable>
  /** EIP-2612 `nonces(owner)`. */
  permitNonce(token: Address, owner: Address): Effect.Effect<bigint, ChainUnavailable>
  nativeBalance(address: Address): Effect.Effect<bigint, ChainUnavailable>
  /** `eth_call` at the latest block; a revert is a typed `CallReverted`. */
  call(request: CallRequest): Effect.Effect<Hex, ChainUnavailable | CallReverted>
  /** `null` while the transaction is unknown or pending. */
  getTransactionReceipt(hash: Hash): Effect.Effect<TransactionReceipt | null, ChainUnavailable>
}>()("app/chain/Chain") {
  /** Over a viem public client for the `Network` in context. */
  static readonly layer = Layer.effect(Chain, Network.useSync((network) => makeChain(network)))
}

export interface ChainOptions {
  /** One call's whole time, its retries included (default 10 s). */
  readonly timeout?: Duration.Duration
  /** The chain's state: while its node is found down, every call fails at once (`Chains`' monitor). */
  readonly health?: ChainHealth
  /**
   * How long one read of the fee data answers every build (`CHAIN_FEE_DATA_MAX_AGE`; 0: read each
   * time). Within a block's time the node answers the same (viem's 1.2× margin over the base fee
   * covers one block's rise); a fee that went stale can only make the bundler or the chain refuse.
   */
  readonly feeDataMaxAge?: Duration.Duration
}

/**
 * viem's http transport with the chain's timeout over the whole call (viem's own is per attempt,
 * and it retries a timed-out attempt: 3 × 10 s before), and failing at once while the chain's
 * node is found down. Every read of the chain goes through it, the features' own contract reads
 * on `client` too.
 */
export const chainTransport = (network: Pick<NetworkDescription, "chainId" | "rpcUrl">, options: ChainOptions = {}): Transport => {
  const timeout = options.timeout ?? Duration.seconds(10)
  const ms = Math.max(1, Duration.toMillis(timeout))
  const inner = http(network.rpcUrl, { timeout: ms, retryCount: 2, fetchFn: pooledFetch(network.rpcUrl) })
  const health = options.health
  return (params) => {
    const transport = inner(params)
    const request: typeof transport.request = async (args, requestOptions) => {
      if (health?.isDown("rpc")) throw new ChainDegradedError(network.chainId, "node")
      const deadline = AbortSignal.timeout(ms)
      const signal = requestOptions?.signal === undefined ? deadline : AbortSignal.any([requestOptions.signal, deadline])
      try {
        return await transport.request(args, { ...requestOptions, signal })
      } catch (error) {
        if (deadline.aborted && requestOptions?.signal?.aborted !== true) {
          throw new ChainCallTimeoutError(network.chainId, args.method, timeout)
        }
        throw error
      }
    }
    return { ...transport, request }
  }
}

/** A chain reader over a viem public client for `network` (one per chain: `Chains`). */
export const makeChain = (network: NetworkDescription, options: ChainOptions = {}): Chain["Service"] => {
  const client = createPublicClient({
    chain: viemChainOf(network),
    transport: chainTransport(network, options),
    pollingInterval: 250
  }) as PublicClient
  return makeWith(client, network, options)
}

/** What a failed call tells the client: a timeout (504) or the node unreachable (503). */
const unavailable = (network: Pick<NetworkDescription, "chainId">, operation: string, cause: unknown) =>
  new ChainUnavailable({
    chainId: network.chainId,
    operation,
    message: cause instanceof BaseError ? cause.shortMessage : String(cause),
    ...(isChainTimeout(cause) ? { timedOut: true } : {}),
    cause
  })

const makeWith = (client: PublicClient, network: NetworkDescription, options: ChainOptions = {}): Chain["Service"] => {
  const rpc = <A>(operation: string, f: () => Promise<A>) =>
    Effect.tryPromise({
      try: f,
      catch: (cause) => unavailable(network, operation, cause)
    })

  const entryPointNonce = Effect.fn("Chain.entryPointNonce")(function*(sender: Address, key: bigint = 0n) {
    return yield* rpc("entryPointNonce", () =>
      client.readContract({
        address: network.entryPoint,
        abi: entryPoint07Abi,
        functionName: "getNonce",
        args: [sender, key]
      })
    )
  })

  const getCode = Effect.fn("Chain.getCode")(function*(address: Address) {
    return yield* rpc("getCode", () => client.getCode({ address }))
  })

  const isDeployed = Effect.fn("Chain.isDeployed")(function*(address: Address) {
    const code = yield* getCode(address)
    return code !== undefined && code !== "0x"
  })

  const readFees = rpc("feeData", () => client.estimateFeesPerGas({ type: "eip1559", chain: null })).pipe(
    Effect.map((fees) => ({ maxFeePerGas: fees.maxFeePerGas, maxPriorityFeePerGas: fees.maxPriorityFeePerGas }) satisfies FeeData)
  )
  // One read answers every build for `feeDataMaxAge` (issue 46 item 3: two calls of the node and
  // a block decoded per build before); builds at once share one read; a failed read is not kept.
  const feeMaxAgeMs = options.feeDataMaxAge === undefined ? 0 : Duration.toMillis(options.feeDataMaxAge)
  let lastFees: { readonly at: number; readonly fees: Promise<FeeData> } | undefined
  const feeData = (feeMaxAgeMs <= 0 ? readFees : Effect.suspend(() => {
    const now = Date.now()
    if (lastFees === undefined || now - lastFees.at >= feeMaxAgeMs) {
      const read = {
        at: now,
        fees: Effect.runPromise(Effect.result(readFees)).then((r) => {
          if (r._tag === "Success") return r.success
          if (lastFees === read) lastFees = undefined
          throw r.failure
        })
      }
      read.fees.catch(() => undefined) // each reader gets the failure; none is left unhandled
      lastFees = read
    }
    const { fees } = lastFees
    return Effect.tryPromise({ try: () => fees, catch: (e) => e as ChainUnavailable })
  })).pipe(Effect.withSpan("Chain.feeData"))

  const blockNumber = rpc("blockNumber", () => client.getBlockNumber({ cacheTime: 0 })).pipe(
    Effect.withSpan("Chain.blockNumber")
  )

  const headTimestamp = rpc("headTimestamp", () => client.getBlock({ blockTag: "latest" })).pipe(
    Effect.map((block) => Number(block.timestamp)),
    Effect.withSpan("Chain.headTimestamp")
  )

  const erc20Balance = Effect.fn("Chain.erc20Balance")(function*(token: Address, owner: Address) {
    return yield* rpc("erc20Balance", () =>
      client.readContract({ address: token, abi: erc20Abi, functionName: "balanceOf", args: [owner] })
    )
  })

  const erc20Allowance = Effect.fn("Chain.erc20Allowance")(function*(token: Address, owner: Address, spender: Address) {
    return yield* rpc("erc20Allowance", () =>
      client.readContract({ address: token, abi: erc20Abi, functionName: "allowance", args: [owner, spender] })
    )
  })

  const permitNonce = Effect.fn("Chain.permitNonce")(function*(token: Address, owner: Address) {
    return yield* rpc("permitNonce", () =>
      client.readContract({ address: token, abi: permitNonceAbi, functionName: "nonces", args: [owner] })
    )
  })

  const nativeBalance = Effect.fn("Chain.nativeBalance")(function*(address: Address) {
    return yield* rpc("nativeBalance", () => client.getBalance({ address }))
  })

  const call = Effect.fn("Chain.call")(function*(request: CallRequest) {
    return yield* Effect.tryPromise({
      try: () =>
        client.call({
          to: request.to,
          data: request.data,
          ...(request.from !== undefined ? { account: request.from } : {}),
          ...(request.value !== undefined ? { value: request.value } : {})
        }),
      catch: (cause): ChainUnavailable | CallReverted => {
        const data = revertDataOf(cause)
        if (data !== undefined) {
          const reason = revertReason(data)
          return new CallReverted(reason !== undefined ? { data, reason } : { data })
        }
        return unavailable(network, "call", cause)
      }
    }).pipe(Effect.map((result) => result.data ?? "0x"))
  })

  const getTransactionReceipt = Effect.fn("Chain.getTransactionReceipt")(function*(hash: Hash) {
    return yield* Effect.tryPromise({
      try: () => client.getTransactionReceipt({ hash }),
      catch: (cause) => cause
    }).pipe(
      Effect.catch((cause) =>
        cause instanceof BaseError && cause.name === "TransactionReceiptNotFoundError"
          ? Effect.succeed(null)
          : Effect.fail(unavailable(network, "getTransactionReceipt", cause))
      )
    )
  })

  return Chain.of({
    chainId: network.chainId,
    entryPoint: network.entryPoint,
    client,
    entryPointNonce,
    getCode,
    isDeployed,
    feeData,
    blockNumber,
    headTimestamp,
    erc20Balance,
    erc20Allowance,
    permitNonce,
    nativeBalance,
    call,
    getTransactionReceipt
  })
}
