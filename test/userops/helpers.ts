/**
 * Shared steps of the relay tests: sign in a fresh key, sign a build's typed data with
 * viem, poll fast, and read the audit log straight from the database.
 */
import { Effect, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { Hex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import type { ApiClient } from "../../src/client/Client.ts"
import { pollUserOp } from "../../src/client/poll.ts"
import { signIn } from "../../src/client/signIn.ts"
import type { Eip712TypedData, UserOpBuild, UserOperation } from "../../src/domain/Operations.ts"
import { client, TestServer } from "../support/TestServer.ts"

export const newUser = Effect.gen(function*() {
  const { baseUrl } = yield* TestServer
  const key = generatePrivateKey()
  const signer = privateKeyToAccount(key)
  const session = yield* signIn(baseUrl, signer)
  const api = yield* client(session.token)
  return { key, signer, token: session.token, api, account: session.accounts[0]! }
})

/** What a wallet does with a build: `eth_signTypedData_v4` of its `typedData`, into `userOp.signature`. */
export const signBuild = (build: UserOpBuild, key: Hex): Effect.Effect<UserOperation> =>
  Effect.promise(async () => {
    const typedData = build.typedData as Eip712TypedData
    const signature = await privateKeyToAccount(key).signTypedData(typedData as never)
    return { ...build.userOp, signature }
  })

/** The contract's polling, shortened for tests. */
export const settle = (api: ApiClient, userOpId: string) =>
  pollUserOp(api, userOpId, { interval: "150 millis", maxTries: 200 })

const Entry = Schema.Struct({
  id: Schema.String,
  status: Schema.String,
  provenance: Schema.String,
  tx_hash: Schema.NullOr(Schema.String),
  decline_reason: Schema.NullOr(Schema.String),
  action: Schema.String
})

/** The audit entries of one operation (there must be exactly one once it settled). */
export const auditEntriesOf = (operationId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql`SELECT id, status, provenance, tx_hash, decline_reason, action
                            FROM audit_entries WHERE operation_id = ${operationId}`
    return yield* Schema.decodeUnknownEffect(Schema.Array(Entry))(rows)
  }).pipe(Effect.orDie)
