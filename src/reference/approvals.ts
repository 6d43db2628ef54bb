import type { OperationDoc } from "./Reference.ts"

/** Approvals above a threshold (docs/approvals.md). */
export const approvalsDocs: Record<string, OperationDoc> = {
  "approvals.list": {
    summary: "List approval requests",
    description:
      "The requests the signer owns, may approve, or asked for as the agent, newest first (at most 200); `?status=pending` " +
      "is what waits for a decision.",
    caller: "The grant's owner, a named approver, or the agent that asked.",
    chain: "Reads only; changes nothing."
  },
  "approvals.get": {
    summary: "Read one approval request",
    description:
      "One request with the EIP-712 `Approval` each approver signs (`toSign`: the grant's hash, the exact transfer, a nonce, " +
      "the deadline), the signatures so far and how many are `required`.",
    caller: "The grant's owner, a named approver, or the agent that asked (anyone else: 404).",
    chain: "Reads only; changes nothing."
  },
  "approvals.approve": {
    summary: "Add an approver's signature",
    description:
      "Adds one approver's signature of `toSign`, checked as the ApprovalEnforcer will check it (ECDSA or ERC-1271; 400 naming " +
      "`signature` otherwise). At `required` signatures the request is `approved` and the agent can build it. 409 once settled; " +
      "two approvals at once both count and approve once.",
    caller: "The owner or a named approver.",
    chain: "Nothing yet: the signatures travel with the agent's redemption, where the ApprovalEnforcer checks them."
  },
  "approvals.deny": {
    summary: "Deny an approval request",
    description:
      "The owner or any approver denies a pending request: it never executes and the budget it held is free again. 409 once " +
      "settled.",
    caller: "The owner or a named approver.",
    chain: "Changes nothing on chain."
  },
  "approvals.build": {
    summary: "Build the approved action",
    description:
      "The agent's operation for an approved request, carrying the approvers' signatures in the grant's ApprovalEnforcer " +
      "caveat; the agent signs it and relays it with `POST /userops`. The relay's settlement marks the request `executed`.",
    caller: "The agent (the grant's delegate) that asked.",
    chain: "Builds only; the relayed operation transfers the approved amount, checked on chain against the signatures."
  }
}
