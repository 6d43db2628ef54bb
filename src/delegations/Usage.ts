/**
 * What a grant has used, reconciled between the service's reservations and the enforcers'
 * own state on chain (docs/delegations.md, "Spend accounting"):
 *
 *   executed(token) = max(final reservations [in the current period], the chain's spend:
 *                         MultiTokenPeriodEnforcer / NativeTokenPeriodTransferEnforcer in
 *                         their current period, a streaming enforcer's `spent`)
 *   used(token)     = executed + open reservations (reserved and unexpired, or submitted)
 *   actions         = max(final reservations, LimitedCallsEnforcer.callCounts) + open
 *   remaining       = min(limit − used, what the chain still allows − open), never below 0
 *                     (a stream: also at most what has accrued − used)
 *
 * An x402 payment settled on chain is in the enforcers' spend before the follower records it
 * (its reservation still open): `spentToDate` reads which open payments the chain shows redeemed
 * and counts them once, as spent (`landed`). The evaluation of a new action or payment keeps
 * counting both until the follower records it (a moment of a smaller room, never a larger one).
 *
 * so a redemption that went around the service (the delegate's own bundler or `handleOps`)
 * counts as soon as the chain shows it, and the service never grants more than the chain
 * still allows. If the chain cannot be read, the service's own record stands (logged).
 */
import {
  ERC20StreamingEnforcer,
  LimitedCallsEnforcer,
  MultiTokenPeriodEnforcer,
  NativeTokenPeriodTransferEnforcer,
  NativeTokenStreamingEnforcer
} from "@metamask/delegation-abis"
import { Effect } from "effect"
import { decodeFunctionResult, encodeFunctionData, type Hash, type Hex, hexToBigInt, slice } from "viem"
import { BASKET_DECIMALS, decodeBasketTerms, toBasketUnits } from "../chain/Basket.ts"
import { type ChainNetwork, Chains } from "../chain/Chains.ts"
import { basketPeriodEnforcerAbi } from "../chain/contracts/Basket.ts"
import { basketUnits } from "./Baskets.ts"
import type { Delegation as DfDelegation } from "./Caveats.ts"
import { type Carried, DelegationRepo, type LedgerRow, type NewReservation } from "./DelegationRepo.ts"
import type { OpenPayment } from "./DelegationRows.ts"
import type { PolicySet } from "./Domain.ts"
import { periodArgs, type GrantScope } from "./Grant.ts"
import { currentPeriod } from "./Periods.ts"
import { fromUnits, toUnits } from "./Policy.ts"
import { streamUnits, unlockedAt } from "./Streams.ts"

/** What usage needs of a delegation row. */
export interface UsageRow {
  readonly id: string
  readonly chain_id: number
  readonly policy_set: PolicySet
  readonly legs: ReadonlyArray<{ readonly permissionId: Hash; readonly delegation: DfDelegation; readonly scope?: GrantScope }>
  /** A replacement grant (asking for more): what the grant it replaced had spent, counted as this one's (its on-chain limits are lower by as much). */
  readonly carried?: Carried | null
}

export interface TokenUse {
  /** Executed (in the current period for a period budget), reconciled with the chain. */
  readonly executed: bigint
  /** Open reservations. */
  readonly open: bigint
  /** What the chain still allows in the current period; `undefined` when not read. */
  readonly chainAvailable?: bigint
}

export interface Use {
  readonly perToken: ReadonlyMap<string, TokenUse>
  readonly actionsUsed: number
  /** Executed actions only (without open reservations). */
  readonly actionsExecuted: number
}

export interface ChainUse {
  readonly calls: bigint
  readonly perToken: ReadonlyMap<string, { readonly spent: bigint; readonly available: bigint }>
}

const lower = (s: string) => s.toLowerCase()
const minOf = (...xs: ReadonlyArray<bigint>) => xs.reduce((m, x) => (x < m ? x : m))

/** A decode that may fail (no code at the address, another contract): a failure, not a defect. */
const decoded = <A>(f: () => A) => Effect.try({ try: f, catch: (cause) => new Error(`undecodable enforcer answer: ${String(cause)}`) })

