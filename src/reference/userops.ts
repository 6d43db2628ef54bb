import type { OperationDoc } from "./Reference.ts"

export const useropsDocs: Record<string, OperationDoc> = {
  "userops.submit": {
    summary: "Relay a signed operation",
    description:
      "Sends a user operation the service built (any `*/build` answer), signed over its `typedData`, to the bundler. The " +
      "service checks it is exactly what it built for this signer, runs the policy again for a delegated action, and answers 202 " +
      "with `userOpId` and `status: submitted`. Poll `GET /userops/{userOpId}` until `executed` or `failed`.",
    caller: "The signer whose account sends the operation (the owner, or the delegate for an action).",
    chain: "Submits the operation to the ERC-4337 EntryPoint through the bundler; the chain then executes or refuses it."
  },
  "userops.get": {
    summary: "Follow a relayed operation",
    description:
      "Its status (`submitted`, `executed`, `failed`), the transaction hash and block once included, the revert reason if it " +
      "reverted, and the audit entry that records it.",
    caller: "The signer who relayed it.",
    chain: "Reads the bundler's receipt; changes nothing."
  }
}
