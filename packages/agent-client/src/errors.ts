/**
 * A failed call to the service, with its error envelope read: `code` (`out_of_scope`,
 * `bad_request`, `not_found`, ...), `declineReason` when the grant does not allow what was asked,
 * `details` (e.g. `approvalId` of an action held for approval, `changeId` of an open request).
 */
import type { ErrorEnvelope } from "./wire.ts"

export class ApiError extends Error {
  override readonly name = "ApiError"
  readonly code: string
  readonly declineReason: string | undefined
  readonly details: { readonly [key: string]: unknown } | undefined

  constructor(
    readonly status: number,
    readonly method: string,
    readonly path: string,
    readonly body: unknown
  ) {
    const envelope = isEnvelope(body) ? body.error : undefined
    super(
      envelope === undefined
        ? `${method} ${path}: HTTP ${status}`
        : `${method} ${path}: ${status} ${envelope.code}${envelope.declineReason === undefined ? "" : ` (${envelope.declineReason})`}: ${envelope.message}`
    )
    this.code = envelope?.code ?? `http_${status}`
    this.declineReason = envelope?.declineReason
    this.details = envelope?.details
  }
}

const isEnvelope = (body: unknown): body is ErrorEnvelope =>
  typeof body === "object" && body !== null && "error" in body &&
  typeof (body as { error: unknown }).error === "object" && (body as { error: unknown }).error !== null &&
  typeof (body as ErrorEnvelope).error.code === "string"

/** Polling gave up: no receipt was ever obtained, or the operation is not the caller's. */
export class PollFailed extends Error {
  override readonly name = "PollFailed"
  constructor(readonly userOpId: string, readonly tries: number, message: string, readonly lastError?: unknown) {
    super(message)
  }
}
