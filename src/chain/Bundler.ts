/**
 * The ERC-4337 bundler over JSON-RPC/HTTP: send, receipt, gas estimation, supported
 * EntryPoints. Each request has a timeout; transport faults (connection refused, 5xx
 * without a JSON-RPC answer) are retried, a timeout and JSON-RPC errors never are. ERC-7769
 * error codes become `BundlerRejected` with the code and a reason name.
 */
import { Config, Context, Duration, Effect, Layer, Ref, Schedule, Schema, SchemaGetter } from "effect"
import { NodeHttpClient } from "@effect/platform-node"
import { HttpClient, HttpClientRequest } from "effect/http"
import type { Address, Hash, Hex } from "viem"
import { formatUserOperationRequest, type UserOperation } from "viem/account-abstraction"
import { revertReason } from "./Chain.ts"
import { decodeRevert, isRevertData } from "./RevertReasons.ts"
import type { ChainHealth } from "./ChainHealth.ts"
import { Network, type NetworkDescription } from "./Network.ts"

/** A user operation for EntryPoint v0.7 (viem's shape: bigints, optional factory/paymaster). */
export type UserOperationV07 = UserOperation<"0.7">

/** What `eth_estimateUserOperationGas` needs: the operation with gas fields not yet known. */
export type EstimateInput = Omit<
  UserOperationV07,
  "callGasLimit" | "verificationGasLimit" | "preVerificationGas" | "paymasterVerificationGasLimit" | "paymasterPostOpGasLimit"
> & Partial<Pick<UserOperationV07, "paymasterVerificationGasLimit" | "paymasterPostOpGasLimit">>

export interface GasEstimate {
  readonly preVerificationGas: bigint
  readonly verificationGasLimit: bigint
  readonly callGasLimit: bigint
  readonly paymasterVerificationGasLimit?: bigint
  readonly paymasterPostOpGasLimit?: bigint
}

export interface UserOpLog {
  readonly address: Address
  readonly topics: ReadonlyArray<Hex>
  readonly data: Hex
}

/** `eth_getUserOperationReceipt` once the operation is included (executed or reverted). */
export interface UserOpReceipt {
  readonly userOpHash: Hash
  readonly sender: Address
  readonly nonce: bigint
  /** false when the inner call reverted (the bundle transaction itself succeeded). */
  readonly success: boolean
  /** Why the call reverted, in words (RevertReasons.ts). */
  readonly reason?: string
  /** The raw revert data, when the bundler gave it. */
  readonly revertData?: Hex
  readonly actualGasCost: bigint
  readonly actualGasUsed: bigint
  readonly paymaster?: Address
  readonly transactionHash: Hash
  readonly blockNumber: bigint
  readonly blockHash: Hash
  /** Logs emitted by this operation's execution. */
  readonly logs: ReadonlyArray<UserOpLog>
}

/** ERC-7769 error codes and what they mean. */
export const BUNDLER_ERROR_REASONS: Readonly<Record<number, string>> = {
  [-32602]: "invalid_fields",
  [-32500]: "rejected_by_entrypoint_or_account",
  [-32501]: "rejected_by_paymaster",
  [-32502]: "banned_opcode",
  [-32503]: "out_of_time_range",
  [-32504]: "throttled_or_banned",
  [-32505]: "stake_or_unstake_delay_too_low",
  [-32506]: "unsupported_aggregator",
  [-32507]: "invalid_signature",
  [-32508]: "paymaster_balance_too_low",
  [-32521]: "execution_reverted"
}

/** The bundler refused the operation (a JSON-RPC error answer). Not retried. */
export class BundlerRejected extends Schema.TaggedError<BundlerRejected>()("BundlerRejected", {
  method: Schema.String,
  code: Schema.Int,
  /** A name for the ERC-7769 code (`invalid_signature`, ...) or `unknown`. */
  reason: Schema.String,
  /** The bundler's own message, e.g. "AA24 signature error". */
  message: Schema.String,
  /** The decoded revert reason when the message carries revert data (e.g. "Error: ...allowance-exceeded"). */
  revertReason: Schema.optionalKey(Schema.String),
  data: Schema.optionalKey(Schema.Json)
}) {}

/** The bundler could not be reached, failed internally, or answered nonsense. */
export class BundlerUnavailable extends Schema.TaggedError<BundlerUnavailable>()("BundlerUnavailable", {
  method: Schema.String,
  message: Schema.String,
  /** The chain whose bundler failed (set by the per-chain client). */
  chainId: Schema.optionalKey(Schema.Int),
  cause: Schema.optionalKey(Schema.Defect())
}) {}

