/**
 * What the sponsoring paymaster agrees to pay for (docs/onchain.md, "Paymaster and gas").
 * Its signature is what grants sponsorship, and a signed operation may go to any bundler,
 * so the limits apply when the service signs — at build time — never at relay time:
 *
 * - a per-signer quota: at most `SPONSOR_QUOTA_OPS` sponsored operations and
 *   `SPONSOR_QUOTA_GAS` gas (the operations' gas limits) per `SPONSOR_QUOTA_PERIOD`,
 *   counted by one conditional upsert (race-free across builds and service processes);
 *   past it a 429 `rate_limited` with `Retry-After` = the end of the period;
 * - a fee ceiling: the priority fee is capped at `SPONSOR_MAX_PRIORITY_FEE_GWEI` and the
 *   max fee at `SPONSOR_MAX_FEE_GWEI`; when the network's base fee leaves no room under
 *   the ceiling the build is a 503 `service_unavailable` with `Retry-After` (gas is too
 *   expensive to sponsor now). The VerifyingPaymaster's signed hash covers the fees, so a
 *   sponsorship cannot be replayed at a higher price.
 *
 * Risk-reducing builds (freeze, revoke) are always sponsored: they are neither counted
 * nor refused by the quota (their fees are still capped).
 */
import { Config, Duration, Effect } from "effect"
import { SqlClient } from "effect/sql"
import { ServiceUnavailable, TooManyRequests } from "../api/Errors.ts"

export interface SponsorLimits {
  /** Sponsored operations per signer per period; 0: no limit. */
  readonly ops: number
  /** Sponsored gas (sum of the operations' gas limits) per signer per period; 0: no limit. */
  readonly gas: bigint
  readonly period: Duration.Duration
  readonly maxFeePerGas: bigint
  readonly maxPriorityFeePerGas: bigint
}

const gwei = (name: string, fallback: number) =>
  Config.Number(name).pipe(Config.withDefault(fallback), Config.map((n) => BigInt(Math.round(n * 1e9))))

export const SponsorLimitsConfig: Config.Config<SponsorLimits> = Config.all({
  ops: Config.Int("SPONSOR_QUOTA_OPS").pipe(Config.withDefault(200)),
  gas: Config.Int("SPONSOR_QUOTA_GAS").pipe(Config.withDefault(500_000_000), Config.map(BigInt)),
  period: Config.Duration("SPONSOR_QUOTA_PERIOD").pipe(Config.withDefault(Duration.days(1))),
  maxFeePerGas: gwei("SPONSOR_MAX_FEE_GWEI", 100),
  maxPriorityFeePerGas: gwei("SPONSOR_MAX_PRIORITY_FEE_GWEI", 2)
})

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

/** Counts one sponsored operation of `gas` for `signer`, or fails with 429 past the quota. */
export const chargeQuota = Effect.fn("Sponsorship.chargeQuota")(function*(
  limits: SponsorLimits,
  signer: string,
  gas: bigint,
  now: Date = new Date()
) {
  if (limits.ops <= 0 && limits.gas <= 0n) return
  const sql = yield* SqlClient.SqlClient
  const periodMs = Math.max(1000, Duration.toMillis(limits.period))
  const start = new Date(Math.floor(now.getTime() / periodMs) * periodMs)
  const maxOps = limits.ops <= 0 ? Number.MAX_SAFE_INTEGER : limits.ops
  const maxGas = limits.gas <= 0n ? (2n ** 200n).toString() : limits.gas.toString()
  const fits = gas.toString()
  // One statement: insert the period's row or add to it, only while both sums stay within the quota.
  const rows = yield* sql<{ ops: number }>`
    INSERT INTO sponsor_usage (signer_address, period_start, ops, gas)
    SELECT ${signer.toLowerCase()}, ${start}, 1, ${fits}::numeric
    WHERE ${fits}::numeric <= ${maxGas}::numeric AND 1 <= ${maxOps}
    ON CONFLICT (signer_address, period_start) DO UPDATE
      SET ops = sponsor_usage.ops + 1, gas = sponsor_usage.gas + EXCLUDED.gas
      WHERE sponsor_usage.ops + 1 <= ${maxOps} AND sponsor_usage.gas + EXCLUDED.gas <= ${maxGas}::numeric
    RETURNING ops`.pipe(Effect.orDie)
  if (rows.length === 0) {
    const retryAfterSeconds = Math.max(1, Math.ceil((start.getTime() + periodMs - now.getTime()) / 1000))
    return yield* new TooManyRequests({
      message: `The sponsorship quota of this signer is used up (${limits.ops} operations, ${limits.gas} gas per ` +
        `${Duration.format(limits.period)}); pay gas in a stablecoin, or try again when the period ends`,
      details: { retryAfterSeconds, quotaOps: limits.ops, quotaGas: limits.gas.toString() }
    })
  }
})
