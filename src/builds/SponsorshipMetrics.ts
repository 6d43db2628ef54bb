/**
 * What sponsorship costs (docs/operations.md, "Metrics"), read at scrape time: each served
 * chain's paymaster deposit at its EntryPoint (what sponsored operations draw from: alert
 * before it runs dry), and the current quota period's figures of the paymaster's budget
 * (`SponsorshipBudget`: sponsored operations and gas, in all, and the budget's limits).
 */
import { Effect, Layer } from "effect"
import { entryPoint07Abi } from "viem/account-abstraction"
import { Chains } from "../chain/Chains.ts"
import { type Reading, withMetrics } from "../platform/Metrics.ts"
import { SponsorshipBudget } from "./Sponsorship.ts"

export const SponsorshipMetricsLive = Layer.effectDiscard(withMetrics((metrics) =>
  Effect.gen(function*() {
    const chains = yield* Chains
    const budget = yield* SponsorshipBudget
    const sponsoring = chains.all.flatMap((net) =>
      net.network.paymaster === undefined ? [] : [{ net, paymaster: net.network.paymaster.address }]
    )
    yield* metrics.gaugeOf(
      {
        name: "das_paymaster_deposit_wei",
        help: "The sponsoring paymaster's deposit at the EntryPoint, in wei, per chain",
        labelNames: ["chain_id"]
      },
      Effect.forEach(sponsoring, ({ net, paymaster }) =>
        Effect.tryPromise(() =>
          net.chain.client.readContract({
            address: net.network.entryPoint,
            abi: entryPoint07Abi,
            functionName: "balanceOf",
            args: [paymaster]
          })
        ).pipe(
          Effect.map((wei): ReadonlyArray<Reading<"chain_id">> => [{ labels: { chain_id: net.chainId }, value: Number(wei) }]),
          // One chain out of reach leaves the others' readings alone.
          Effect.timeout("1500 millis"),
          Effect.orElseSucceed((): ReadonlyArray<Reading<"chain_id">> => [])
        ), { concurrency: "unbounded" }).pipe(Effect.map((all) => all.flat()))
    )
    yield* metrics.gaugeOf(
      {
        name: "das_sponsorship_period_operations",
        help: "Sponsored operations signed in the current quota period, in all (risk-reducing ones included)"
      },
      Effect.map(budget.current, (f) => f.ops)
    )
    yield* metrics.gaugeOf(
      { name: "das_sponsorship_period_gas", help: "Sponsored gas (operations' gas limits) signed in the current quota period" },
      Effect.map(budget.current, (f) => Number(f.gas))
    )
    yield* metrics.gaugeOf(
      {
        name: "das_sponsorship_budget_share",
        help: "The larger of the period's operations and gas over SPONSOR_BUDGET_OPS / _GAS (absent: no budget)"
      },
      Effect.map(budget.current, (f) =>
        f.opsShare === undefined && f.gasShare === undefined ? [] : Math.max(f.opsShare ?? 0, f.gasShare ?? 0))
    )
  })
))