/** The bundler did not answer within the timeout (after retries). */
export class BundlerTimeout extends Schema.TaggedError<BundlerTimeout>()("BundlerTimeout", {
  method: Schema.String,
  message: Schema.String,
  chainId: Schema.optionalKey(Schema.Int)
}) {}

export type BundlerError = BundlerRejected | BundlerUnavailable | BundlerTimeout

export interface BundlerOptions {
  /** Per attempt (default 10 s); an attempt that timed out is not retried. */
  readonly timeout?: Duration.Input
  /** Retries after the first attempt, on transport faults that are not a timeout (default 2). */
  readonly retries?: number
  /** The chain's state: while its bundler is found down, every call fails at once (`Chains`' monitor). */
  readonly health?: ChainHealth
}

export class Bundler extends Context.Service<Bundler, {
  readonly entryPoint: Address
  /** Returns the userOpHash the bundler computed. */
  sendUserOperation(op: UserOperationV07): Effect.Effect<Hash, BundlerError>
  /** `null` until the operation is included (and for a dropped or rejected one). */
  getUserOperationReceipt(hash: Hash): Effect.Effect<UserOpReceipt | null, BundlerError>
  estimateUserOperationGas(op: EstimateInput): Effect.Effect<GasEstimate, BundlerError>
  readonly supportedEntryPoints: Effect.Effect<ReadonlyArray<Address>, BundlerError>
}>()("app/chain/Bundler") {
  /**
   * JSON-RPC to `Network.bundlerUrl`; BUNDLER_TIMEOUT (duration) and BUNDLER_RETRIES from config.
   * Over undici's own client with a keep-alive pool, not `fetch`: the relay forwards every
   * operation through here, and `fetch` costs ≈ 0.2–0.6 ms more per call (docs/performance.md).
   */
  static readonly layer = Layer.effect(
    Bundler,
    Effect.gen(function*() {
      const timeout = yield* Config.Duration("BUNDLER_TIMEOUT").pipe(Config.withDefault(Duration.seconds(10)))
      const retries = yield* Config.Int("BUNDLER_RETRIES").pipe(Config.withDefault(2))
      return yield* make({ timeout, retries })
    })
  ).pipe(Layer.provide(NodeHttpClient.layerUndici))

  static readonly layerWith = (options: BundlerOptions) =>
    Layer.effect(Bundler, make(options)).pipe(Layer.provide(NodeHttpClient.layerUndici))
}

// ---------------------------------------------------------------------------------------
// JSON-RPC wire

const RpcErrorSchema = Schema.Struct({
  code: Schema.Int,
  message: Schema.String,
  data: Schema.optionalKey(Schema.Json)
})

const envelope = <S extends Schema.Top>(result: S) =>
  Schema.Struct({
    result: Schema.optionalKey(result),
    error: Schema.optionalKey(RpcErrorSchema)
  })

const HexSchema = Schema.String.check(Schema.isPattern(/^0x[0-9a-fA-F]*$/))
const Quantity = HexSchema.pipe(
  Schema.decodeTo(Schema.BigInt, {
    decode: SchemaGetter.transform((s: string) => BigInt(s)),
    encode: SchemaGetter.transform((n: bigint) => `0x${n.toString(16)}`)
  })
)

const GasEstimateWire = Schema.Struct({
  preVerificationGas: Quantity,
  verificationGasLimit: Quantity,
  callGasLimit: Quantity,
  paymasterVerificationGasLimit: Schema.optionalKey(Schema.NullOr(Quantity)),
  paymasterPostOpGasLimit: Schema.optionalKey(Schema.NullOr(Quantity))
})

const LogWire = Schema.Struct({ address: HexSchema, topics: Schema.Array(HexSchema), data: HexSchema })

const ReceiptWire = Schema.Struct({
  userOpHash: HexSchema,
  sender: HexSchema,
  nonce: Quantity,
  success: Schema.Boolean,
  reason: Schema.optionalKey(Schema.NullOr(Schema.String)),
  actualGasCost: Quantity,
  actualGasUsed: Quantity,
  paymaster: Schema.optionalKey(Schema.NullOr(HexSchema)),
  logs: Schema.Array(LogWire),
  receipt: Schema.Struct({ transactionHash: HexSchema, blockNumber: Quantity, blockHash: HexSchema })
})

