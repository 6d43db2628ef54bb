/**
 * Signs in to a running service with a throwaway key (or PRIVATE_KEY) and prints
 * the session token and the signer's accounts.
 *
 *   npm run sign-in                       # http://127.0.0.1:8080
 *   BASE_URL=http://host:port npm run sign-in
 *   PRIVATE_KEY=0x… npm run sign-in       # a key of your own
 */
import { Effect } from "effect"
import type { Hex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { signIn } from "../src/client/signIn.ts"

const baseUrl = process.env.BASE_URL ?? "http://127.0.0.1:8080"
const privateKey = (process.env.PRIVATE_KEY as Hex | undefined) ?? generatePrivateKey()
const signer = privateKeyToAccount(privateKey)

const session = await Effect.runPromise(signIn(baseUrl, signer))
console.log(JSON.stringify({ privateKey, ...session }, null, 2))
console.error(`\nexport TOKEN=${session.token}\ncurl -s ${baseUrl}/accounts -H "Authorization: Bearer $TOKEN"`)
