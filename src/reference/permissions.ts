import type { OperationDoc } from "./Reference.ts"

/** ERC-7715 permission requests in, ERC-7710 permission contexts out (docs/permissions.md). */
export const permissionsDocs: Record<string, OperationDoc> = {
  "permissions.rpc": {
    summary: "The four ERC-7715 wallet methods over JSON-RPC 2.0",
    description:
      "For a wallet to proxy: `wallet_requestExecutionPermissions`, `wallet_getSupportedExecutionPermissions`, " +
      "`wallet_getGrantedExecutionPermissions` and `wallet_revokeExecutionPermission`, one call per request (no batches, no " +
      "notifications). Always HTTP 200 with `result` or `error` (standard codes; -32602 names the field in `data.field`). A " +
      "request or revoke waits for the owner's approval (`PERMISSIONS_APPROVAL_WAIT`), then answers the standard response " +
      "with the permission `context` the agent redeems (ERC-7710), or 4001 when the owner rejects.",
    caller: "The owner's session (the account's signer).",
    chain: "A request ends in the grant's enable operation once the owner signs; a revoke in its disable; reads change nothing."
  },
  "permissions.request": {
    summary: "Request execution permissions (ERC-7715)",
    description:
      "Takes `wallet_requestExecutionPermissions` requests as `@metamask/7715-permission-types` defines them " +
      "(`native-token-stream`, `native-token-periodic`, `erc20-token-stream`, `erc20-token-periodic`, ...) and answers an " +
      "approval: per request, the grant as it will be held on chain and what the owner signs. Every request is checked before " +
      "anything is stored (400 naming `requests[i].…`).",
    caller: "The owner's session.",
    chain: "Nothing yet: the grant is enabled when the owner approves (`POST /permissions/approvals/{id}/approve`)."
  },
  "permissions.ask": {
    summary: "Ask an owner for a new permission (the agent)",
    description:
      "An agent asks an owner it works for (an account that granted it before) for a new ERC-7715 permission: `from` the " +
      "owner's account, `to` the agent, a `justification` (required, at most 280 characters, quoted last in the summary as the " +
      "requester's words). Checked as a dApp's request is (400 naming `request.…`), no amount above 1,000,000,000 whole tokens, " +
      "one pending ask per owner (409). It becomes the owner's permission approval (`requestedBy`: the agent), which the owner's " +
      "wallet signs or rejects; the owner is notified. The MCP tool `request_permission` calls it.",
    caller: "The agent's session (the asking delegate's signer); anyone else's account answers 404.",
    chain: "Nothing: the grant is enabled only when the owner approves (`POST /permissions/approvals/{id}/approve`)."
  },
  "permissions.asked": {
    summary: "Read an ask as it stands (the agent)",
    description:
      "The agent's ask: `pending`, `granted` (with the new grant's `delegationId` and the standard response's permission " +
      "`context`), `rejected`, `expired` or `failed`.",
    caller: "The agent that asked; anyone else 404.",
    chain: "Reads only."
  },
  "permissions.supported": {
    summary: "Permission types this service grants (wallet_getSupportedExecutionPermissions)",
    description:
      "Per ERC-7715 permission type, the served chains whose deployed caveat enforcers hold it exactly and the rule types it " +
      "may carry.",
    caller: "Any session.",
    chain: "Reads only the configured deployments; changes nothing."
  },
  "permissions.granted": {
    summary: "Granted permissions that can still be redeemed (wallet_getGrantedExecutionPermissions)",
    description:
      "The caller's grants that are neither revoked nor expired, on every served chain, in the standard's shape with their " +
      "permission `context` (the ERC-7710 delegation chain an agent redeems).",
    caller: "The owner's session.",
    chain: "Reads only; changes nothing."
  },
  "permissions.revoke": {
    summary: "Revoke a permission by its context (wallet_revokeExecutionPermission)",
    description:
      "Decodes the permission context to its grant and answers an approval carrying the gasless revoke build the owner signs, " +
      "then approves with `POST /permissions/approvals/{id}/approve`.",
    caller: "The owner's session.",
    chain: "Once approved: `disableDelegation` on the DelegationManager; the agent's redemptions then revert."
  },
  "permissions.approvals": {
    summary: "List permission approvals",
    description:
      "The caller's permission requests and revokes, newest first (the last 100), with what each needs signed; " +
      "`?status=pending` is what waits for the owner's wallet.",
    caller: "The owner's session.",
    chain: "Reads only; changes nothing."
  },
  "permissions.approval": {
    summary: "Read one permission approval",
    description: "The approval and its status; once granted, the standard responses (`permissions`) with their contexts.",
    caller: "The approval's owner (anyone else: 404).",
    chain: "Reads only; changes nothing."
  },
  "permissions.approve": {
    summary: "Approve with the owner's signatures",
    description:
      "The owner's signatures, one entry per grant in order: the signed enable operation and the EIP-712 signature of each " +
      "delegation (for a revoke: the signed revoke operation). Every signature is checked before anything is relayed; " +
      "approving twice answers the same result, and two approvals at once enable each grant once.",
    caller: "The approval's owner.",
    chain: "Relays each grant's enable (or the revoke) through the same path as `POST /delegations`; waits for the chain."
  },
  "permissions.reject": {
    summary: "Reject a permission approval",
    description:
      "The owner says no: a pending approval becomes `rejected`, and a waiting JSON-RPC call answers 4001. One already being " +
      "approved cannot be rejected (409).",
    caller: "The approval's owner.",
    chain: "Changes nothing on chain."
  }
}
