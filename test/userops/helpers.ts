/**
 * Shared steps of the relay tests: sign in a fresh key, sign a build's typed data with
 * viem, poll fast, and read the audit log straight from the database.
 */
import { Context, Duration, Effect, Layer, Schedule, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { Hash, Hex } from "viem"
import { Bundler } from "../../src/chain/Bundler.ts"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { type ApiClient, makeClient } from "../../src/client/Client.ts"
import { pollUserOp } from "../../src/client/poll.ts"
import { signIn } from "../../src/client/signIn.ts"
import type { Eip712TypedData, UserOpBuild, UserOperation } from "../../src/domain/Operations.ts"
import { client, TestServer, TestServerLive } from "../support/TestServer.ts"

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

/**
 * A service of its own (`options`: its configuration, the chain it is given) with a fresh
 * signer signed in and the signer's freeze built and signed: the account's first operation,
 * which the relay's attack tests submit, lose, re-send and settle. Released with the scope.
 */
export const serviceWithFreeze = (options: Parameters<typeof TestServerLive>[0]) =>
  Effect.gen(function*() {
    const context = yield* Layer.build(TestServerLive(options))
    const baseUrl = Context.get(context, TestServer).baseUrl
    const sql = Context.get(context, SqlClient.SqlClient)
    const key = generatePrivateKey()
    const session = yield* signIn(baseUrl, privateKeyToAccount(key))
    const api = yield* makeClient({ baseUrl, token: session.token })
    const build = yield* api.accounts.buildRules({ payload: { intentType: "account_freeze" } })
    const signed = yield* signBuild(build, key)
    return { context, sql, accountId: session.accounts[0]!.id, api, build, signed }
  })

/** Waits (up to 20 s) until the service's bundler has the operation's receipt: on chain, whether or not the service settled it. */
export const bundled = (context: Context.Context<Bundler>, userOpHash: string) =>
  Context.get(context, Bundler).getUserOperationReceipt(userOpHash as Hash).pipe(
    Effect.orDie,
    Effect.flatMap((r) => (r === null ? Effect.fail("no receipt yet") : Effect.succeed(r))),
    Effect.retry(Schedule.spaced(Duration.millis(100))),
    Effect.timeout(Duration.seconds(20)),
    Effect.orDie
  )
