/**
 * The service's answers in the MCP tools' shapes (Schemas.ts), and a refused call as a tool error
 * carrying the `declineReason`. Pure: no I/O.
 */
import type { Delegation } from "../delegations/Domain.ts"
import type { GrantChangeRequest } from "../domain/Approvals.ts"
import type { UserOpReceipt } from "../domain/Operations.ts"
import { isApiError } from "../api/Envelope.ts"
import { toEnvelope } from "../api/Errors.ts"
import type { PaymentRefused } from "@das/x402-erc7710"
import { ToolRefusal } from "./Refusal.ts"
import type { PermissionApproval } from "../permissions/Domain.ts"
import type { ChangeRequestView, GrantView, PermissionAskView, Receipt, ToolError } from "./Schemas.ts"

/** A grant as the agent can use it now: limits, and per budget what is spent, reserved, left and when it renews. */
export const grantView = (d: Delegation): GrantView => {
  const p = d.policySet
  const budgets = p.budgets.map((b) => {
    const used = d.spentToDate.find((s) => s.token.symbol === b.token.symbol)
    return {
      token: { symbol: b.token.symbol, chainId: b.token.chainId },
      kind: b.period !== undefined ? "period" as const : b.stream !== undefined ? "stream" as const : "total" as const,
      limit: used?.limit ?? b.amount,
      spent: used?.spent ?? 0,
      reserved: used?.reserved ?? 0,
      left: used?.remaining ?? 0,
      ...(b.period === undefined ? {} : {
        renewal: {
          every: b.period.every,
          seconds: b.period.seconds,
          ...(used?.periodStart === undefined ? {} : { periodStart: used.periodStart }),
          ...(used?.resetsAt === undefined ? {} : { resetsAt: used.resetsAt })
        }
      }),
      ...(b.stream === undefined ? {} : {
        stream: { ...b.stream, ...(used?.unlocked === undefined ? {} : { unlocked: used.unlocked }) }
      })
    }
  })
  return {
    id: d.id,
    name: d.name,
    status: d.status,
    chain: d.chain,
    chainId: d.chainId,
    ...(d.delegatorAddress === undefined ? {} : { payer: d.delegatorAddress }),
    delegate: d.delegateeAddress,
    summary: d.humanSummary,
    expiresAt: p.expiresAt,
    perActionMax: { token: { symbol: p.perActionMax.token.symbol, chainId: p.perActionMax.token.chainId }, amount: p.perActionMax.amount },
    maxActions: p.maxActions,
    recipients: p.recipientAllowlist.map((r) => ({ name: r.name, address: r.address })),
    budgets,
    ...(p.approval === undefined ? {} : { approvalRule: { required: p.approval.required, approvers: [...p.approval.approvers] } })
  }
}

export const receiptView = (r: UserOpReceipt): Receipt => ({
  userOpId: r.userOpId,
  userOpHash: r.userOpHash,
  status: r.status,
  outcome: r.outcome,
  ...(r.transactionHash === undefined ? {} : { transactionHash: r.transactionHash }),
  ...(r.blockNumber === undefined ? {} : { blockNumber: r.blockNumber }),
  ...(r.reason === undefined ? {} : { reason: r.reason }),
  ...(r.auditEventId === undefined ? {} : { auditEventId: r.auditEventId })
})

/** `executed` once included and mined; `failed` when it settled otherwise; `submitted` while open. */
export const statusOf = (r: UserOpReceipt) =>
  r.status === "included" && r.outcome === "mined" ? "executed" as const : r.status === "submitted" ? "submitted" as const : "failed" as const

export const changeView = (c: GrantChangeRequest): ChangeRequestView => ({
  id: c.id,
  status: c.status,
  grantId: c.delegationId,
  summary: c.summary,
  reason: c.reason,
  diff: c.diff.map((x) => ({ ...x })),
  deadline: c.deadline,
  ...(c.newDelegationId === undefined ? {} : { newGrantId: c.newDelegationId }),
  ...(c.decision === undefined ? {} : { decision: { ...c.decision } })
})

/** An agent's ask (the owner's permission approval of one grant) as the agent reads it. */
export const askView = (a: PermissionApproval): PermissionAskView => {
  const grant = a.grants?.[0]
  const request = grant?.request
  const response = a.permissions?.[0]
  return {
    id: a.id,
    status: a.status,
    payer: request?.from ?? "",
    chainId: request === undefined ? 0 : Number(BigInt(request.chainId)),
    summary: grant?.build.humanSummary ?? "",
    asked: request === undefined ? {} : JSON.parse(JSON.stringify(request)) as PermissionAskView["asked"],
    expiresAt: a.expiresAt,
    ...(grant?.adjustments === undefined ? {} : { adjustments: grant.adjustments.map((x) => ({ ...x })) }),
    ...(grant?.delegationId === undefined || a.status !== "granted" ? {} : { grantId: grant.delegationId }),
    ...(response === undefined ? {} : { context: response.context }),
    ...(a.failure === undefined ? {} : { failure: a.failure })
  }
}

/**
 * Why a call was refused. `declineReason` is always set: the grant rule the service named (a 422
 * `out_of_scope`: `per_action_exceeded`, `cap_exceeded`, ...), else the envelope's code
 * (`not_found` for another's grant, `bad_request` for a malformed one), so an agent reads one field.
 */
export const toolError = (e: unknown): ToolError => {
  if (isApiError(e)) {
    const { error } = toEnvelope(e)
    return {
      code: error.code,
      message: error.message,
      declineReason: error.declineReason ?? error.code,
      // The envelope's details are JSON already; copied so the tool result owns them.
      ...(error.details === undefined ? {} : { details: JSON.parse(JSON.stringify(error.details)) as ToolError["details"] & {} })
    }
  }
  if (e instanceof ToolRefusal) return { code: "bad_request", message: e.message, declineReason: "bad_request", details: { field: e.field } }
  // By name: the x402 client is loaded only when a payment runs (Stdio.ts loads the tools' work after the handshake).
  if (e instanceof Error && e.name === "PaymentRefused") {
    // The service's decline surfaces as field `grant`, reason `<declineReason>: <message>` (ServiceAuthorizer.ts).
    const refused = e as PaymentRefused
    const reason = refused.field === "grant" ? /^([a-z_]+):/.exec(refused.reason)?.[1] : undefined
    return { code: "payment_refused", message: refused.message, declineReason: reason ?? "payment_refused", details: { field: refused.field } }
  }
  const tagged = e as { readonly _tag?: unknown; readonly message?: unknown }
  const message = typeof tagged.message === "string" ? tagged.message : String(e)
  return { code: "unavailable", message: `the service could not be reached or answered unexpectedly: ${message}`, declineReason: "unavailable" }
}
