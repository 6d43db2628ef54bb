import { describe, expect, it } from "@effect/vitest"
import { Effect, Formatter, Logger, Redacted } from "effect"
import { formatLine, isPlainRecord, plainLine } from "../../src/platform/JsonLog.ts"

const record = (over: Record<string, unknown> = {}) => ({
  message: "Sent HTTP response",
  level: "INFO",
  timestamp: "2026-11-23T12:00:00.000Z",
  cause: undefined,
  annotations: { "http.method": "GET", "http.url": "/accounts", "http.status": 200 },
  spans: { "http.span": 3 },
  fiberId: "#12",
  ...over
}) as unknown as Parameters<typeof formatLine>[0]

describe("JSON log lines", () => {
  it("a plain record is written exactly as Formatter.formatJson writes it", () => {
    for (
      const r of [
        record(),
        record({ message: ["a", "b \"quoted\" \u2028 \\ \u0000"], cause: "Error: boom\n    at x" }),
        record({ annotations: { n: 1.5, t: true, z: null, s: "ünïcødé 🎉" } })
      ]
    ) {
      expect(isPlainRecord(r)).toBe(true)
      expect(formatLine(r)).toBe(Formatter.formatJson(r))
    }
  })

  it("anything else (bigint, redacted, an error, a non-finite number, an object) goes through Formatter.formatJson", () => {
    for (
      const value of [10n ** 30n, Redacted.make("secret-token"), new Error("boom"), Number.NaN, { nested: { a: 1 } }]
    ) {
      const r = record({ annotations: { value } })
      expect(isPlainRecord(r)).toBe(false)
      expect(formatLine(r)).toBe(Formatter.formatJson(r))
    }
    expect(formatLine(record({ annotations: { value: Redacted.make("secret-token") } }))).not.toContain("secret-token")
  })

  it.effect("a line written straight from the logger's input has the bytes of the structured record's", () =>
    Effect.gen(function*() {
      const seen: Array<{ readonly direct: string | undefined; readonly structured: string }> = []
      const compare = Logger.make((input) => {
        seen.push({ direct: plainLine(input), structured: Formatter.formatJson(Logger.formatStructured.log(input)) })
      })
      const logged = Effect.gen(function*() {
        yield* Effect.log("Sent HTTP response").pipe(
          Effect.annotateLogs({ "http.method": "GET", "http.url": "/accounts", "http.status": 200 }),
          Effect.withLogSpan("http.span")
        )
        yield* Effect.logWarning("two", "parts \"quoted\" \u2028", 3).pipe(
          Effect.annotateLogs({ s: "ünïcødé 🎉", n: 1.5, t: true, z: null }),
          Effect.withLogSpan("outer"),
          Effect.withLogSpan("inner")
        )
        yield* Effect.log("bigint").pipe(Effect.annotateLogs({ value: 10n ** 30n }))
        yield* Effect.log("secret").pipe(Effect.annotateLogs({ value: Redacted.make("secret-token") }))
        yield* Effect.logError("with a cause", new Error("boom"))
      })
      yield* logged.pipe(Effect.provide(Logger.layer([compare])))
      expect(seen.map((s) => s.direct === undefined)).toEqual([false, false, true, true, true])
      for (const { direct, structured } of seen.slice(0, 2)) expect(direct).toBe(structured)
    }))
})
