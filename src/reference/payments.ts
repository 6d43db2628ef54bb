import type { OperationDoc } from "./Reference.ts"

/** x402 payments under a grant (docs/payments.md). */
export const paymentsDocs: Record<string, OperationDoc> = {
  "payments.authorize": {
    summary: "Authorize an x402 payment under a grant",
    description:
      "The agent sends the offer it chose from a resource server's `PAYMENT-REQUIRED` and the resource; the service checks " +
      "it against the grant like any action (422 `out_of_scope` with its `declineReason` otherwise), reserves the amount, " +
      "and answers the payment delegation the agent signs and sends in its `PAYMENT-SIGNATURE` (the `exact`/`upto` schemes " +
      "with the ERC-7710 method).",
    caller: "The agent holding the grant (its own session).",
    chain:
      "Nothing by the service: the facilitator redeems `[payment, grant]` on the DelegationManager, where every limit of the " +
      "grant holds; the chain follower records what moved."
  },
  "payments.list": {
    summary: "List x402 payments",
    description:
      "Payments under one grant (`delegationId`) or every grant the signer owns or holds, newest first (at most 200): what " +
      "was authorized and what settled (amount moved, transaction, the owner's audit entry), including payments redeemed " +
      "around the service.",
    caller: "The grant's owner or its holder.",
    chain: "Reads only; changes nothing."
  },
  "payments.get": {
    summary: "Read one x402 payment",
    description: "One payment under a grant the signer owns or holds, with its settlement as the chain shows it.",
    caller: "The grant's owner or its holder (anyone else: 404).",
    chain: "Reads only; changes nothing."
  }
}
