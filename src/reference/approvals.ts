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
      "two approvals at once both count and approve once. Never the agent's own: its session, or an approver it controls " +
      "(its key, its accounts, a named redeemer, an account its key owns) is a 400 naming `approver` (the chain refuses such an approval too).",
    caller: "The owner or a named approver; never the agent.",
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
  },
  "approvals.askChange": {
    summary: "Ask the owner to change a grant",
    description:
      "The agent asks for more: new budget totals, a per-action maximum, a count, a later expiry or new recipients, with a " +
      "reason. Checked against the grant at once (400 naming the field: a token the grant has no budget of, nothing that would " +
      "change, a grant with a renewing or streaming budget). The owner is told with a deep link. One open request per grant " +
      "(409 names it). What the grant already spent carries over: the new totals are limits of the whole.",
    caller: "The agent holding the grant (its owner builds a new grant instead).",
    chain: "Nothing until the owner accepts."
  },
  "approvals.listChanges": {
    summary: "List grant change requests",
    description: "The change requests the signer owns or asked for as the agent, newest first (at most 200); `?status=pending` waits for the owner.",
    caller: "The grant's owner or its agent.",
    chain: "Reads only; changes nothing."
  },
  "approvals.getChange": {
    summary: "Read one grant change request",
    description:
      "One request with `diff`: each changed term old and new, in plain terms; its status, deadline, decision and, once " +
      "accepted, the replacement grant's id.",
    caller: "The grant's owner or its agent (anyone else: 404).",
    chain: "Reads only; changes nothing."
  },
  "approvals.buildChange": {
    summary: "Build the replacement operation",
    description:
      "The owner's ONE operation that replaces the grant: `disableDelegation` of the old grant, `SpendGuard.expectUnchanged` " +
      "(the old grant's enforcer state is still what the carry-over was read from), then the new grant enabled with its " +
      "on-chain budgets and count lowered by what was spent. Answered like `POST /delegations/build` (the operation and the " +
      "delegation to sign). Each call builds afresh; accept the latest. 400 when a new total is not above what was spent.",
    caller: "The grant's owner.",
    chain: "Builds only; nothing changes until it is accepted."
  },
  "approvals.acceptChange": {
    summary: "Accept a grant change request",
    description:
      "The owner's signed replacement (the latest build) is relayed and waited for; the request is `accepted` with " +
      "`newDelegationId` once the new grant is enabled (the old one revoked by the same transaction). If the old grant was " +
      "redeemed or revoked meanwhile the chain refuses the whole operation (409) and the request stays open. Repeated: the " +
      "same answer; two at once enable once.",
    caller: "The grant's owner.",
    chain: "One transaction: the old grant disabled, its spend checked unchanged, the new grant enabled."
  },
  "approvals.declineChange": {
    summary: "Decline a grant change request",
    description: "The owner declines a pending change request with a reason; the agent is told. 409 once settled.",
    caller: "The grant's owner.",
    chain: "Changes nothing on chain."
  },
  "approvals.addContact": {
    summary: "Register a webhook for an approver",
    description:
      "For an approver who does not sign in here: the owner registers a signed webhook (Standard Webhooks) that receives " +
      "every notification of the owner's approval requests that approver is named in (opened, approved, denied, expired, " +
      "executed), with the deep link. The secret is shown now only. 400 when the address is no approver of the owner's grants " +
      "or the URL is refused.",
    caller: "A grant's owner.",
    chain: "Nothing."
  },
  "approvals.listContacts": {
    summary: "List approver webhooks",
    description: "The owner's approver webhooks (approver, URL, when made; never the secret).",
    caller: "A grant's owner.",
    chain: "Reads only; changes nothing."
  },
  "approvals.removeContact": {
    summary: "Remove an approver webhook",
    description: "Removes one of the owner's approver webhooks; its pending deliveries are dead-lettered. Anyone else's is a 404.",
    caller: "A grant's owner.",
    chain: "Nothing."
  }
}
