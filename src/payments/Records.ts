/** A payment row as the wire shows it (pure). */
import { getAddress } from "viem"
import type { TokenRegistry } from "../tokens/TokenRegistry.ts"
import type { X402Payment } from "./Domain.ts"
import type { PaymentRow } from "./PaymentRepo.ts"
import { fromUnits } from "../delegations/Policy.ts"

export const toPayment = (row: PaymentRow, tokens: TokenRegistry["Service"], now: Date): X402Payment => {
  const token = tokens.byAddress(row.chain_id, row.asset)
  const status = row.status === "settled" ? "settled" : row.valid_before.getTime() <= now.getTime() ? "expired" : "authorized"
  return {
    id: row.id,
    paymentHash: row.payment_hash,
    delegationId: row.delegation_id,
    chainId: row.chain_id,
    scheme: row.scheme,
    asset: getAddress(row.asset),
    ...(token === undefined ? {} : { token: token.symbol }),
    payTo: getAddress(row.pay_to),
    amount: row.amount,
    facilitator: getAddress(row.facilitator),
    ...(row.resource_url === null
      ? {}
      : { resource: { url: row.resource_url, ...(row.resource_description === null ? {} : { description: row.resource_description }) } }),
    validBefore: row.valid_before.toISOString(),
    status,
    ...(row.reservation_id === null ? {} : { reservationId: row.reservation_id }),
    ...(row.settled_units === null ? {} : { settledUnits: row.settled_units }),
    ...(row.settled_units === null || token === undefined ? {} : { settledAmount: fromUnits(BigInt(row.settled_units), token.decimals) }),
    ...(row.tx_hash === null ? {} : { txHash: row.tx_hash }),
    ...(row.audit_event_id === null ? {} : { auditEventId: row.audit_event_id }),
    createdAt: row.created_at.toISOString(),
    ...(row.settled_at === null ? {} : { settledAt: row.settled_at.toISOString() })
  }
}
