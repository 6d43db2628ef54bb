/**
 * Sign-in nonces and session bearers. A session token is 256 random bits, shown
 * once; only its SHA-256 is stored. Sessions expire and can be revoked.
 */
import { Context, DateTime, Duration, Effect, Layer, Option, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { createHash, randomBytes } from "node:crypto"
import { BadRequest, Unauthorized } from "../api/Errors.ts"
import { Accounts, normalizeAddress } from "../accounts/Accounts.ts"
import type { Account } from "../accounts/Domain.ts"
import type { Address } from "../domain/Primitives.ts"
import { AppConfig } from "../platform/AppConfig.ts"
import { hotSpan } from "../platform/HotSpan.ts"
import type { Signer } from "./Middleware.ts"
import { SignatureVerifier } from "./SignatureVerifier.ts"
import { checkSiweMessage } from "./Siwe.ts"

export const hashToken = (token: string): Buffer => createHash("sha256").update(token).digest()

/** What a session token issued by `signIn` looks like: 32 random bytes, base64url. */
export const SESSION_TOKEN = /^[A-Za-z0-9_-]{43}$/

export interface IssuedNonce {
  readonly nonce: string
  readonly domain: string
  readonly uri: string
  readonly chainId: number
  readonly issuedAt: Date
  readonly expiresAt: Date
}

export interface NewSession {
  readonly token: string
  readonly signerAddress: Address
  readonly expiresAt: Date
  readonly accounts: ReadonlyArray<Account>
}

const SessionRow = Schema.Struct({ id: Schema.String, signer_address: Schema.String, expires_at: Schema.Date })

const CLOCK_SKEW_MS = 60_000

export class Sessions extends Context.Service<Sessions, {
  readonly issueNonce: Effect.Effect<IssuedNonce>
  readonly signIn: (message: string, signature: string) => Effect.Effect<NewSession, BadRequest | Unauthorized>
  readonly authenticate: (token: string) => Effect.Effect<Signer, Unauthorized>
  readonly revoke: (sessionId: string) => Effect.Effect<void>
}>()("das/auth/Sessions") {
  static readonly layer = Layer.effect(
    Sessions,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const config = yield* AppConfig
      const verifier = yield* SignatureVerifier
      const accounts = yield* Accounts
      const siweChainId = Option.getOrElse(config.siweChainId, () => verifier.chainId)

      const findSession = SqlSchema.findOneOption({
        Request: Schema.Uint8Array,
        Result: SessionRow,
        execute: (hash) =>
          sql`SELECT id, signer_address, expires_at FROM sessions
              WHERE token_hash = ${hash} AND revoked_at IS NULL AND expires_at > now()`
      })

      const issueNonce = Effect.gen(function*() {
        // EIP-4361 nonces are alphanumeric; 128 bits of entropy in hex.
        const nonce = randomBytes(16).toString("hex")
        const now = new Date(DateTime.toEpochMillis(yield* DateTime.now))
        const expiresAt = new Date(now.getTime() + Duration.toMillis(config.nonceTtl))
        yield* sql`INSERT INTO signin_nonces (nonce, issued_at, expires_at) VALUES (${nonce}, ${now}, ${expiresAt})`.pipe(
          Effect.orDie
        )
        // Nonces are public to request: expired ones are deleted as new ones are issued, so the
        // table holds at most a nonce lifetime's worth (a used nonce is kept until it expires,
        // which is what makes a replay inside its lifetime fail).
        yield* sql`DELETE FROM signin_nonces WHERE expires_at < now() - interval '1 minute'`.pipe(Effect.orDie)
        return {
          nonce,
          domain: config.siweDomain,
          uri: config.siweUri,
          chainId: siweChainId,
          issuedAt: now,
          expiresAt
        }
      }).pipe(Effect.withSpan("Sessions.issueNonce"))

      const signIn = Effect.fn("Sessions.signIn")(function*(message: string, signature: string) {
        const now = new Date(DateTime.toEpochMillis(yield* DateTime.now))
        const checked = checkSiweMessage(message, {
          domain: config.siweDomain,
          uri: config.siweUri,
          chainId: siweChainId,
          now,
          maxAgeMs: Duration.toMillis(config.nonceTtl),
          skewMs: CLOCK_SKEW_MS
        })
        if (!checked.ok) return yield* new BadRequest({ message: `Sign-in refused: ${checked.reason}` })
        const { address, nonce } = checked.value
        const valid = yield* verifier.verifySiwe({ message, signature, domain: config.siweDomain, time: checked.value.verifyAt })
        if (!valid) return yield* new Unauthorized({ message: "Sign-in refused: the signature does not match the address" })
        const signer = normalizeAddress(address)
        yield* accounts.ensurePrimary(signer)
        const list = yield* accounts.list(signer)
        // Every account this key had was handed to a new owner key on chain (a replaced key, a recovery).
        if (list.length === 0) {
          return yield* new Unauthorized({ message: "Sign-in refused: this key no longer signs for any account here (it was replaced on chain)" })
        }
        const token = randomBytes(32).toString("base64url")
        const ttl = Duration.toMillis(config.sessionTtl)
        const messageExpiry = checked.value.expiresAt?.getTime()
        const expiresAt = new Date(Math.min(now.getTime() + ttl, messageExpiry ?? Number.POSITIVE_INFINITY))
        // Single use: the nonce is consumed atomically, so a replayed message finds nothing to
        // consume; consuming it and creating the session commit together or not at all.
        yield* sql.withTransaction(Effect.gen(function*() {
          const consumed = yield* sql`
            UPDATE signin_nonces SET used_at = now()
            WHERE nonce = ${nonce} AND used_at IS NULL AND expires_at > now()
            RETURNING nonce`
          if (consumed.length === 0) {
            return yield* new Unauthorized({ message: "Sign-in refused: unknown, expired or already used nonce" })
          }
          yield* sql`
            INSERT INTO sessions (id, token_hash, signer_address, created_at, expires_at)
            VALUES (${crypto.randomUUID()}, ${hashToken(token)}, ${signer}, ${now}, ${expiresAt})`
        })).pipe(Effect.catchTag("SqlError", Effect.die))
        return { token, signerAddress: signer, expiresAt, accounts: list }
      })

      // Every authenticated request runs this: a span, without `Effect.fn`'s per-call stack capture
      // (docs/performance.md, "GET /accounts", step 3).
      const authenticateSpan = hotSpan("Sessions.authenticate")
      const authenticate = Effect.fnUntraced(function*(token: string) {
        const row = yield* findSession(hashToken(token)).pipe(Effect.orDie)
        if (Option.isNone(row)) {
          return yield* new Unauthorized({ message: "Missing, unknown, expired or revoked session token" })
        }
        return { address: row.value.signer_address, sessionId: row.value.id, sessionExpiresAt: row.value.expires_at }
      }, authenticateSpan)

      const revoke = Effect.fn("Sessions.revoke")(function*(sessionId: string) {
        yield* sql`UPDATE sessions SET revoked_at = now() WHERE id = ${sessionId} AND revoked_at IS NULL`.pipe(Effect.orDie)
      })

      return Sessions.of({ issueNonce, signIn, authenticate, revoke })
    })
  )
}
