/**
 * The bound histogram of the hot paths (`Metrics.boundHistogram`, src/platform/Metrics.ts): fed
 * the same observations as prom-client's own `Histogram`, its scrape is the same text, byte for
 * byte (buckets cumulative, `+Inf`, `_sum`, `_count`, label order), across label sets, values on
 * a bound, above every bound, and zero; binding the same labels twice is one series.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Prom from "prom-client"
import { Metrics } from "../../src/platform/Metrics.ts"

const buckets = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
const name = "das_test_bound_seconds"
const help = "A test histogram"
const labelNames = ["method", "route", "status"] as const

describe("Metrics.boundHistogram", () => {
  it.effect("scrapes as prom-client's Histogram given the same observations", () =>
    Effect.gen(function*() {
      const metrics = yield* Metrics.make
      const bound = metrics.boundHistogram({ name, help, labelNames, buckets })
      const reference = new Prom.Registry()
      const stock = new Prom.Histogram({ name, help, labelNames, buckets, registers: [reference] })
      const observations: Array<[Record<(typeof labelNames)[number], string>, number]> = [
        [{ method: "GET", route: "/accounts", status: "200" }, 0.0042],
        [{ method: "GET", route: "/accounts", status: "200" }, 0.01],
        [{ method: "GET", route: "/accounts", status: "200" }, 0],
        [{ method: "GET", route: "/accounts", status: "401" }, 12.5],
        [{ method: "POST", route: "unmatched", status: "404" }, 0.3],
        [{ method: "GET", route: "/accounts", status: "200" }, 2.5]
      ]
      for (const [labels, value] of observations) {
        bound.bind(labels).observe(value)
        stock.labels(labels).observe(value)
      }
      const ours = yield* Effect.promise(() => metrics.registry.getSingleMetricAsString(name))
      const theirs = yield* Effect.promise(() => reference.getSingleMetricAsString(name))
      assert.strictEqual(ours, theirs)
      assert.include(ours, `${name}_bucket{le="+Inf",method="GET",route="/accounts",status="401"} 1`)
      assert.include(ours, `${name}_count{method="GET",route="/accounts",status="200"} 4`)
      // The whole scrape carries it too (registered in the service's registry).
      assert.include(yield* metrics.scrape, `${name}_sum{method="POST",route="unmatched",status="404"} 0.3`)
    }))
})
