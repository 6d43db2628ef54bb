/**
 * The service's JSON log lines (`LOG_FORMAT=json`): Effect's structured record, serialized
 * with plain `JSON.stringify` when everything in it is already a plain value (the usual
 * case: every request logs one such line) and with `Formatter.formatJson` otherwise
 * (errors, bigints, redacted values, cycles), written to stdout in batches every 20 ms and
 * at shutdown rather than one synchronous write per line (docs/performance.md,
 * docs/decisions.md).
 */
import { Duration, Effect, Formatter, Logger } from "effect"

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

export const jsonLines = Logger.batched(Logger.map(Logger.formatStructured, formatLine), {
  window: Duration.millis(20),
  flush: (lines) => Effect.sync(() => void process.stdout.write(`${lines.join("\n")}\n`))
})