const ZERO_ADDRESS = "0x0000000000000000000000000000000000000000"

const toReceipt = (w: typeof ReceiptWire.Type): UserOpReceipt => ({
  userOpHash: w.userOpHash as Hash,
  sender: w.sender as Address,
  nonce: w.nonce,
  success: w.success,
  ...(w.reason != null && w.reason !== "" && w.reason !== "0x"
    ? isRevertData(w.reason)
      ? { reason: decodeRevert(w.reason) ?? w.reason, revertData: w.reason }
      : { reason: w.reason }
    : {}),
  actualGasCost: w.actualGasCost,
  actualGasUsed: w.actualGasUsed,
  ...(w.paymaster != null && w.paymaster !== ZERO_ADDRESS ? { paymaster: w.paymaster as Address } : {}),
  transactionHash: w.receipt.transactionHash as Hash,
  blockNumber: w.receipt.blockNumber,
  blockHash: w.receipt.blockHash as Hash,
  logs: w.logs.map((l) => ({ address: l.address as Address, topics: l.topics as ReadonlyArray<Hex>, data: l.data as Hex }))
})

/** A fault worth retrying: the request may not have reached the bundler, or it failed in transit. */
class TransportFault {
  readonly _tag = "TransportFault"
  constructor(readonly message: string, readonly timedOut: boolean, readonly cause?: unknown) {}
}

/** JSON-RPC standard errors are the bundler's own failures, not a verdict on the operation. */
const SERVER_FAULT_CODES = new Set([-32700, -32600, -32601, -32603])

export const mapRpcError = (method: string, error: typeof RpcErrorSchema.Type): BundlerRejected | BundlerUnavailable =>
  SERVER_FAULT_CODES.has(error.code)
    ? new BundlerUnavailable({ method, message: `${error.code}: ${error.message}` })
    : new BundlerRejected({
      method,
      code: error.code,
      reason: BUNDLER_ERROR_REASONS[error.code] ?? "unknown",
      message: error.message,
      ...revertReasonIn(error.message),
      ...(error.data !== undefined ? { data: error.data } : {})
    })

/** Alto puts revert data in the message ("... with reason: 0x08c379a0..."); decode it when present. */
const revertReasonIn = (message: string): { revertReason?: string } => {
  const hex = /(0x[0-9a-fA-F]{8,})/.exec(message)?.[1]
  if (hex === undefined || hex.length % 2 !== 0) return {}
  const reason = revertReason(hex as Hex)
  return reason !== undefined ? { revertReason: reason } : {}
}

const make = (options: BundlerOptions) => Network.use((network) => makeBundler(network, options))

