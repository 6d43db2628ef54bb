import type { OperationDoc } from "./Reference.ts"

export const accountsDocs: Record<string, OperationDoc> = {
  "accounts.listAccounts": {
    summary: "List the signer's smart accounts",
    description:
      "Every ERC-4337 smart account of the signer on every served chain: id, chain, address, whether deployed and frozen. " +
      "Account 0 of each chain exists from the first sign-in.",
    caller: "The signer (owner) session.",
    chain: "Reads whether each account is deployed; changes nothing."
  },
  "accounts.createAccount": {
    summary: "Add a smart account",
    description:
      "Makes the signer's next account index (a new address from the same key), on `chainId` or, without it, on every served chain. " +
      "The account is counterfactual until its first operation deploys it.",
    caller: "The signer (owner) session.",
    chain: "Nothing yet: the address is computed; the first operation deploys it."
  },
  "accounts.getRules": {
    summary: "Read the account's rules",
    description:
      "Whether the account is frozen (as the chain's executed freeze and unfreeze operations left it) and which rule changes " +
      "`POST /account/rules/build` accepts. Default: the signer's lowest account on the primary chain.",
    caller: "The owner of the account.",
    chain: "Nothing; reflects what executed on chain."
  },
  "accounts.buildRules": {
    summary: "Build a freeze or unfreeze of the account",
    description:
      "Builds the account operation that freezes (or unfreezes) the whole account: a frozen account's grants redeem nothing, " +
      "checked by the chain. Answers the unsigned operation, its `userOpHash`, the EIP-712 `typedData` to sign and a simulation. " +
      "Sign `typedData` with the owner key and send the operation to `POST /userops`. Never rate-limited: a freeze must always be buildable.",
    caller: "The owner of the account.",
    chain: "Nothing until relayed; once relayed and executed, the account's freeze state changes on chain."
  },
  "accounts.listDevices": {
    summary: "List the account's devices",
    description: "The keys that may sign for the account (its owner key, session keys), with when each was added.",
    caller: "The owner of the account.",
    chain: "Nothing; reads the account's devices."
  },
  "accounts.buildAccountDelegation": {
    summary: "Build the account's delegation to the Recovery contract, or a panic key's",
    description:
      "Guardians can recover an account only through a delegation the owner signs to the Recovery contract; this answers " +
      "that delegation's EIP-712 data (or the passkey challenge). Until it is signed, `guardian_add` is 409. With " +
      "`kind: \"panic\"` and `panicKey`, the delegation a panic key redeems to freeze the account and do nothing else " +
      "(held on chain by its caveats); once signed, `panic_install` puts it on the record.",
    caller: "The account's signer.",
    chain: "Builds only; changes nothing."
  },
  "accounts.signAccountDelegation": {
    summary: "Store the owner's signature of the recovery or panic delegation",
    description:
      "Checks the owner's signature (EOA or passkey assertion) of the delegation built by " +
      "`POST /account/rules/delegations/build` as the chain will, and keeps it for recoveries. 400 naming the field otherwise.",
    caller: "The account's signer.",
    chain: "Nothing until a recovery executes: the Recovery contract redeems the delegation then."
  },
  "accounts.getFunding": {
    summary: "How to fund the account (account_fund)",
    description:
      "Funds come from outside, so `account_fund` is not an operation the account signs: this answers the account's address, " +
      "the chain it is on, the token's contract there, what the account holds now and an ERC-681 payment request (`ethereum:` " +
      "URI) for a wallet or a QR code. An unknown token or an amount with too many decimals is a 400 naming the field.",
    caller: "The account's signer.",
    chain: "Reads the balance and whether the account is deployed; changes nothing."
  }
}
