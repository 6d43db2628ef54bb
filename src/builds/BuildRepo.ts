/**
 * The stored builds (`op_builds`), SQL only: the lookups the relay and the features make
 * (`byHash`, `findById`, `hasBuildFor`), the account's frozen flag the builder checks, and
 * storing a build, or finding the open identical one to share (`storeOrShare`).
 */
import { Effect, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { readFrozen } from "../accounts/Accounts.ts"
import { isPermitPrefix } from "../chain/TokenPaymaster.ts"
import { type IntentType, UserOperation } from "../domain/Operations.ts"
import type { MatchableBuild } from "./GasPayment.ts"

/** A stored build, as the relay and the features read it back. */
export interface StoredBuild extends MatchableBuild {
  readonly id: string
  readonly accountId: string
  readonly signerAddress: string
  readonly intentType: IntentType
  readonly chainId: number
  readonly entryPoint: string
  readonly sender: string
  readonly nonce: string
  readonly callData: string
  readonly userOp: UserOperation
  readonly userOpHash: string
  readonly riskReducing: boolean
  readonly sponsored: boolean
  readonly humanSummary: string | null
  readonly metadata: Schema.JsonObject
  readonly createdAt: Date
  readonly expiresAt: Date
  /**
   * The account's frozen flag, read in the same statement as the build (`byHash` only: the
   * relay's policy re-check needs no round trip of its own); undefined when not read.
   */
  readonly accountFrozen?: boolean
}

const BuildRow = Schema.Struct({
  id: Schema.String,
  account_id: Schema.String,
  signer_address: Schema.String,
  intent_type: Schema.String,
  chain_id: Schema.Number,
  entry_point: Schema.String,
  sender: Schema.String,
  nonce: Schema.String,
  call_data: Schema.String,
  user_op: UserOperation,
  user_op_hash: Schema.String,
  risk_reducing: Schema.Boolean,
  sponsored: Schema.Boolean,
  human_summary: Schema.NullOr(Schema.String),
  metadata: Schema.JsonObject,
  created_at: Schema.Date,
  expires_at: Schema.Date
})

/** A build with its account's frozen flag (the relay's lookup by hash). */
const BuildWithAccountRow = Schema.Struct({ ...BuildRow.fields, account_frozen: Schema.Boolean })

const toStored = (tokenPaymasterOf: (chainId: number) => string | undefined) => (r: typeof BuildRow.Type): StoredBuild => {
  const tokenPaymaster = tokenPaymasterOf(r.chain_id)
  return {
  id: r.id,
  accountId: r.account_id,
  signerAddress: r.signer_address,
  intentType: r.intent_type as IntentType,
  chainId: r.chain_id,
  entryPoint: r.entry_point,
  sender: r.sender,
  nonce: r.nonce,
  callData: r.call_data,
  userOp: r.user_op,
  userOpHash: r.user_op_hash,
  riskReducing: r.risk_reducing,
  sponsored: r.sponsored,
  humanSummary: r.human_summary,
  metadata: r.metadata,
  createdAt: r.created_at,
  expiresAt: r.expires_at,
  // A permit build's paymasterData is the token paymaster's permit prefix (the signature comes later).
  permitSignaturePrefix: tokenPaymaster !== undefined && r.user_op.paymaster?.toLowerCase() === tokenPaymaster &&
      r.user_op.paymasterData !== undefined && isPermitPrefix(r.user_op.paymasterData.toLowerCase())
    ? r.user_op.paymasterData.toLowerCase()
    : undefined
  }
}

/** What a new build stores (its answer is what identical requests get while it is open). */
export interface NewBuild extends
  Pick<
    StoredBuild,
    | "id" | "accountId" | "signerAddress" | "intentType" | "chainId" | "entryPoint" | "userOp" | "userOpHash"
    | "riskReducing" | "sponsored" | "humanSummary" | "metadata" | "createdAt" | "expiresAt"
  >
{
  readonly answer: unknown
  /** Builds share only with builds of the same key (the request's metadata unless given). */
  readonly shareKey: string
}

/** The open identical build found instead of storing a new one. */
export interface OpenBuild {
  readonly id: string
  readonly answer: unknown
  readonly metadata: Schema.JsonObject
}

/**
 * `body` inside the caller's transaction when there is one (no savepoint: its failure fails the
 * caller's whole transaction), else in a transaction of its own.
 */
export const joinOrBegin = <A, E, R>(sql: SqlClient.SqlClient, body: Effect.Effect<A, E, R>) =>
  Effect.flatMap(Effect.serviceOption(sql.transactionService), (outer) =>
    outer._tag === "Some" ? body : sql.withTransaction(body))

/** The repository over `sql`; each chain's token paymaster (lower case) tells permit builds apart. */
export const makeBuildRepo = (sql: SqlClient.SqlClient, tokenPaymasterOf: (chainId: number) => string | undefined) => {
  const stored = toStored(tokenPaymasterOf)

  const findByHash = SqlSchema.findAll({
    Request: Schema.Struct({ signer: Schema.String, chainId: Schema.Number, hash: Schema.String }),
    Result: BuildWithAccountRow,
    execute: (r) =>
      sql`SELECT b.*, a.frozen AS account_frozen FROM op_builds b JOIN accounts a ON a.id = b.account_id
          WHERE b.chain_id = ${r.chainId} AND b.user_op_hash = ${r.hash} AND a.signer_address = ${r.signer}
          ORDER BY (b.expires_at > now()) DESC, b.created_at DESC, b.id DESC`
  })
  const findOne = SqlSchema.findAll({
    Request: Schema.String,
    Result: BuildRow,
    execute: (id) => sql`SELECT * FROM op_builds WHERE id = ${id}`
  })

  const decodeBuilds = Schema.decodeUnknownEffect(Schema.Array(BuildWithAccountRow))

  return {
    /**
     * `byHash` for the signer of a live session (the token's hash), in ONE statement: the
     * session check and the build lookup together (`POST /userops`: one round trip fewer).
     * Undefined when the session is unknown, revoked or expired; otherwise its signer and
     * builds as `byHash` answers them (none: an empty list).
     */
    byHashForSession: (tokenHash: Uint8Array, chainId: number, userOpHash: string) =>
      sql<{ readonly session_signer: string; readonly id: string | null }>`
        SELECT s.signer_address AS session_signer, b.*
        FROM sessions s
        LEFT JOIN LATERAL (
          SELECT b.*, a.frozen AS account_frozen FROM op_builds b JOIN accounts a ON a.id = b.account_id
          WHERE b.chain_id = ${chainId} AND b.user_op_hash = ${userOpHash} AND a.signer_address = s.signer_address
        ) b ON true
        WHERE s.token_hash = ${tokenHash} AND s.revoked_at IS NULL AND s.expires_at > now()
        ORDER BY (b.expires_at > now()) DESC, b.created_at DESC, b.id DESC`.pipe(
        Effect.flatMap((rows) => {
          const first = rows[0]
          if (first === undefined) return Effect.succeed(undefined)
          return Effect.map(decodeBuilds(rows.filter((r) => r.id !== null)), (builds) => ({
            signer: first.session_signer,
            builds: builds.map((r): StoredBuild => ({ ...stored(r), accountFrozen: r.account_frozen }))
          }))
        }),
        Effect.orDie
      ),

    /** The signer's builds with this hash, unexpired first, then newest first, each with its account's frozen flag. */
    byHash: (signer: string, chainId: number, userOpHash: string) =>
      findByHash({ signer, chainId, hash: userOpHash }).pipe(
        Effect.map((rows) => rows.map((r): StoredBuild => ({ ...stored(r), accountFrozen: r.account_frozen }))),
        Effect.orDie
      ),

    findById: (buildId: string) =>
      findOne(buildId).pipe(Effect.map((rows) => rows[0] === undefined ? undefined : stored(rows[0])), Effect.orDie),

    hasBuildFor: (signer: string, chainId: number, sender: string, nonce: string) =>
      sql<{ found: boolean }>`
        SELECT EXISTS (SELECT 1 FROM op_builds b JOIN accounts a ON a.id = b.account_id
                       WHERE a.signer_address = ${signer} AND b.chain_id = ${chainId}
                         AND b.sender = ${sender} AND b.nonce = ${nonce}) AS found`.pipe(
        Effect.map((rows) => rows[0]?.found === true),
        Effect.orDie
      ),

    isFrozen: (accountId: string) => readFrozen(sql, accountId),

    /**
     * Identical builds (the hash covers every signed field) are one build while it is open:
     * serialized per hash, so concurrent identical requests cannot store two. Answers the
     * open one to share, or undefined when `build` was stored.
     */
    storeOrShare: (build: NewBuild): Effect.Effect<OpenBuild | undefined> =>
      joinOrBegin(sql, Effect.gen(function*() {
        yield* sql`SELECT pg_advisory_xact_lock(hashtextextended(${`op_build:${build.userOpHash}`}, 0))`
        const open = yield* sql<{ id: string; answer: unknown; metadata: Schema.JsonObject }>`
          SELECT id, answer, metadata FROM op_builds
          WHERE chain_id = ${build.chainId} AND user_op_hash = ${build.userOpHash} AND account_id = ${build.accountId}
            AND intent_type = ${build.intentType} AND share_key = ${build.shareKey} AND answer IS NOT NULL
            AND expires_at > now()
            AND NOT EXISTS (SELECT 1 FROM user_operations u WHERE u.chain_id = ${build.chainId}
                              AND u.user_op_hash = ${build.userOpHash} AND u.status = 'failed')
          ORDER BY created_at DESC LIMIT 1`
        if (open[0] !== undefined) return open[0]
        const op = build.userOp
        yield* sql`
          INSERT INTO op_builds (id, account_id, signer_address, intent_type, chain_id, entry_point, sender, nonce, call_data,
                                 user_op, user_op_hash, risk_reducing, sponsored, human_summary, metadata, created_at, expires_at,
                                 answer, share_key)
          VALUES (${build.id}, ${build.accountId}, ${build.signerAddress}, ${build.intentType}, ${build.chainId},
                  ${build.entryPoint}, ${op.sender}, ${op.nonce}, ${op.callData},
                  ${JSON.stringify(op)}::jsonb, ${build.userOpHash}, ${build.riskReducing}, ${build.sponsored},
                  ${build.humanSummary}, ${JSON.stringify(build.metadata)}::jsonb, ${build.createdAt}, ${build.expiresAt},
                  ${JSON.stringify(build.answer)}::jsonb, ${build.shareKey})`
        return undefined
      })).pipe(Effect.orDie)
  }
}