/** A bundler client for `network` (one per chain: `Chains`). */
export const makeBundler = (
  network: Pick<NetworkDescription, "bundlerUrl" | "entryPoint"> & { readonly chainId?: number },
  options: BundlerOptions
) =>
  Effect.gen(function*() {
    const http = yield* HttpClient.HttpClient
    const timeout = Duration.fromInputUnsafe(options.timeout ?? Duration.seconds(10))
    const retries = options.retries ?? 2
    const ids = yield* Ref.make(0)

    const rpc = <S extends Schema.Top & { readonly DecodingServices: never }>(
      method: string,
      params: ReadonlyArray<unknown>,
      result: S
    ): Effect.Effect<S["Type"], BundlerError> => {
      const decode = Schema.decodeUnknownEffect(envelope(result))
      const attempt = Effect.gen(function*() {
        const id = yield* Ref.updateAndGet(ids, (n) => n + 1)
        const request = HttpClientRequest.post(network.bundlerUrl).pipe(
          HttpClientRequest.bodyJsonUnsafe({ jsonrpc: "2.0", id, method, params })
        )
        const response = yield* http.execute(request).pipe(
          Effect.mapError((e) => new TransportFault(e.message, false, e))
        )
        const body = yield* response.json.pipe(
          Effect.mapError((e) =>
            response.status >= 500
              ? new TransportFault(`HTTP ${response.status}`, false, e)
              : new BundlerUnavailable({ method, message: `HTTP ${response.status}: body is not JSON`, cause: e })
          )
        )
        // A 5xx without a JSON-RPC error in it is a proxy or server fault, not a verdict.
        const isRpcAnswer = body !== null && typeof body === "object" && ("error" in body || "result" in body)
        if (response.status >= 500 && !isRpcAnswer) {
          return yield* Effect.fail(new TransportFault(`HTTP ${response.status}`, false))
        }
        return { status: response.status, body }
      }).pipe(
        Effect.timeoutOrElse({
          duration: timeout,
          orElse: () => Effect.fail(new TransportFault(`no answer in ${Duration.format(timeout)}`, true))
        })
      )

      const degraded = options.health
      return Effect.suspend(() =>
        degraded?.isDown("bundler") === true
          ? Effect.fail(new TransportFault(`not answering (degraded since ${new Date(degraded.downSince("bundler")!).toISOString()}); try again shortly`, false))
          : attempt.pipe(
            // A timeout already took the whole of it: retrying would double the wait on a hung bundler.
            Effect.retry({
              while: (e) => e instanceof TransportFault && !e.timedOut,
              schedule: Schedule.exponential(Duration.millis(100)),
              times: retries
            })
          )
      ).pipe(
        Effect.catchIf(
          (e): e is TransportFault => e instanceof TransportFault,
          (f): Effect.Effect<never, BundlerError> =>
            f.timedOut
              ? Effect.fail(new BundlerTimeout({ method, message: f.message }))
              : Effect.fail(new BundlerUnavailable({ method, message: f.message, cause: f.cause }))
        ),
        Effect.flatMap(({ status, body }) =>
          decode(body).pipe(
            Effect.mapError((e) => new BundlerUnavailable({ method, message: `malformed answer: ${e.message}` })),
            Effect.flatMap((raw): Effect.Effect<S["Type"], BundlerError> => {
              const decoded = raw as { readonly result?: S["Type"]; readonly error?: typeof RpcErrorSchema.Type }
              if (decoded.error !== undefined) return Effect.fail(mapRpcError(method, decoded.error))
              if (!("result" in decoded)) {
                return Effect.fail(new BundlerUnavailable({ method, message: `HTTP ${status}: no result and no error` }))
              }
              return Effect.succeed(decoded.result as S["Type"])
            })
          )
        ),
        // Faults name their chain (an answer to the client names the chain that is down).
        Effect.mapError((e): BundlerError =>
          network.chainId === undefined || e._tag === "BundlerRejected"
            ? e
            : e._tag === "BundlerTimeout"
            ? new BundlerTimeout({ method: e.method, message: e.message, chainId: network.chainId })
            : new BundlerUnavailable({
              method: e.method,
              message: e.message,
              chainId: network.chainId,
              ...(e.cause === undefined ? {} : { cause: e.cause })
            })
        )
      )
    }

    const entryPoint = network.entryPoint

    const sendUserOperation = Effect.fn("Bundler.sendUserOperation")(function*(op: UserOperationV07) {
      const hash = yield* rpc("eth_sendUserOperation", [formatUserOperationRequest(op), entryPoint], HexSchema)
      return hash as Hash
    })

    const getUserOperationReceipt = Effect.fn("Bundler.getUserOperationReceipt")(function*(hash: Hash) {
      const wire = yield* rpc("eth_getUserOperationReceipt", [hash], Schema.NullOr(ReceiptWire))
      return wire === null || wire === undefined ? null : toReceipt(wire)
    })

    const estimateUserOperationGas = Effect.fn("Bundler.estimateUserOperationGas")(function*(op: EstimateInput) {
      const w = yield* rpc(
        "eth_estimateUserOperationGas",
        [formatUserOperationRequest(op as UserOperationV07), entryPoint],
        GasEstimateWire
      )
      const estimate: GasEstimate = {
        preVerificationGas: w.preVerificationGas,
        verificationGasLimit: w.verificationGasLimit,
        callGasLimit: w.callGasLimit,
        ...(w.paymasterVerificationGasLimit != null ? { paymasterVerificationGasLimit: w.paymasterVerificationGasLimit } : {}),
        ...(w.paymasterPostOpGasLimit != null ? { paymasterPostOpGasLimit: w.paymasterPostOpGasLimit } : {})
      }
      return estimate
    })

    const supportedEntryPoints = rpc("eth_supportedEntryPoints", [], Schema.Array(HexSchema)).pipe(
      Effect.map((list) => list as ReadonlyArray<Address>),
      Effect.withSpan("Bundler.supportedEntryPoints")
    )

    return Bundler.of({ entryPoint, sendUserOperation, getUserOperationReceipt, estimateUserOperationGas, supportedEntryPoints })
  })
