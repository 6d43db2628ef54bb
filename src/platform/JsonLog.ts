/**
 * The service's JSON log lines (`LOG_FORMAT=json`): Effect's structured record, serialized
 * with plain `JSON.stringify` when everything in it is already a plain value (the usual
 * case: every request logs one such line; then built straight from the logger's input,
 * `plainLine`) and with `Formatter.formatJson` otherwise
 * (errors, bigints, redacted values, cycles), written to stdout in batches every 20 ms and
 * at shutdown rather than one synchronous write per line (docs/performance.md,
 * docs/decisions.md).
 */
import { Duration, Effect, Formatter, Logger, References } from "effect"

type Structured = ReturnType<typeof Logger.formatStructured.log>

const isPlainValue = (v: unknown): boolean =>
  v === null || typeof v === "string" || typeof v === "boolean" || (typeof v === "number" && Number.isFinite(v))

/** True when `JSON.stringify` of the record is exactly what `Formatter.formatJson` would write. */
export const isPlainRecord = (r: Structured): boolean => {
  const message = r.message
  if (Array.isArray(message) ? !message.every(isPlainValue) : !isPlainValue(message)) return false
  if (r.cause !== undefined && typeof r.cause !== "string") return false
  for (const v of Object.values(r.annotations)) if (!isPlainValue(v)) return false
  for (const v of Object.values(r.spans)) if (!isPlainValue(v)) return false
  return true
}

export const formatLine = (r: Structured): string => (isPlainRecord(r) ? JSON.stringify(r) : Formatter.formatJson(r))

type LogInput = Parameters<typeof Logger.formatStructured.log>[0]

/**
 * The line of a record that is plain throughout (a message of plain values, no cause, plain
 * annotations), written straight from the logger's input: the same bytes as `formatLine` of
 * `Logger.formatStructured`, without building that record and walking it again (every request
 * logs one such line: docs/performance.md, "GET /accounts", step 4). `undefined` otherwise.
 */
export const plainLine = (input: LogInput): string | undefined => {
  if (input.cause.reasons.length > 0) return undefined
  const parts = Array.isArray(input.message) ? input.message : [input.message]
  if (!parts.every(isPlainValue)) return undefined
  const annotations = input.fiber.getRef(References.CurrentLogAnnotations)
  for (const key in annotations) {
    if (key === "__proto__" || !isPlainValue(annotations[key])) return undefined
  }
  const now = input.date.getTime()
  const spans: Record<string, number> = {}
  for (const [label, start] of input.fiber.getRef(References.CurrentLogSpans)) {
    if (label === "__proto__") return undefined
    spans[label] = now - start
  }
  return JSON.stringify({
    message: parts.length === 1 ? parts[0] : parts,
    level: input.logLevel.toUpperCase(),
    timestamp: input.date.toISOString(),
    annotations,
    spans,
    fiberId: `#${input.fiber.id}`
  })
}

const lineOf = (input: LogInput): string => plainLine(input) ?? formatLine(Logger.formatStructured.log(input))

export const jsonLines = Logger.batched(Logger.make(lineOf), {
  window: Duration.millis(20),
  flush: (lines) => Effect.sync(() => void process.stdout.write(`${lines.join("\n")}\n`))
})
