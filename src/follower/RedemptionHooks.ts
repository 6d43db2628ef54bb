/**
 * What a feature above the follower plugs into its record of a redemption: a hook that may
 * claim a redemption it knows better (an x402 payment under a grant: src/payments) and write
 * its entries itself. The follower asks the hooks in registration order, inside its pass's
 * transaction; the first that claims a redemption answers its owner's (and delegate's) entry,
 * and the follower then skips its own entries for it but still records the redemption.
 *
 * Register from a layer: `RedemptionHooks.layer` is one constant, so every layer providing it
 * shares the same registry (layers are memoized), as with the relay's hooks.
 */
import { Context, Effect, Layer } from "effect"
import type { ObservedRedemption } from "./Redeemed.ts"

/** The entries a hook wrote for a redemption it claimed. */
export interface RedemptionClaim {
  readonly ownerEntryId: string | undefined
  readonly delegateEntryId?: string | undefined
}

/** `undefined`: not this hook's; the follower records it as any redemption. */
export type RedemptionHook = (chainId: number, redemption: ObservedRedemption) => Effect.Effect<RedemptionClaim | undefined>

/** A redemption the follower recorded whose block left the chain (a reorg). */
export interface UnwoundRedemption {
  readonly blockHash: string
  readonly logIndex: number
  readonly txHash: string
}

/** Undoes what a hook's claim changed for a redemption no longer on chain (the follower compensates the entry itself). */
export type UnwindHook = (chainId: number, redemption: UnwoundRedemption) => Effect.Effect<void>

export class RedemptionHooks extends Context.Service<RedemptionHooks, {
  register(name: string, hook: RedemptionHook): Effect.Effect<void>
  /** The first claim of the registered hooks, or `undefined`. */
  claim(chainId: number, redemption: ObservedRedemption): Effect.Effect<RedemptionClaim | undefined>
  /** What a feature undoes when a redemption's block leaves the chain. */
  registerUnwind(name: string, hook: UnwindHook): Effect.Effect<void>
  /** Runs every unwind hook for a redemption whose block left the chain, inside the follower's pass. */
  unwound(chainId: number, redemption: UnwoundRedemption): Effect.Effect<void>
}>()("das/follower/RedemptionHooks") {
  static readonly layer = Layer.sync(RedemptionHooks, () => {
    const hooks: Array<{ readonly name: string; readonly hook: RedemptionHook }> = []
    const unwinds: Array<{ readonly name: string; readonly hook: UnwindHook }> = []
    return RedemptionHooks.of({
      // Registering the same name twice (a layer built twice) keeps one entry.
      register: (name, hook) =>
        Effect.sync(() => {
          if (!hooks.some((h) => h.name === name)) hooks.push({ name, hook })
        }),
      claim: (chainId, redemption) =>
        Effect.gen(function*() {
          for (const { name, hook } of hooks) {
            const claimed = yield* hook(chainId, redemption).pipe(Effect.withSpan(`RedemptionHooks.${name}`))
            if (claimed !== undefined) return claimed
          }
          return undefined
        }),
      registerUnwind: (name, hook) =>
        Effect.sync(() => {
          if (!unwinds.some((h) => h.name === name)) unwinds.push({ name, hook })
        }),
      unwound: (chainId, redemption) =>
        Effect.forEach(unwinds, ({ hook, name }) => hook(chainId, redemption).pipe(Effect.withSpan(`RedemptionHooks.unwind.${name}`)), {
          discard: true
        })
    })
  })
}

export const RedemptionHooksLive = RedemptionHooks.layer
