/**
 * Client-side Sign-In with Ethereum: ask for a nonce, sign the EIP-4361 message
 * with the signer's key, exchange it for a session token.
 */
import { signInMessage } from "@das/agent-client"
import { Effect } from "effect"
import type { LocalAccount } from "viem"
import { makeClient } from "./Client.ts"

// The message is the agent client's (packages/agent-client): one statement, one form.
export { signInMessage }

export const signIn = (baseUrl: string, signer: LocalAccount) =>
  Effect.gen(function*() {
    const client = yield* makeClient({ baseUrl })
    const nonce = yield* client.auth.nonce()
    const message = signInMessage(signer, nonce)
    const signature = yield* Effect.promise(() => signer.signMessage({ message }))
    return yield* client.auth.signIn({ payload: { message, signature } })
  })
