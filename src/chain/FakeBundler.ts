/**
 * A scripted `Bundler` for unit tests of what sits above it: each method answers the
 * outcomes its script lists (or computes them from the call), and every call is logged
 * in `FakeBundlerCalls` for assertions. Never used by the served app.
 */
import { Context, Effect, Layer } from "effect"
import type { Address, Hash } from "viem"
import {
  Bundler,
  type BundlerError,
  BundlerUnavailable,
  type EstimateInput,
  type GasEstimate,
  type UserOperationV07,
  type UserOpReceipt
} from "./Bundler.ts"
import { ENTRY_POINT_V07 } from "./Network.ts"

/**
 * One method's script: a list of outcomes consumed in order (the last one repeats), or a
 * function of the call (with its 0-based index). Outcomes are Effects, so a step can
 * succeed, fail with a typed error, sleep, or never answer.
 */
export type Scripted<In, A> =
  | ReadonlyArray<Effect.Effect<A, BundlerError>>
  | ((input: In, callIndex: number) => Effect.Effect<A, BundlerError>)

export interface BundlerScript {
  readonly sendUserOperation?: Scripted<UserOperationV07, Hash>
  readonly getUserOperationReceipt?: Scripted<Hash, UserOpReceipt | null>
  readonly estimateUserOperationGas?: Scripted<EstimateInput, GasEstimate>
  readonly supportedEntryPoints?: Scripted<void, ReadonlyArray<Address>>
  readonly entryPoint?: Address
}

export interface FakeBundlerCallLog {
  readonly sendUserOperation: Array<UserOperationV07>
  readonly getUserOperationReceipt: Array<Hash>
  readonly estimateUserOperationGas: Array<EstimateInput>
  readonly supportedEntryPoints: Array<void>
}

/** What the fake bundler was asked, for assertions. */
export class FakeBundlerCalls extends Context.Service<FakeBundlerCalls, FakeBundlerCallLog>()("app/chain/FakeBundlerCalls") {
  static readonly layer = Layer.sync(FakeBundlerCalls, () => ({
    sendUserOperation: [],
    getUserOperationReceipt: [],
    estimateUserOperationGas: [],
    supportedEntryPoints: []
  }))
  static readonly asEffectService = Effect.gen(function*() {
    return yield* FakeBundlerCalls
  })
}

const makeFake = (script: BundlerScript, calls: FakeBundlerCallLog): Bundler["Service"] => {
  const run = <K extends "sendUserOperation" | "getUserOperationReceipt" | "estimateUserOperationGas" | "supportedEntryPoints">(
    method: K,
    input: FakeBundlerCallLog[K][number]
  ) => {
    type Out = K extends "sendUserOperation" ? Hash
      : K extends "getUserOperationReceipt" ? UserOpReceipt | null
      : K extends "estimateUserOperationGas" ? GasEstimate
      : ReadonlyArray<Address>
    const log = calls[method] as Array<typeof input>
    const index = log.length
    log.push(input)
    const steps = script[method] as Scripted<typeof input, Out> | undefined
    if (steps === undefined) {
      if (method === "supportedEntryPoints") {
        return Effect.succeed([script.entryPoint ?? ENTRY_POINT_V07] as unknown as Out)
      }
      return Effect.fail(new BundlerUnavailable({ method, message: `fake bundler: ${method} not scripted` }))
    }
    if (typeof steps === "function") return steps(input, index)
    const step = steps[Math.min(index, steps.length - 1)]
    return step ?? Effect.fail(new BundlerUnavailable({ method, message: `fake bundler: ${method} has an empty script` }))
  }
  return Bundler.of({
    entryPoint: script.entryPoint ?? ENTRY_POINT_V07,
    sendUserOperation: (op) => Effect.suspend(() => run("sendUserOperation", op)).pipe(Effect.withSpan("Bundler.sendUserOperation")),
    getUserOperationReceipt: (hash) => Effect.suspend(() => run("getUserOperationReceipt", hash)).pipe(Effect.withSpan("Bundler.getUserOperationReceipt")),
    estimateUserOperationGas: (op) => Effect.suspend(() => run("estimateUserOperationGas", op)).pipe(Effect.withSpan("Bundler.estimateUserOperationGas")),
    supportedEntryPoints: Effect.suspend(() => run("supportedEntryPoints", undefined)).pipe(Effect.withSpan("Bundler.supportedEntryPoints"))
  })
}

/** Scripted results and faults, with the call log provided beside the bundler. */
export const layerFakeBundler = (script: BundlerScript = {}) =>
  Layer.effect(
    Bundler,
    Effect.map(FakeBundlerCalls.asEffectService, (calls) => makeFake(script, calls))
  ).pipe(Layer.provideMerge(FakeBundlerCalls.layer))
