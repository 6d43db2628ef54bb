/**
 * What the sponsoring paymaster agrees to pay for (docs/onchain.md, "Paymaster and gas").
 * Its signature is what grants sponsorship, and a signed operation may go to any bundler,
 * so the limits apply when the service signs — at build time — never at relay time. Each
 * chain's paymaster pays from its own deposit at that chain's gas prices, so every limit is
 * per chain (issue 29):
 *
 * - a per-signer quota on each chain: at most `SPONSOR_QUOTA_OPS` sponsored operations and
 *   `SPONSOR_QUOTA_GAS` gas (the operations' gas limits) per `SPONSOR_QUOTA_PERIOD`;
 * - a per-client-address quota on each chain (`SPONSOR_ADDRESS_QUOTA_OPS` / `_GAS`, same
 *   period): sign-in is free, so fresh keys from one address share one quota (the address is
 *   its peer key: an IPv4 address or an IPv6 /64, src/platform/ClientAddress.ts);
 * - each chain's budget (`SPONSOR_BUDGET_OPS` / `_GAS`, same period; per chain
 *   `CHAIN_<id>_SPONSOR_BUDGET_OPS` / `_GAS`): what that chain's paymaster may pay for in a
 *   period, whoever asks. Crossing `SPONSOR_BUDGET_WARN_AT` (80 %) logs a warning once;
 *   `SponsorshipBudget.current` answers each chain's figures (for metrics).
 *
 * Each is counted by a conditional upsert, all three in one transaction (race-free across
 * builds and service processes; a refusal by one rolls the others back). Past a quota: 429
 * `rate_limited` with `Retry-After` = the end of the period; past the budget: 503
 * `service_unavailable`, likewise.
 *
 * - a fee ceiling: the priority fee is capped at `SPONSOR_MAX_PRIORITY_FEE_GWEI` and the
 *   max fee at `SPONSOR_MAX_FEE_GWEI` (per chain `CHAIN_<id>_SPONSOR_MAX_FEE_GWEI` /
 *   `CHAIN_<id>_SPONSOR_MAX_PRIORITY_FEE_GWEI`: an L2's gas is not mainnet's); when the
 *   network's base fee leaves no room under the ceiling the build is a 503
 *   `service_unavailable` with `Retry-After` (gas is too expensive to sponsor now). The
 *   VerifyingPaymaster's signed hash covers the fees, so a sponsorship cannot be replayed at a
 *   higher price.
 *
 * Risk-reducing builds (a freeze, a revoke, a cancel of a started recovery: each builder
 * marks one risk-reducing only while it reduces a risk now, src/builds/Intents.ts) have no free
 * lane (issue 41): they are counted by every quota and by the budget like any other build;
 * they pass the per-signer and per-address quotas when those are used up, and only they may use
 * the budget's last `SPONSOR_BUDGET_RESERVE` share (default 5 %): ordinary builds are refused
 * at the budget less that reserve, risk-reducing ones at the budget itself. The paymaster never
 * signs more than the budget in a period, and a freeze still finds room when ordinary builds
 * have used theirs up.
 */
import { Config, Context, Duration, Effect, Layer, Option } from "effect"
import { Chains } from "../chain/Chains.ts"
import { SqlClient } from "effect/sql"
import { ServiceUnavailable, TooManyRequests } from "../api/Errors.ts"
import { joinOrBegin } from "./BuildRepo.ts"

export interface SponsorLimits {
  /** Sponsored operations per signer per period; 0: no limit. */
  readonly ops: number
  /** Sponsored gas (sum of the operations' gas limits) per signer per period; 0: no limit. */
  readonly gas: bigint
  /** Sponsored operations per client address per period; 0: no limit. */
  readonly addressOps: number
  /** Sponsored gas per client address per period; 0: no limit. */
  readonly addressGas: bigint
  /** Sponsored operations in all per period (the paymaster's budget); 0: no limit. */
  readonly budgetOps: number
  /** Sponsored gas in all per period; 0: no limit. */
  readonly budgetGas: bigint
  /** The share of the budget whose crossing is logged as a warning (0.8). */
  readonly warnAt: number
  /** The budget's last share that only risk-reducing builds may use (0.05). */
  readonly reserve: number
  readonly period: Duration.Duration
  readonly maxFeePerGas: bigint
  readonly maxPriorityFeePerGas: bigint
}

