/**
 * What sponsorship costs (docs/operations.md, "Metrics"), read at scrape time: each served
 * chain's paymaster deposit at its EntryPoint (what sponsored operations draw from: alert
 * before it runs dry), and the current quota period's figures of each chain's paymaster
 * budget (`SponsorshipBudget`: sponsored operations and gas, and their share of the budget).
 */
import { Effect, Layer } from "effect"
import { entryPoint07Abi } from "viem/account-abstraction"
import { Chains } from "../chain/Chains.ts"
import { type Reading, withMetrics } from "../platform/Metrics.ts"
import { SponsorshipBudget, type SponsorshipFigures } from "./Sponsorship.ts"

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
    const perChain = (pick: (f: SponsorshipFigures) => number | undefined) =>
      Effect.map(budget.current, (all): ReadonlyArray<Reading<"chain_id">> =>
        all.flatMap((f) => {
          const value = pick(f)
          return value === undefined ? [] : [{ labels: { chain_id: f.chainId }, value }]
        }))
    yield* metrics.gaugeOf(
      {
        name: "das_sponsorship_period_operations",
        help: "Sponsored operations signed in the current quota period, per chain (risk-reducing ones included)",
        labelNames: ["chain_id"]
      },
      perChain((f) => f.ops)
    )
    yield* metrics.gaugeOf(
      {
        name: "das_sponsorship_period_gas",
        help: "Sponsored gas (operations' gas limits) signed in the current quota period, per chain",
        labelNames: ["chain_id"]
      },
      perChain((f) => Number(f.gas))
    )
    yield* metrics.gaugeOf(
      {
        name: "das_sponsorship_budget_share",
        help: "The larger of the period's operations and gas over the chain's budget (absent: no budget there)",
        labelNames: ["chain_id"]
      },
      perChain((f) => (f.opsShare === undefined && f.gasShare === undefined ? undefined : Math.max(f.opsShare ?? 0, f.gasShare ?? 0)))
    )
  })
))
