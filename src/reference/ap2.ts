import type { OperationDoc } from "./Reference.ts"

/** AP2 (Agent Payments Protocol) open Payment Mandates in (docs/ap2.md). */
export const ap2Docs: Record<string, OperationDoc> = {
  "ap2.buildPaymentMandate": {
    summary: "Build a grant from an AP2 open Payment Mandate",
    description:
      "Takes an AP2 (v0.2) open Payment Mandate's claims (`vct` `mandate.payment.open.1`), checks them against AP2's published " +
      "JSON schema, and answers the same grant build as `POST /delegations/build`, with the mandate named (`mandate.hash`: " +
      "sha-256 of its RFC 8785 form) and `mapped` (which constraint became which limit). `payment.amount_range` (minor units) is " +
      "the per-action maximum; `payment.budget` (major units) the total, or with a DAILY/WEEKLY/BIWEEKLY `payment.agent_recurrence` " +
      "one payment's maximum per period within it; `max_occurrences` the action count; `payment.allowed_payees` (addresses) the " +
      "recipients; `payment.execution_date` and `exp` the window. A constraint the chain cannot hold (a minimum, a calendar " +
      "recurrence, a payee that is not an address, a currency no stablecoin here pays, payment instruments, PISPs) is a 400 " +
      "naming every one (`details.constraints`, `details.problems`); nothing is stored. The owner signs and enables the build " +
      "with `POST /delegations`; the grant then shows the mandate's hash.",
    caller: "The owner's session (the account's signer).",
    chain: "Nothing yet: the grant is enabled by `POST /delegations` with the owner's signatures."
  }
}