const gweiOf = (name: string) => Config.Number(name).pipe(Config.map((n) => BigInt(Math.round(n * 1e9))))
const gwei = (name: string, fallback: number) => gweiOf(name).pipe(Config.withDefault(BigInt(Math.round(fallback * 1e9))))

const gasUnitsOf = (name: string) => Config.Number(name).pipe(Config.map((n) => BigInt(Math.max(0, Math.floor(n)))))
const gasUnits = (name: string, fallback: number) => gasUnitsOf(name).pipe(Config.withDefault(BigInt(fallback)))

export const SponsorLimitsConfig: Config.Config<SponsorLimits> = Config.all({
  ops: Config.Int("SPONSOR_QUOTA_OPS").pipe(Config.withDefault(200)),
  gas: gasUnits("SPONSOR_QUOTA_GAS", 500_000_000),
  addressOps: Config.Int("SPONSOR_ADDRESS_QUOTA_OPS").pipe(Config.withDefault(1_000)),
  addressGas: gasUnits("SPONSOR_ADDRESS_QUOTA_GAS", 2_500_000_000),
  budgetOps: Config.Int("SPONSOR_BUDGET_OPS").pipe(Config.withDefault(20_000)),
  budgetGas: gasUnits("SPONSOR_BUDGET_GAS", 50_000_000_000),
  warnAt: Config.Number("SPONSOR_BUDGET_WARN_AT").pipe(Config.withDefault(0.8), Config.map((x) => Math.min(1, Math.max(0, x)))),
  reserve: Config.Number("SPONSOR_BUDGET_RESERVE").pipe(Config.withDefault(0.05), Config.map((x) => Math.min(1, Math.max(0, x)))),
  period: Config.Duration("SPONSOR_QUOTA_PERIOD").pipe(Config.withDefault(Duration.days(1))),
  maxFeePerGas: gwei("SPONSOR_MAX_FEE_GWEI", 100),
  maxPriorityFeePerGas: gwei("SPONSOR_MAX_PRIORITY_FEE_GWEI", 2)
})

/** Chain `chainId`'s limits: the shared ones, its budget and fee ceilings overridden by `CHAIN_<id>_SPONSOR_*` where set. */
export const sponsorLimitsOf = (chainId: number): Config.Config<SponsorLimits> =>
  Config.all({
    base: SponsorLimitsConfig,
    budgetOps: Config.option(Config.Int(`CHAIN_${chainId}_SPONSOR_BUDGET_OPS`)),
    budgetGas: Config.option(gasUnitsOf(`CHAIN_${chainId}_SPONSOR_BUDGET_GAS`)),
    maxFee: Config.option(gweiOf(`CHAIN_${chainId}_SPONSOR_MAX_FEE_GWEI`)),
    maxPriority: Config.option(gweiOf(`CHAIN_${chainId}_SPONSOR_MAX_PRIORITY_FEE_GWEI`))
  }).pipe(Config.map(({ base, budgetGas, budgetOps, maxFee, maxPriority }) => ({
    ...base,
    budgetOps: Option.getOrElse(budgetOps, () => base.budgetOps),
    budgetGas: Option.getOrElse(budgetGas, () => base.budgetGas),
    maxFeePerGas: Option.getOrElse(maxFee, () => base.maxFeePerGas),
    maxPriorityFeePerGas: Option.getOrElse(maxPriority, () => base.maxPriorityFeePerGas)
  })))

export interface Fees {
  readonly maxFeePerGas: bigint
  readonly maxPriorityFeePerGas: bigint
}

/**
 * The fees of a sponsored operation: the network's suggestion with its priority fee capped,
 * and the max fee capped at the ceiling. The suggestion's max fee is its base-fee margin
 * (viem: 1.2 × the base fee) plus its priority fee; when the capped max fee cannot cover
 * the current base fee plus the capped priority fee, the build waits (503, Retry-After).
 */
