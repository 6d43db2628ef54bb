/** The recommended polling helper against a scripted client (no server needed). */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { NotFound, UpstreamUnavailable } from "../../src/api/Errors.ts"
import type { ApiClient } from "../../src/client/Client.ts"
import { pollUserOp } from "../../src/client/poll.ts"
import type { UserOpReceipt } from "../../src/domain/Operations.ts"

const receipt = (status: UserOpReceipt["status"]): UserOpReceipt => ({
  userOpId: "uop_1",
  userOpHash: `0x${"11".repeat(32)}`,
  intentType: "account_freeze",
  chainId: 31337,
  sender: `0x${"22".repeat(20)}`,
  status,
  outcome: status === "included" ? "mined" : status === "failed" ? "rejected" : "pending",
  submittedAt: "2026-01-01T00:00:00.000Z"
})

/** A client whose `userops.get` plays `script` in order (the last step repeats). */
const scripted = (script: ReadonlyArray<Effect.Effect<UserOpReceipt, unknown>>) => {
  let calls = 0
  const api = {
    userops: {
      get: () => {
        const step = script[Math.min(calls, script.length - 1)]!
        calls++
        return step
      }
    }
  } as unknown as ApiClient
  return { api, calls: () => calls }
}

const fast = { interval: "1 millis", maxTries: 5 } as const

describe("pollUserOp", () => {
  it.live("stops at the first terminal receipt, through transient failures", () =>
    Effect.gen(function*() {
      const c = scripted([
        Effect.succeed(receipt("submitted")),
        Effect.fail(new UpstreamUnavailable({ message: "blip" })),
        Effect.succeed(receipt("included"))
      ])
      const r = yield* pollUserOp(c.api, "uop_1", fast)
      assert.strictEqual(r.status, "included")
      assert.strictEqual(c.calls(), 3)
    }))

  it.live("after the last try answers the last receipt seen", () =>
    Effect.gen(function*() {
      const c = scripted([Effect.succeed(receipt("submitted")), Effect.fail(new UpstreamUnavailable({ message: "down" }))])
      const r = yield* pollUserOp(c.api, "uop_1", fast)
      assert.strictEqual(r.status, "submitted")
      assert.strictEqual(c.calls(), 5)
    }))

  it.live("fails when no receipt was ever obtained, and at once on 404", () =>
    Effect.gen(function*() {
      const down = scripted([Effect.fail(new UpstreamUnavailable({ message: "down" }))])
      const e = yield* pollUserOp(down.api, "uop_1", fast).pipe(Effect.flip)
      assert.strictEqual(e._tag, "PollFailed")
      assert.strictEqual(e.tries, 5)
      const missing = scripted([Effect.fail(new NotFound({ message: "no" }))])
      const nf = yield* pollUserOp(missing.api, "uop_1", fast).pipe(Effect.flip)
      assert.strictEqual(nf.tries, 1)
      assert.strictEqual(missing.calls(), 1)
    }))

  it.effect("defaults: every 4 s, 30 tries", () =>
    Effect.gen(function*() {
      const c = scripted([Effect.succeed(receipt("submitted"))])
      const fiber = yield* pollUserOp(c.api, "uop_1").pipe(Effect.forkChild)
      yield* TestClock.adjust("116 seconds")
      assert.strictEqual(c.calls(), 30)
      const r = yield* Fiber.join(fiber)
      assert.strictEqual(r.status, "submitted")
    }))
})
