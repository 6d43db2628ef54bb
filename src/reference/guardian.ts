import type { OperationDoc } from "./Reference.ts"

export const guardianDocs: Record<string, OperationDoc> = {
  "guardian.listGuardedAccounts": {
    summary: "The accounts this key guards",
    description:
      "For a guardian's own sign-in: each account served here whose guardians include this key on chain (the Recovery " +
      "contract's `isGuardian`), with its threshold, delay, nonce and the started recovery if any (the new owner key, when " +
      "it can execute, the approvals and whether this guardian gave one). Nothing else of the account is visible: not its " +
      "label, grants, balances or activity.",
    caller: "A guardian (its own SIWE session).",
    chain: "Reads the Recovery contract's `GuardianAdded` events, `isGuardian`, `settingsOf` and approvals; changes nothing."
  },
  "guardian.buildRecoveryApproval": {
    summary: "The recovery approval for a guardian to sign",
    description:
      "The EIP-712 `RecoveryApproval` of a new owner key for the account at its current nonce, for the guardian's key to " +
      "sign (`eth_signTypedData_v4`); each guardian names the same key, so their approvals count for one recovery. 404 for " +
      "an account this key does not guard (or one not served here), 409 when a recovery is already started or this guardian " +
      "already approved this key, 400 naming the field for a key that cannot sign for the account.",
    caller: "A guardian of the account (its own SIWE session).",
    chain: "Reads the account's recovery settings and approvals; changes nothing."
  },
  "guardian.buildGuardianRecovery": {
    summary: "Build a guardian's recovery step (approve or execute)",
    description:
      "An operation of the guardian's own account, relayed through `POST /userops` (intent `rules_update`, not " +
      "risk-reducing: it hands the account to another key; sponsored as the sponsorship policy sponsors any operation). " +
      "`approve` carries the guardian's signed approval; the one reaching the threshold starts the delay. `execute`, after " +
      "the delay (chain time), replaces the account's signers through the account's own delegation to the Recovery " +
      "contract. When it executes, each Recovery event is on the owner's log and notifications at once. 404 for an account " +
      "this key does not guard, 409 when nothing is started, the delay has not passed or the account's delegation no longer " +
      "verifies.",
    caller: "A guardian of the account (its own SIWE session).",
    chain: "Nothing until relayed; then `Recovery.approve` or `Recovery.execute` (which redeems the account's delegation to call `updateSigners`)."
  }
}