export const sponsoredFees = (suggested: Fees, limits: SponsorLimits): Effect.Effect<Fees, ServiceUnavailable> => {
  const margin = suggested.maxFeePerGas > suggested.maxPriorityFeePerGas ? suggested.maxFeePerGas - suggested.maxPriorityFeePerGas : 0n
  const baseFee = margin * 10n / 12n
  const priority = suggested.maxPriorityFeePerGas < limits.maxPriorityFeePerGas ? suggested.maxPriorityFeePerGas : limits.maxPriorityFeePerGas
  const wanted = margin + priority
  const maxFee = wanted < limits.maxFeePerGas ? wanted : limits.maxFeePerGas
  if (maxFee < baseFee + priority) {
    return Effect.fail(new ServiceUnavailable({
      message: `Gas is above the sponsorship ceiling (${Number(limits.maxFeePerGas) / 1e9} gwei): try again later`,
      details: { retryAfterSeconds: 30, baseFeeGwei: Number(baseFee) / 1e9 }
    }))
  }
  return Effect.succeed({ maxFeePerGas: maxFee, maxPriorityFeePerGas: priority })
}

/** The quota period `now` is in: [start, end). */
export const sponsorPeriod = (limits: SponsorLimits, now: Date = new Date()) => {
  const periodMs = Math.max(1000, Duration.toMillis(limits.period))
  const start = new Date(Math.floor(now.getTime() / periodMs) * periodMs)
  return { start, end: new Date(start.getTime() + periodMs) }
}

/** No limit: larger than any sum of gas. */
const UNLIMITED_GAS = 2n ** 200n
const opsCap = (n: number) => (n <= 0 ? Number.MAX_SAFE_INTEGER : n)
const gasCap = (n: bigint) => (n <= 0n ? UNLIMITED_GAS : n)

/**
 * The budget's caps for a build (0 configured: no limit): the whole budget for a risk-reducing
 * build, the budget less its reserve (`floor(budget × reserve)`) for an ordinary one.
 */
export const budgetCaps = (limits: SponsorLimits, riskReducing: boolean) => {
  const reserveOps = riskReducing ? 0 : Math.floor(limits.budgetOps * limits.reserve)
  const reserveGas = riskReducing ? 0n : limits.budgetGas * BigInt(Math.round(limits.reserve * 10_000)) / 10_000n
  return {
    ops: limits.budgetOps <= 0 ? Number.MAX_SAFE_INTEGER : limits.budgetOps - reserveOps,
    gas: limits.budgetGas <= 0n ? UNLIMITED_GAS : limits.budgetGas - reserveGas
  }
}

/** Who asks for a sponsored operation of `gas` (its gas limits' sum), on which chain. */
export interface SponsorCharge {
  readonly chainId: number
  readonly signer: string
  /** The client's peer key (an IPv4 address, an IPv6 /64: src/platform/ClientAddress.ts); `undefined` outside a request (then no per-address quota applies). */
  readonly clientAddress: string | undefined
  readonly gas: bigint
  /** Risk-reducing: counted everywhere, never refused by a quota, and may use the budget's reserve. */
  readonly riskReducing: boolean
}

/**
 * Counts one sponsored operation against the signer's quota, its client address's quota and
 * the chain's budget (`limits` are the chain's: `sponsorLimitsOf`), in one transaction; fails
 * (and counts nothing) past any of them.
 */
