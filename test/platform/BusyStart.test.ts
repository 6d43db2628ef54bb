/**
 * The service starts every time on a busy machine (issue 45 item 1): starts in a row of the real
 * service process on its embedded defaults, with CPU burners beside it, all become ready (every
 * wait for a child is readiness-driven within LOCAL_READY_TIMEOUT, 3 minutes). With 9464 taken
 * and METRICS_PORT unset, /metrics takes a free port and the log says where. The smoke here is
 * 2 starts of one chain; `npx tsx bench/starts.ts` runs the full 10 of two chains (minutes).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as net from "node:net"
import { burnCpu, startsInARow } from "../support/BusyStarts.ts"

/**
 * Holds 127.0.0.1:9464 for the whole test. Another copy of the suite on this host may hold it a
 * while (this same test): then it is tried again until this test holds it, so the port cannot be
 * let go by someone else in the middle of the starts (a second copy's run saw a start take 9464).
 */
const hold9464 = Effect.acquireRelease(
  Effect.promise(async () => {
    const deadline = Date.now() + 300_000
    for (;;) {
      const server = await new Promise<net.Server | undefined>((resolve) => {
        const s = net.createServer()
        s.once("error", () => resolve(undefined))
        s.listen(9464, "127.0.0.1", () => resolve(s))
      })
      if (server !== undefined) return server
      if (Date.now() > deadline) throw new Error("127.0.0.1:9464 stayed taken by another process for 5 minutes")
      await new Promise((r) => setTimeout(r, 250))
    }
  }),
  (server) => Effect.sync(() => server.close())
)

describe("starts on a busy machine", () => {
  it.live("2 starts in a row beside 2 CPU burners all become ready; /metrics moves off a taken 9464 and says where", () =>
    Effect.scoped(Effect.gen(function*() {
      yield* hold9464
      yield* burnCpu(2, 400_000)
      const figures = yield* startsInARow(2, { LOCAL_CHAIN_IDS: "31337" })
      assert.strictEqual(figures.length, 2)
      for (const f of figures) {
        assert.isDefined(f.metricsUrl)
        assert.notInclude(f.metricsUrl!, ":9464/", "9464 is taken: another port")
      }
    })), 900_000)
})
