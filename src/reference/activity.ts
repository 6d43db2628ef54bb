import type { OperationDoc } from "./Reference.ts"

export const activityDocs: Record<string, OperationDoc> = {
  "activity.list": {
    summary: "The account's activity",
    description:
      "The owner's audit log, newest first: every build, relay, execution and decline, each entry hash-chained to the one before. " +
      "Filter by `delegationId`, `status`, time, account or chain; page with `cursor`.",
    caller: "The owner (the delegate sees its own lane).",
    chain: "Nothing; entries record what the chain showed."
  },
  "activity.anchor": {
    summary: "The latest anchor",
    description:
      "The newest Merkle root of the log published on chain: its root, how many entries it covers, the transaction and block. " +
      "A proof (`/activity/{eventId}/proof`) is checked against it. `accounts` gives each of the signer's accounts the " +
      "length its latest anchor covers: an entry whose `index` is at most that has a proof (before it, the proof is a 409).",
    caller: "Any session.",
    chain: "Nothing; reports an anchor transaction already on chain."
  },
  "activity.proof": {
    summary: "Prove an entry",
    description:
      "The entry's Merkle inclusion proof against the anchor that covers it: recompute the leaf from the entry, fold the " +
      "siblings, compare with the root stored on chain in the anchor transaction. 409 when no anchor covers the entry yet.",
    caller: "The owner of the entry.",
    chain: "Nothing; points at the anchor transaction."
  },
  "activity.get": {
    summary: "Read one entry",
    description: "One audit entry: action, status, amounts, the operation and transaction it records, its hash and the previous hash.",
    caller: "The owner of the entry.",
    chain: "Nothing."
  }
}