export const chargeSponsorship = Effect.fn("Sponsorship.charge")(function*(
  limits: SponsorLimits,
  who: SponsorCharge,
  now: Date = new Date()
) {
  const sql = yield* SqlClient.SqlClient
  const { start, end } = sponsorPeriod(limits, now)
  const retryAfterSeconds = Math.max(1, Math.ceil((end.getTime() - now.getTime()) / 1000))
  const gas = who.gas.toString()

  /** A counter of (scope, subject) this charge moves, and what is answered when it is full. */
  interface Counter {
    readonly scope: string
    readonly subject: string
    readonly maxOps: number
    readonly maxGas: bigint
    /** Counted, never refused (a risk-reducing build past a quota). */
    readonly always: boolean
    readonly refusal: () => TooManyRequests | ServiceUnavailable
  }
  const counters: Array<Counter> = []
  if (limits.ops > 0 || limits.gas > 0n) {
    counters.push({
      scope: "signer",
      subject: `${who.chainId}:${who.signer.toLowerCase()}`,
      maxOps: opsCap(limits.ops),
      maxGas: gasCap(limits.gas),
      always: who.riskReducing,
      refusal: () =>
        new TooManyRequests({
          message: `The sponsorship quota of this signer on this chain is used up (${limits.ops} operations, ${limits.gas} gas per ` +
            `${Duration.format(limits.period)}); pay gas in a stablecoin, or try again when the period ends`,
          details: { retryAfterSeconds, quotaOps: limits.ops, quotaGas: limits.gas.toString(), chainId: who.chainId }
        })
    })
  }
  if (who.clientAddress !== undefined && (limits.addressOps > 0 || limits.addressGas > 0n)) {
    counters.push({
      scope: "address",
      subject: `${who.chainId}:${who.clientAddress}`,
      maxOps: opsCap(limits.addressOps),
      maxGas: gasCap(limits.addressGas),
      always: who.riskReducing,
      refusal: () =>
        new TooManyRequests({
          message: `The sponsorship quota of this client address is used up (${limits.addressOps} operations, ` +
            `${limits.addressGas} gas per ${Duration.format(limits.period)}, whatever the signer); pay gas in a stablecoin, ` +
            `or try again when the period ends`,
          details: { retryAfterSeconds, quotaOps: limits.addressOps, quotaGas: limits.addressGas.toString(), scope: "address", chainId: who.chainId }
        })
    })
  }
  const budget = budgetCaps(limits, who.riskReducing)
  counters.push({
    scope: "budget",
    subject: String(who.chainId),
    maxOps: budget.ops,
    maxGas: budget.gas,
    always: false,
    refusal: () =>
      new ServiceUnavailable({
        message: `The service's sponsorship budget on this chain for this period is used up (${limits.budgetOps} operations, ` +
          `${limits.budgetGas} gas per ${Duration.format(limits.period)}${who.riskReducing ? "" : `, its last ${Math.round(limits.reserve * 100)} % kept for freezes and revokes`}); ` +
          "pay gas in a stablecoin, or try again when the period ends.",
        details: {
          retryAfterSeconds,
          budgetOps: limits.budgetOps,
          budgetGas: limits.budgetGas.toString(),
          reserve: limits.reserve,
          riskReducing: who.riskReducing,
          chainId: who.chainId
        }
      })
  })

  /**
   * Counter `i`: +1 operation and `gas`, only while both stay within its caps (always when `always`),
   * and only when counter `i - 1` moved (each is a CTE of one statement: the first full one stops the rest).
   */
  const upsert = (c: Counter, i: number) =>
    sql`c${sql.literal(String(i))} AS (
      INSERT INTO sponsor_totals (scope, subject, period_start, ops, gas)
      SELECT ${c.scope}, ${c.subject}, ${start}, 1, ${gas}::numeric
      WHERE ${i === 0 ? sql`TRUE` : sql`EXISTS (SELECT 1 FROM c${sql.literal(String(i - 1))})`}
        AND (${c.always} OR (${gas}::numeric <= ${c.maxGas.toString()}::numeric AND 1 <= ${c.maxOps}))
      ON CONFLICT (scope, subject, period_start) DO UPDATE
        SET ops = sponsor_totals.ops + 1, gas = sponsor_totals.gas + EXCLUDED.gas
        WHERE ${c.always} OR (sponsor_totals.ops + 1 <= ${c.maxOps}
          AND sponsor_totals.gas + EXCLUDED.gas <= ${c.maxGas.toString()}::numeric)
      RETURNING ops, gas::text AS gas)`
  const last = `c${counters.length - 1}`

  // One statement for every counter; inside the build's transaction (OperationBuilder) a refusal
  // rolls that whole transaction back, and on its own the counters moved before the full one are
  // rolled back with this one's.
  const charged = yield* joinOrBegin(sql, Effect.gen(function*() {
    const rows = yield* sql<{ moved: number; ops: number | null; gas: string | null }>`
      WITH ${sql.csv(counters.map(upsert))}
      SELECT ${sql.literal(counters.map((_, i) => `(SELECT count(*) FROM c${i})`).join(" + "))}::int AS moved,
             (SELECT ops FROM ${sql.literal(last)}) AS ops, (SELECT gas FROM ${sql.literal(last)}) AS gas`
    const moved = rows[0]?.moved ?? 0
    if (moved < counters.length) return yield* counters[moved]!.refusal()
    return { ops: rows[0]!.ops!, gas: BigInt(rows[0]!.gas!) }
  })).pipe(Effect.catchTag("SqlError", Effect.die))

  // Exactly one build crosses the warning line (the one whose count moved past it): one line per period.
  const crossed = (used: bigint, added: bigint, cap: bigint) =>
    cap > 0n && warnLine(cap, limits.warnAt) > used - added && warnLine(cap, limits.warnAt) <= used
  if (crossed(BigInt(charged.ops), 1n, BigInt(limits.budgetOps)) || crossed(charged.gas, who.gas, limits.budgetGas)) {
    yield* Effect.logWarning(
      `sponsorship on chain ${who.chainId}: ${Math.round(limits.warnAt * 100)} % of this period's budget is used (${charged.ops} of ` +
        `${limits.budgetOps || "unlimited"} operations, ${charged.gas} of ${limits.budgetGas || "unlimited"} gas; ` +
        `the period ends ${end.toISOString()}); ordinary builds are refused (503) past the budget less its reserve for risk-reducing ones`
    )
  }
})

