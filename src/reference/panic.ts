import type { OperationDoc } from "./Reference.ts"

export const panicDocs: Record<string, OperationDoc> = {
  "panic.listPanicAccounts": {
    summary: "The accounts this panic key can freeze",
    description:
      "For a panic key's own sign-in: each account whose owner installed it (`panic_install`), with whether it is frozen, " +
      "whether the delegation still verifies on chain, and the signed delegation itself (with it the panic key's account can " +
      "freeze without this service). Nothing else of the account is visible: not its grants, balances or activity.",
    caller: "The panic key (its own SIWE session).",
    chain: "Reads whether each delegation is disabled and still verifies; changes nothing."
  },
  "panic.buildPanicFreeze": {
    summary: "Build the panic key's freeze (panic_freeze)",
    description:
      "An operation of the panic key's own account that redeems the panic delegation to disable every live grant of the " +
      "account (or records the freeze when none is live): risk-reducing, sponsored. Relayed through `POST /userops`; when it " +
      "executes the account reads frozen and its owner's log has the entry. 404 for a hash that is not an installed panic key " +
      "of this sign-in, 409 when the account is already frozen or the owner replaced the key.",
    caller: "The panic key (its own SIWE session).",
    chain: "Nothing until relayed; then `DelegationManager.disableDelegation` of each live grant, through the panic delegation."
  }
}
