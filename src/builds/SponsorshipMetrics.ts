/**
 * What sponsorship costs (docs/operations.md, "Metrics"), read at scrape time: the paymaster's
 * deposit at the EntryPoint (what sponsored operations draw from: alert before it runs dry),
 * and the operations and gas counted against the signers' quotas in the current period (none
 * are counted while `SPONSOR_QUOTA_OPS` and `SPONSOR_QUOTA_GAS` are both 0).
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { entryPoint07Abi } from "viem/account-abstraction"
import { Chain } from "../chain/Chain.ts"
import { Network } from "../chain/Network.ts"
import { withMetrics } from "../platform/Metrics.ts"

export const registerSponsorshipMetrics = withMetrics((metrics) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const network = yield* Network
    const chain = yield* Chain
    const paymaster = network.paymaster?.address
    if (paymaster !== undefined) {
      yield* metrics.gaugeOf(
        { name: "das_paymaster_deposit_wei", help: "The sponsoring paymaster's deposit at the EntryPoint, in wei" },
        Effect.tryPromise(() =>
          chain.client.readContract({ address: network.entryPoint, abi: entryPoint07Abi, functionName: "balanceOf", args: [paymaster] })
        ).pipe(Effect.map(Number))
      )
    }
    const period = sql<{ ops: number | null; gas: string | null; signers: number }>`
      SELECT sum(ops)::int AS ops, sum(gas)::text AS gas, count(*)::int AS signers FROM sponsor_usage
      WHERE period_start = (SELECT max(period_start) FROM sponsor_usage)`.pipe(Effect.map((rows) => rows[0]))
    yield* metrics.gaugeOf(
      {
        name: "das_sponsorship_period_operations",
        help: "Sponsored operations counted against the signers' quotas in the current quota period"
      },
      Effect.map(period, (p) => p?.ops ?? 0)
    )
    yield* metrics.gaugeOf(
      { name: "das_sponsorship_period_gas", help: "Sponsored gas (operations' gas limits) counted in the current quota period" },
      Effect.map(period, (p) => Number(p?.gas ?? 0))
    )
  })
)