/** The smallest count at or above `share` of `cap`. */
const warnLine = (cap: bigint, share: number) => (cap * BigInt(Math.round(share * 10_000)) + 9_999n) / 10_000n

/** The current period's sponsorship on one chain, as its paymaster's budget sees it. */
export interface SponsorshipFigures {
  readonly chainId: number
  readonly chain: string
  readonly periodStart: string
  readonly periodEnd: string
  /** Sponsored operations signed in the period (risk-reducing ones included). */
  readonly ops: number
  /** Their gas limits' sum. */
  readonly gas: bigint
  /** 0: no limit. */
  readonly budgetOps: number
  readonly budgetGas: bigint
  /** `ops / budgetOps`, `gas / budgetGas` (undefined without a limit). */
  readonly opsShare: number | undefined
  readonly gasShare: number | undefined
  /** Whether either share is at or past `SPONSOR_BUDGET_WARN_AT`. */
  readonly warning: boolean
  /** Whether ordinary builds are refused now (the budget less its reserve for risk-reducing builds is used up). */
  readonly exhausted: boolean
}

/** Each chain's sponsorship budget figures, for an operator (a metrics endpoint reads `current`). */
export class SponsorshipBudget extends Context.Service<SponsorshipBudget, {
  readonly current: Effect.Effect<ReadonlyArray<SponsorshipFigures>>
}>()("das/builds/SponsorshipBudget") {
  static readonly layer = Layer.effect(
    SponsorshipBudget,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const chains = yield* Chains
      const limitsOf = yield* Effect.forEach(chains.all, (c) =>
        Effect.gen(function*() {
          return { chainId: c.chainId, chain: c.name, limits: yield* sponsorLimitsOf(c.chainId) }
        }))
      const figures = ({ chain, chainId, limits }: (typeof limitsOf)[number]) =>
        Effect.gen(function*() {
          const { start, end } = sponsorPeriod(limits)
          const rows = yield* sql<{ ops: number; gas: string }>`
            SELECT ops, gas::text AS gas FROM sponsor_totals
            WHERE scope = 'budget' AND subject = ${String(chainId)} AND period_start = ${start}`
          const ops = rows[0]?.ops ?? 0
          const gas = BigInt(rows[0]?.gas ?? "0")
          const opsShare = limits.budgetOps > 0 ? ops / limits.budgetOps : undefined
          const gasShare = limits.budgetGas > 0n ? Number(gas) / Number(limits.budgetGas) : undefined
          const share = Math.max(opsShare ?? 0, gasShare ?? 0)
          return {
            chainId,
            chain,
            periodStart: start.toISOString(),
            periodEnd: end.toISOString(),
            ops,
            gas,
            budgetOps: limits.budgetOps,
            budgetGas: limits.budgetGas,
            opsShare,
            gasShare,
            warning: share >= limits.warnAt,
            exhausted: (limits.budgetOps > 0 && ops >= budgetCaps(limits, false).ops) || (limits.budgetGas > 0n && gas >= budgetCaps(limits, false).gas)
          } satisfies SponsorshipFigures
        })
      const current = Effect.forEach(limitsOf, figures).pipe(Effect.orDie, Effect.withSpan("SponsorshipBudget.current"))
      return SponsorshipBudget.of({ current })
    })
  )
}
