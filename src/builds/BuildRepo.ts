/**
 * The stored builds (`op_builds`), SQL only: the lookups the relay and the features make
 * (`byHash`, `findById`, `hasBuildFor`), the account's frozen flag the builder checks, and
 * storing a build, or finding the open identical one to share (`storeOrShare`).
 */
import { Effect, Schema } from "effect"
import { SqlClient, SqlSchema, type Statement } from "effect/sql"
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
     * builds as `byHash` answers them (none: an empty list). `alongside`: a caller's scalar
     * subquery read by the same statement (the relay's earlier submissions of the hash),
     * answered as `alongside` (null without one).
     */
    byHashForSession: (tokenHash: Uint8Array, chainId: number, userOpHash: string, alongside?: Statement.Fragment) =>
      sql<{ readonly session_signer: string; readonly alongside: unknown; readonly id: string | null }>`
        SELECT s.signer_address AS session_signer, ${alongside ?? sql`NULL`} AS alongside, b.*
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
            alongside: first.alongside,
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
    storeOrShare: (build: NewBuild): Effect.Effect<OpenBuild | undefined> => {
      const op = build.userOp
      const row = {
        id: build.id,
        account_id: build.accountId,
        signer_address: build.signerAddress,
        intent_type: build.intentType,
        chain_id: build.chainId,
        entry_point: build.entryPoint,
        sender: op.sender,
        nonce: op.nonce,
        call_data: op.callData,
        user_op: op,
        user_op_hash: build.userOpHash,
        risk_reducing: build.riskReducing,
        sponsored: build.sponsored,
        human_summary: build.humanSummary,
        metadata: build.metadata,
        created_at: build.createdAt.toISOString(),
        expires_at: build.expiresAt.toISOString(),
        answer: build.answer,
        share_key: build.shareKey
      }
      // One round trip: the lock, the open build's lookup and the insert in one function
      // (migration 0420), in the caller's transaction when there is one.
      return sql<{ open_id: string; open_answer: unknown; open_metadata: Schema.JsonObject }>`
        SELECT * FROM op_build_store_or_share(${JSON.stringify(row)}::jsonb)`.pipe(
        Effect.map((rows) => rows[0] === undefined ? undefined : { id: rows[0].open_id, answer: rows[0].open_answer, metadata: rows[0].open_metadata }),
        Effect.orDie
      )
    }
  }
}
