import type { OperationDoc } from "./Reference.ts"

export const authDocs: Record<string, OperationDoc> = {
  "auth.nonce": {
    summary: "Get a sign-in nonce",
    description:
      "Issues a single-use nonce and the values the EIP-4361 (Sign-In with Ethereum) message must carry: `domain`, `uri`, " +
      "`chainId`. Build the message with them (viem's `createSiweMessage`), sign it with the wallet, and send it to `POST /auth/session` before `expiresAt`.",
    caller: "Anyone; no session.",
    chain: "Nothing."
  },
  "auth.signIn": {
    summary: "Sign in with Ethereum",
    description:
      "Exchanges a signed EIP-4361 message for a session: `token` is the bearer for every other call " +
      "(`Authorization: Bearer <token>`). The first sign-in of a key makes its smart account (counterfactual: an address, " +
      "deployed by its first operation) on every served chain; `accounts` lists them. A reused nonce, another domain or a bad signature is 401.",
    caller: "Anyone holding the key that signed the message.",
    chain: "Nothing yet: the account's address is computed; it is deployed by its first operation."
  },
  "session.current": {
    summary: "Who is signed in",
    description: "The session's signer and when the session expires.",
    caller: "Any session.",
    chain: "Nothing."
  },
  "session.signOut": {
    summary: "Sign out",
    description: "Revokes the current session at once; its token answers 401 from then on. Other sessions of the same key stay.",
    caller: "Any session (it ends itself).",
    chain: "Nothing."
  }
}
