import type { OperationDoc } from "./Reference.ts"

const ownerOrDelegate = "The owner of the granting account, or the delegate (a session of the delegatee account's key)."

export const delegationsDocs: Record<string, OperationDoc> = {
  "delegations.list": {
    summary: "List delegations",
    description:
      "The signer's grants with their budgets, `spentToDate` (what executed, read against the chain), `resetsAt` for a period " +
      "budget, and the plain-language `humanSummary`. Filter by `status`, `accountId` or `chainId`; `role=delegatee` lists the grants the signer holds.",
    caller: "The owner; with `role=delegatee`, the delegate.",
    chain: "Nothing; spent amounts are reconciled with the chain's record."
  },
  "delegations.build": {
    summary: "Build a grant",
    description:
      "Turns a policy (budgets per token, optional period or stream, per-action maximum, number of actions, recipient allowlist, " +
      "expiry) into a MetaMask Delegation Framework delegation whose caveats make the chain enforce every limit, plus the owner " +
      "account's operation that enables it. Answers the delegation(s) to sign (`delegations[].typedData`, EIP-712), the enable " +
      "operation with its own `typedData`, a `humanSummary` and a simulation. Nothing is stored as a grant until `POST /delegations`.",
    caller: "The owner of the account that grants (its session).",
    chain: "Nothing; simulates the enable operation."
  },
  "delegations.create": {
    summary: "Grant a delegation",
    description:
      "Sends the signed enable operation of a build with the owner's signature of each delegation leg. The service relays the " +
      "operation and answers the delegation once the chain executed it (`status: active`). A build used twice is 409.",
    caller: "The owner who made the build.",
    chain: "Executes the enable operation (deploys the account if needed); the signed delegation is then redeemable under its caveats."
  },
  "delegations.get": {
    summary: "Read one delegation",
    description: "One grant with its policy, status, budgets and `spentToDate`, `resetsAt` and the `humanSummary`.",
    caller: ownerOrDelegate,
    chain: "Nothing."
  },
  "delegations.act": {
    summary: "Build a delegated action",
    description:
      "The delegate asks to move `amount` of a budget token to `recipient` (an allowlist name or an address). The policy is " +
      "checked and the amount reserved under a lock; a refusal is 422 `out_of_scope` with `declineReason` (e.g. `per_action_exceeded`, " +
      "`cap_exceeded`, `recipient_not_allowed`), recorded on the owner's activity. Answers the delegate account's operation that " +
      "redeems the grant: sign its `typedData` with the delegate key and send it to `POST /userops`.",
    caller: "The delegate (a session of the delegatee account's key).",
    chain: "Nothing until relayed; then `DelegationManager.redeemDelegations` moves the tokens, and the caveats refuse anything beyond the grant."
  },
  "delegations.freeze": {
    summary: "Per-delegation freeze (not offered)",
    description:
      "There is no per-delegation freeze: always 400 naming the alternatives. Freeze the whole account " +
      "(`POST /account/rules/build`, `account_freeze`) or revoke this delegation.",
    caller: "The owner.",
    chain: "Nothing."
  },
  "delegations.unfreeze": {
    summary: "Per-delegation unfreeze (not offered)",
    description: "As `freeze`: always 400. Unfreeze the account (`account_unfreeze`) instead.",
    caller: "The owner.",
    chain: "Nothing."
  },
  "delegations.revoke": {
    summary: "Build a revoke",
    description:
      "Builds the owner account's operation that disables the delegation on chain (`DelegationManager.disableDelegation`). " +
      "Sign its `typedData` and send it to `POST /userops`; once executed the delegation is `revoked` and every later redemption " +
      "reverts on chain. Never rate-limited.",
    caller: "The owner.",
    chain: "Nothing until relayed; then the delegation is disabled on chain."
  },
  "delegations.policySnapshots": {
    summary: "The grant's policy history",
    description: "Every version of the delegation's policy, each with its hash and when it took effect.",
    caller: ownerOrDelegate,
    chain: "Nothing."
  },
  "delegations.redemptions": {
    summary: "How a grant was redeemed, as the chain shows it",
    description:
      "The chain follower's record of each redemption of the grant: the chain of delegations redeemed (delegator and delegate " +
      "of each), who redeemed it (a user operation or a plain transaction), what moved, and the owner's and delegate's " +
      "audit entries.",
    caller: "The grant's owner or its holder (anyone else: 404).",
    chain: "Reads only; changes nothing."
  }
}