/** `decimalsOf`: a token's decimals by lowercase address. */
export const makeUsage = (decimalsOf: (address: string) => number) => Effect.gen(function*() {
  const repo = yield* DelegationRepo
  const chains = yield* Chains

  const enforcerOf = (net: ChainNetwork) => (name: string) => net.network.delegation.caveatEnforcers[name]
  const caveatOf = (net: ChainNetwork, delegation: DfDelegation, name: string) => {
    const address = enforcerOf(net)(name)
    return address === undefined ? undefined : delegation.caveats.find((c) => lower(c.enforcer) === lower(address))
  }
  const word = (terms: Hex, at: number) => hexToBigInt(slice(terms, at, at + 32))

  /** A periodic allowance's state (MultiTokenPeriod entry or NativeTokenPeriodTransfer): spent and available now. */
  const periodic = (answer: readonly [bigint, boolean, bigint], amount: bigint, seconds: bigint, start: bigint, now: Date) => {
    const [available, , current] = answer
    // The period `now` is in. The chain answers at its latest block, which may be older
    // than now: a later period than the chain's has spent nothing yet.
    const nowSeconds = BigInt(Math.floor(now.getTime() / 1000))
    const expected = nowSeconds < start ? 0n : (nowSeconds - start) / seconds + 1n
    if (expected > current) return { spent: 0n, available: expected === 0n ? 0n : amount }
    // Period 0: not started yet (nothing spent, nothing available).
    return { spent: current === 0n ? 0n : amount - available, available }
  }

  /**
   * A stream's state: the enforcer stores `spent` from the first redemption on (before it, its
   * own `getAvailableAmount` answers 0), so what has accrued is computed from the signed terms.
   */
  const streamed = (
    net: ChainNetwork,
    name: "ERC20StreamingEnforcer" | "NativeTokenStreamingEnforcer",
    permissionId: Hash,
    terms: Hex,
    now: Date
  ) =>
    Effect.gen(function*() {
      const abi = name === "ERC20StreamingEnforcer" ? ERC20StreamingEnforcer : NativeTokenStreamingEnforcer
      const data = yield* net.chain.call({
        to: enforcerOf(net)(name)!,
        data: encodeFunctionData({ abi, functionName: "streamingAllowances", args: [net.network.delegation.DelegationManager, permissionId] })
      })
      const state = yield* decoded(() => decodeFunctionResult({ abi, functionName: "streamingAllowances", data }) as readonly bigint[])
      const spent = state[4]!
      const at = name === "ERC20StreamingEnforcer" ? 20 : 0
      const units = { initial: word(terms, at), max: word(terms, at + 32), perSecond: word(terms, at + 64), startSeconds: Number(word(terms, at + 96)) }
      const unlocked = unlockedAt(units, Math.floor(now.getTime() / 1000))
      return { spent, available: unlocked > spent ? unlocked - spent : 0n }
    })

  /** The enforcers' state for a grant (one leg with a scope); `undefined` for other shapes or when unreadable. */
  const onChain = (row: UsageRow, now: Date) =>
    Effect.gen(function*() {
      const net = chains.find(row.chain_id)
      if (net === undefined) return undefined
      const { chain, network } = net
      const dm = network.delegation.DelegationManager
      const enforcer = enforcerOf(net)
      const limited = enforcer("LimitedCallsEnforcer")
      const leg = row.legs[0]
      if (leg === undefined || leg.scope === undefined || row.legs.length !== 1 || limited === undefined) return undefined
      // The call count is read beside the budget's state, not before it (one round trip's wait, not two).
      const readCalls = Effect.flatMap(
        chain.call({ to: limited, data: encodeFunctionData({ abi: LimitedCallsEnforcer, functionName: "callCounts", args: [dm, leg.permissionId] }) }),
        (data) => decoded(() => decodeFunctionResult({ abi: LimitedCallsEnforcer, functionName: "callCounts", data }) as bigint)
      )
      const [calls, perToken] = yield* Effect.all([readCalls, budgetsOnChain(net, leg, leg.scope, now)], { concurrency: 2 })
      return perToken === undefined ? undefined : ({ calls, perToken } satisfies ChainUse)
    }).pipe(
      Effect.catch((e) => Effect.logWarning("delegation usage: the enforcers' state could not be read", e).pipe(Effect.as(undefined))),
      Effect.withSpan("Usage.onChain")
    )

  /** The budget enforcers' state of a grant's one leg, per token; `undefined` for a shape without one. */
  const budgetsOnChain = (net: ChainNetwork, leg: UsageRow["legs"][number], scope: GrantScope, now: Date) =>
    Effect.gen(function*() {
      const { chain, network } = net
      const dm = network.delegation.DelegationManager
      const enforcer = enforcerOf(net)
      const perToken = new Map<string, { spent: bigint; available: bigint }>()
      const erc20Stream = caveatOf(net, leg.delegation, "ERC20StreamingEnforcer")
      const nativeStream = caveatOf(net, leg.delegation, "NativeTokenStreamingEnforcer")
      const nativePeriod = caveatOf(net, leg.delegation, "NativeTokenPeriodTransferEnforcer")
      const multi = caveatOf(net, leg.delegation, "MultiTokenPeriodEnforcer")
      const token = lower(scope.tokens[0] ?? "")
      if (erc20Stream !== undefined || nativeStream !== undefined) {
        const name = erc20Stream !== undefined ? "ERC20StreamingEnforcer" : "NativeTokenStreamingEnforcer"
        perToken.set(token, yield* streamed(net, name, leg.permissionId, (erc20Stream ?? nativeStream)!.terms as Hex, now))
      } else if (nativePeriod !== undefined) {
        const data = yield* chain.call({
          to: enforcer("NativeTokenPeriodTransferEnforcer")!,
          data: encodeFunctionData({
            abi: NativeTokenPeriodTransferEnforcer,
            functionName: "getAvailableAmount",
            args: [leg.permissionId, dm, nativePeriod.terms]
          })
        })
        const answer = yield* decoded(() =>
          decodeFunctionResult({ abi: NativeTokenPeriodTransferEnforcer, functionName: "getAvailableAmount", data }) as readonly [bigint, boolean, bigint]
        )
        const terms = nativePeriod.terms as Hex
        perToken.set(token, periodic(answer, word(terms, 0), word(terms, 32), word(terms, 64), now))
      } else if (multi !== undefined) {
        for (const [i, t] of scope.tokens.entries()) {
          const data = yield* chain.call({
            to: enforcer("MultiTokenPeriodEnforcer")!,
            data: encodeFunctionData({
              abi: MultiTokenPeriodEnforcer,
              functionName: "getAvailableAmount",
              args: [leg.permissionId, dm, multi.terms, periodArgs(i)]
            })
          })
          const answer = yield* decoded(() =>
            decodeFunctionResult({ abi: MultiTokenPeriodEnforcer, functionName: "getAvailableAmount", data }) as readonly [bigint, boolean, bigint]
          )
          const at = i * 116
          const terms = multi.terms as Hex
          perToken.set(lower(t), periodic(answer, word(terms, at + 20), word(terms, at + 52), word(terms, at + 84), now))
        }
      } else if (caveatOf(net, leg.delegation, "BasketPeriodEnforcer") === undefined) {
        return undefined
      }
      // A basket-only grant: no per-token enforcer (the basket's own spend is read by basketOnChain); the call count still is.
      return perToken
    })

  /** Where each period token's current period starts (the ledger counts final units from there). */
  const sinceOf = (row: UsageRow, now: Date) => {
    const since: Record<string, string> = {}
    for (const b of row.policy_set.budgets) {
      if (b.period !== undefined && b.token.address !== undefined) since[lower(b.token.address)] = currentPeriod(b.period, now).start.toISOString()
    }
    return since
  }

  /** The service's ledger: final (in each period token's current period) and open, per token; counts. */
  const ledger = (row: UsageRow, exceptId: string | undefined, now: Date) => repo.ledger(row.id, sinceOf(row, now), exceptId)

  /**
   * Per token, the units of open x402 payments whose payment delegation the chain shows redeemed
   * (its LimitedCallsEnforcer count: a payment delegation is single use). Read before the
   * enforcers' spend, so that spend (read at the same or a later block) holds each of them.
   * A payment whose count cannot be read counts as not redeemed (counted as reserved).
   */
  const landedPayments = (row: UsageRow, payments: ReadonlyArray<OpenPayment>) =>
    Effect.gen(function*() {
      const landed = new Map<string, bigint>()
      const net = chains.find(row.chain_id)
      const limited = net === undefined ? undefined : enforcerOf(net)("LimitedCallsEnforcer")
      if (net === undefined || limited === undefined || payments.length === 0) return landed
      const dm = net.network.delegation.DelegationManager
      yield* Effect.forEach(payments, (p) =>
        net.chain.call({
          to: limited,
          data: encodeFunctionData({ abi: LimitedCallsEnforcer, functionName: "callCounts", args: [dm, p.paymentHash as Hash] })
        }).pipe(
          Effect.flatMap((data) => decoded(() => decodeFunctionResult({ abi: LimitedCallsEnforcer, functionName: "callCounts", data }) as bigint)),
          Effect.map((calls) => {
            if (calls > 0n) landed.set(lower(p.token), (landed.get(lower(p.token)) ?? 0n) + p.units)
          }),
          Effect.catch(() => Effect.void)
        ), { concurrency: 4, discard: true })
      return landed
    }).pipe(Effect.withSpan("Usage.landedPayments"))

  /**
   * The reconciled use of `row` from its ledger rows and the enforcers' state. `landed`: per token,
   * open payments the chain shows redeemed (read before `fromChain`): they are in the chain's spend,
   * so they leave `open`, by at most what the chain's spend exceeds the final ledger by.
   */
  const useFrom = (row: UsageRow, rows: ReadonlyArray<LedgerRow>, fromChain: ChainUse | undefined, landed?: ReadonlyMap<string, bigint>): Use => {
    const perToken = new Map<string, TokenUse>()
    for (const b of row.policy_set.budgets) {
      const token = lower(b.token.address ?? "")
      const r = rows.find((x) => x.token_address === token)
      const c = fromChain?.perToken.get(token)
      const final = BigInt(r?.final_units ?? "0")
      const carried = BigInt(row.carried?.units[token] ?? "0")
      const open = BigInt(r?.open_units ?? "0")
      const beyondFinal = c === undefined || c.spent < final ? 0n : c.spent - final
      const inSpend = minOf(landed?.get(token) ?? 0n, beyondFinal, open)
      perToken.set(token, {
        executed: carried + (c === undefined || c.spent < final ? final : c.spent),
        open: open - inSpend,
        ...(c === undefined ? {} : { chainAvailable: c.available })
      })
    }
    const finalN = rows.reduce((n, r) => n + r.final_n, 0)
    const openN = rows.reduce((n, r) => n + r.open_n, 0)
    const executedN = fromChain === undefined || Number(fromChain.calls) < finalN ? finalN : Number(fromChain.calls)
    const carriedN = row.carried?.actions ?? 0
    return { perToken, actionsUsed: carriedN + executedN + openN, actionsExecuted: carriedN + executedN }
  }

  /**
   * Reconciled use of `row` (excluding reservation `exceptId`). `chainRead`: how this request reads
   * the enforcers' state (`onChain`, cached: read once however often its use is evaluated; the
   * ledger is read fresh each time, beside it).
   */
  const useOf = Effect.fn("Usage.useOf")(function*(
    row: UsageRow,
    exceptId?: string,
    now: Date = new Date(),
    chainRead?: Effect.Effect<ChainUse | undefined>
  ) {
    const [rows, fromChain] = yield* Effect.all([ledger(row, exceptId, now), chainRead ?? onChain(row, now)], { concurrency: 2 })
    return useFrom(row, rows, fromChain)
  })

  /** `PolicyState` fields for `evaluate`: used units per token (executed + open) and the action count. */
  const stateFrom = (row: UsageRow, use: Use) => {
    const usedUnits = new Map<string, bigint>()
    for (const [token, u] of use.perToken) {
      // Never more room than the chain still allows: what it refuses counts as used. (A stream's
      // room is what has accrued, which `evaluate` computes from the policy: its used is what was spent.)
      const limit = budgetUnits(row.policy_set, token)
      const streaming = row.policy_set.budgets.some((b) => b.stream !== undefined && lower(b.token.address ?? "") === token)
      const chainUsed = u.chainAvailable === undefined || limit === undefined || streaming ? 0n : limit - u.chainAvailable
      usedUnits.set(token, (u.executed > chainUsed ? u.executed : chainUsed) + u.open)
    }
    return { usedUnits, actionsUsed: use.actionsUsed }
  }

  /** `PolicyState` fields for `evaluate` (`stateFrom` on `useOf`). */
  const stateOf = (row: UsageRow, exceptId?: string, chainRead?: Effect.Effect<ChainUse | undefined>) =>
    Effect.map(useOf(row, exceptId, new Date(), chainRead), (use) => stateFrom(row, use))

  /**
   * Under the grant's row lock (inside a transaction): its status and frozen flag as they are
   * now, on `row` (the rest of a grant's row never changes), and the `PolicyState` fields from
   * its ledger read after the lock (without reservation `exceptId`), in one round trip
   * (`DelegationRepo.lockWithLedger`). `fromChain`: the enforcers' state, which every caller reads
   * before its transaction, so the lock is never held across a chain call (no row lock holds the
   * chain still anyway). Undefined: no such grant.
   */
  const lockedStateOf = <R extends UsageRow & { readonly status: string; readonly frozen: boolean }>(
    row: R,
    fromChain: ChainUse | undefined,
    exceptId?: string,
    reserving?: NewReservation
  ) =>
    Effect.gen(function*() {
      // With `reserving`: inserted in the lock's own statement, on the ledger before it (the
      // caller rolls back when its evaluation of that ledger refuses).
      const since = sinceOf(row, new Date())
      const locked = yield* (reserving === undefined ? repo.lockWithLedger(row.id, since, exceptId) : repo.lockAndReserve(row.id, since, reserving))
      if (locked === undefined) return undefined
      return {
        row: { ...row, status: locked.status, frozen: locked.frozen },
        state: stateFrom(row, useFrom(row, locked.ledger, fromChain))
      }
    }).pipe(Effect.withSpan("Usage.lockedStateOf"))

  const budgetUnits = (policy: PolicySet, token: string) => {
    const b = policy.budgets.find((x) => lower(x.token.address ?? "") === token)
    return b === undefined ? undefined : toUnits(b.amount, decimalsOf(token))
  }

  /**
   * `spentToDate` of a delegation: per budget, reconciled; the current period for period budgets.
   * Read in this order: the ledger with the open payments (one snapshot), which of those the chain
   * shows redeemed, then the enforcers' spend; a payment settled on chain is counted once, as spent.
   */
  const spentToDate = (row: UsageRow, now: Date = new Date()) =>
    Effect.gen(function*() {
      const { ledger: rows, payments } = yield* repo.ledgerWithOpenPayments(row.id, sinceOf(row, now))
      const landed = yield* landedPayments(row, payments)
      const fromChain = yield* onChain(row, now)
      return spentFrom(row, useFrom(row, rows, fromChain, landed), now)
    })

  /**
   * `spentToDate` of many grants (a list): their ledgers and open payments in one statement, then
   * the chain's reads at once (bounded), in `spentToDate`'s order, rather than one grant after another
   * (docs/performance.md, "Console first view").
   */
  const spentToDateAll = (rows: ReadonlyArray<UsageRow>, now: Date = new Date()) =>
    Effect.gen(function*() {
      const reads = yield* repo.ledgersWithOpenPayments(rows.map((r) => ({ id: r.id, since: sinceOf(r, now) })))
      const landed = yield* Effect.forEach(rows, (r) => landedPayments(r, reads.get(r.id)?.payments ?? []), { concurrency: 32 })
      const fromChain = yield* Effect.forEach(rows, (r) => onChain(r, now), { concurrency: 32 })
      return rows.map((r, i) => spentFrom(r, useFrom(r, reads.get(r.id)?.ledger ?? [], fromChain[i], landed[i]), now))
    }).pipe(Effect.withSpan("Usage.spentToDateAll"))

  const spentFrom = (row: UsageRow, use: Use, now: Date) =>
      row.policy_set.budgets.map((b) => {
        const token = lower(b.token.address ?? "")
        const decimals = decimalsOf(token)
        const limit = toUnits(b.amount, decimals) ?? 0n
        const u = use.perToken.get(token) ?? { executed: 0n, open: 0n }
        let remaining = limit - u.executed - u.open
        if (u.chainAvailable !== undefined && u.chainAvailable - u.open < remaining) remaining = u.chainAvailable - u.open
        // A stream: only what has accrued can be spent (also when the chain could not be read).
        const unlocked = b.stream === undefined ? undefined : unlockedAt(streamUnits(b.stream, b.amount, decimals), Math.floor(now.getTime() / 1000))
        if (unlocked !== undefined && unlocked - u.executed - u.open < remaining) remaining = unlocked - u.executed - u.open
        if (remaining < 0n) remaining = 0n
        const current = b.period === undefined ? undefined : currentPeriod(b.period, now)
        return {
          token: { symbol: b.token.symbol, chainId: b.token.chainId },
          limit: b.amount,
          spent: fromUnits(u.executed, decimals),
          remaining: fromUnits(remaining, decimals),
          expiresAt: row.policy_set.expiresAt,
          reserved: fromUnits(u.open, decimals),
          ...(current === undefined ? {} : { periodStart: current.start.toISOString(), resetsAt: current.end.toISOString() }),
          ...(unlocked === undefined ? {} : { unlocked: fromUnits(unlocked, decimals) })
        }
      })

  /** BasketPeriodEnforcer's spend in the current period (18-decimals USD); undefined without a basket or when unreadable. */
  const basketOnChain = (row: UsageRow, now: Date) =>
    Effect.gen(function*() {
      const net = chains.find(row.chain_id)
      const leg = row.legs[0]
      if (net === undefined || leg === undefined) return undefined
      const caveat = caveatOf(net, leg.delegation, "BasketPeriodEnforcer")
      const terms = caveat === undefined ? undefined : decodeBasketTerms(caveat.terms as Hex)
      if (caveat === undefined || terms === undefined) return undefined
      const data = yield* net.chain.call({
        to: enforcerOf(net)("BasketPeriodEnforcer")!,
        data: encodeFunctionData({
          abi: basketPeriodEnforcerAbi,
          functionName: "getAvailableAmount",
          args: [leg.permissionId, net.network.delegation.DelegationManager, caveat.terms as Hex]
        })
      })
      const [, spent, current] = yield* decoded(() =>
        decodeFunctionResult({ abi: basketPeriodEnforcerAbi, functionName: "getAvailableAmount", data }) as readonly [bigint, bigint, bigint]
      )
      // The chain answers at its latest block: a later period than the chain's has spent nothing yet.
      const nowSeconds = Math.floor(now.getTime() / 1000)
      const expected = nowSeconds < terms.startSeconds ? 0 : Math.floor((nowSeconds - terms.startSeconds) / terms.periodSeconds) + 1
      return BigInt(expected) > current ? 0n : spent
    }).pipe(
      Effect.catch((e) => Effect.logWarning("delegation usage: the basket enforcer's state could not be read", e).pipe(Effect.as(undefined))),
      Effect.withSpan("Usage.basketOnChain")
    )

  /** A basket's use in USD: each basket token's executed and open units counted 1:1, or the enforcer's spend if larger. */
  const basketToDate = (row: UsageRow, now: Date = new Date()) =>
    Effect.gen(function*() {
      const basket = row.policy_set.basket
      if (basket === undefined) return undefined
      const [use, chainSpent] = yield* Effect.all([useOf(row, undefined, now), basketOnChain(row, now)], { concurrency: 2 })
      let executed = 0n
      let open = 0n
      for (const t of basket.tokens) {
        const token = lower(t.address ?? "")
        const u = use.perToken.get(token)
        if (u === undefined) continue
        executed += toBasketUnits(u.executed, decimalsOf(token))
        open += toBasketUnits(u.open, decimalsOf(token))
      }
      const spent = chainSpent !== undefined && chainSpent > executed ? chainSpent : executed
      const limit = basketUnits(basket.amount) ?? 0n
      const left = limit - spent - open
      const current = basket.period === undefined ? undefined : currentPeriod(basket.period, now)
      return {
        unit: "USD" as const,
        limit: basket.amount,
        spent: fromUnits(spent, BASKET_DECIMALS),
        remaining: fromUnits(left > 0n ? left : 0n, BASKET_DECIMALS),
        reserved: fromUnits(open, BASKET_DECIMALS),
        ...(current === undefined ? {} : { periodStart: current.start.toISOString(), resetsAt: current.end.toISOString() })
      }
    })

  return { useOf, stateOf, lockedStateOf, spentToDate, spentToDateAll, onChain, basketToDate }
})

export type Usage = Effect.Success<ReturnType<typeof makeUsage>>
