/**
 * Storing a submission (docs/relay.md, rules 6–7): the insert and the policy checks in ONE
 * transaction, so that what a check writes (a delegated action's reservation, bound to this
 * operation) commits with the stored operation or not at all; a decline is stored on its own
 * after the chain is asked whether it already holds the operation (then that is the answer).
 * When every check that applies only reads, they run first and the insert is one statement
 * committed on its own: one round trip instead of three (BEGIN, the insert, COMMIT).
 */
import { Data, Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { Hash } from "viem"
import { BadRequest, OutOfScope } from "../api/Errors.ts"
import type { StoredBuild } from "../builds/OperationBuilder.ts"
import type { UserOperationV07 } from "../chain/Bundler.ts"
import { Chains } from "../chain/Chains.ts"
import { findInclusion, type Inclusion, nextNonce } from "../chain/Inclusions.ts"
import { transactionRetryingConflicts } from "../db/Conflicts.ts"
import type { UserOperation } from "../domain/Operations.ts"
import { priorVerdict, signatureDigest } from "./Matching.ts"
import { type OperationRow, toReceipt } from "./OperationRow.ts"
import { RelayAudit } from "./RelayAudit.ts"
import { type RelayedOperation, RelayHooks } from "./RelayHooks.ts"
import type { Settlement } from "./Settlement.ts"

/** A policy check declined the submission: its transaction rolls back, and the decline is stored on its own. */
class DeclinedAtSubmit extends Data.TaggedError("DeclinedAtSubmit")<{ readonly decline: OutOfScope }> {}

/** A submission matched to its build, with the id it is stored under. */
export interface Submitted {
  readonly id: string
  readonly build: StoredBuild
  readonly hash: string
  readonly wire: UserOperation
  readonly signer: string
}

export const makeSubmission = (settlement: Settlement, options: { readonly leaseMs: number; readonly chainLookback: number }) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const transaction = transactionRetryingConflicts(sql)
    const chains = yield* Chains
    const hooks = yield* RelayHooks
    const audit = yield* RelayAudit
    const { byHash, load, relayedOf, auditFacts, settle } = settlement

    /**
     * Stores a submission as `submitted` (the send lease held when `lease`); undefined when one
     * with its hash and signature exists. The stored row is the one written (only its
     * `submitted_at` read back): the operation is not decoded again from what was just encoded.
     */
    const insertSubmitted = (a: Submitted & { readonly lease: boolean }) => {
      const nonce = BigInt(a.wire.nonce).toString()
      const sender = a.wire.sender.toLowerCase()
      const userOp = { ...a.wire, sender }
      return sql<{ readonly submitted_at: Date }>`
        INSERT INTO user_operations (id, build_id, account_id, signer_address, intent_type, chain_id, sender, nonce,
                                     user_op_hash, signature_digest, user_op, status, outcome, send_attempts, send_lease_until, submitted_at)
        VALUES (${a.id}, ${a.build.id}, ${a.build.accountId}, ${a.signer}, ${a.build.intentType}, ${a.wire.chainId}, ${sender},
                ${nonce}, ${a.hash}, ${signatureDigest(a.wire)},
                ${JSON.stringify(userOp)}::jsonb, 'submitted', 'pending', ${a.lease ? 1 : 0},
                ${a.lease ? sql`now() + ${`${options.leaseMs} milliseconds`}::interval` : sql`NULL`}, now())
        ON CONFLICT DO NOTHING
        RETURNING submitted_at`.pipe(Effect.map((rows): OperationRow | undefined =>
        rows[0] === undefined ? undefined : {
          id: a.id,
          build_id: a.build.id,
          account_id: a.build.accountId,
          signer_address: a.signer,
          intent_type: a.build.intentType,
          chain_id: a.wire.chainId,
          sender,
          nonce,
          user_op_hash: a.hash,
          user_op: userOp,
          status: "submitted",
          outcome: "pending",
          sent_at: null,
          send_attempts: a.lease ? 1 : 0,
          last_error: null,
          transaction_hash: null,
          block_number: null,
          reason: null,
          revert_data: null,
          bundler_error: null,
          decline_reason: null,
          audit_event_id: null,
          submitted_at: rows[0].submitted_at,
          settled_at: null
        }
      ))
    }

    /**
     * Persisted (holding the send lease) and checked in ONE transaction, the insert first. A
     * concurrent copy of the same signed operation waits on the insert and then stores nothing,
     * so it never runs a check nor touches a reservation (before, the copy whose insert lost
     * could bind the reservation to an operation that was never stored, and nothing released it).
     * Checks that only read (an account's frozen flag) need no such order: they run first, and the
     * insert commits alone; a copy that lost the insert has written nothing either way. A check
     * that also reads the chain (a delegated action's enforcers) reads it before the transaction
     * (`RelayHooks.preparePolicy`), so neither the inserted row nor the rows its decision locks
     * wait on the chain.
     */
    const store = Effect.fn("Relay.store")(function*(relayed: RelayedOperation, base: Submitted) {
      /** The checks' decline, or undefined when every check passed. */
      const declinedBy = hooks.checkPolicy(relayed).pipe(
        Effect.as(undefined),
        Effect.catchTag("OutOfScope", (e) => Effect.succeed(e))
      )
      if (hooks.checksReadOnly(relayed.intentType)) {
        const declined = yield* declinedBy
        if (declined !== undefined) return { _tag: "Declined" as const, decline: declined }
        const inserted = yield* insertSubmitted({ ...base, lease: true }).pipe(Effect.orDie)
        return inserted === undefined ? { _tag: "Raced" as const } : { _tag: "Stored" as const, row: inserted }
      }
      // What the checks read (the chain) is read now, before the transaction: none of its locks
      // is held across a chain call. Their decisions run in it, after the insert.
      const decide = yield* hooks.preparePolicy(relayed)
      return yield* transaction(Effect.gen(function*() {
        const inserted = yield* insertSubmitted({ ...base, lease: true })
        if (inserted === undefined) return { _tag: "Raced" as const }
        const declined = yield* decide.pipe(Effect.as(undefined), Effect.catchTag("OutOfScope", (e) => Effect.succeed(e)))
        // Rolled back whole: the decline is stored on its own (declineAtSubmit), after the chain is asked.
        if (declined !== undefined) return yield* Effect.fail(new DeclinedAtSubmit({ decline: declined }))
        return { _tag: "Stored" as const, row: inserted }
      })).pipe(
        Effect.catchTag("DeclinedAtSubmit", (d) => Effect.succeed({ _tag: "Declined" as const, decline: d.decline })),
        Effect.orDie
      )
    })

    /** A copy of this submission was stored by a concurrent request: its receipt, or 400 when it is another signature's. */
    const racedAnswer = (hash: string, signer: string, wire: UserOperation) =>
      Effect.gen(function*() {
        const raced = priorVerdict(yield* byHash(wire.chainId, hash).pipe(Effect.orDie), signer, wire.signature)
        if (raced?._tag === "Same") return toReceipt(raced.row)
        return yield* new BadRequest({ message: "This operation was already submitted" })
      })

    /** The operation's inclusion when the chain already holds it (its nonce used, its event found); else undefined. */
    const alreadyOnChain = (chainId: number, op: UserOperationV07, hash: string) =>
      Effect.tryPromise(async () => {
        const net = chains.find(chainId)
        if (net === undefined) return undefined
        const { chain, network } = net
        const next = await nextNonce(chain.client, network.entryPoint, op.sender, op.nonce)
        if (next <= op.nonce) return undefined
        return findInclusion(chain.client, network.entryPoint, hash as Hash, BigInt(options.chainLookback))
      }).pipe(Effect.orElseSucceed(() => undefined), Effect.withSpan("Relay.alreadyOnChain"))

    /**
     * A submission the chain already executed (sent through another bundler too): stored and
     * settled from the chain's record at once: `included` with its transaction, its one audit
     * entry, its effects (a delegated action's spend counted). Answered 202 with that receipt.
     */
    const recordFromChain = Effect.fn("Relay.recordFromChain")(function*(base: Submitted, inclusion: Inclusion) {
      const inserted = yield* insertSubmitted({ ...base, lease: false }).pipe(Effect.orDie)
      if (inserted === undefined) return yield* racedAnswer(base.hash, base.signer, base.wire)
      yield* settle(inserted, { _tag: "Receipt", receipt: inclusion.receipt })
      return toReceipt(yield* load(base.id))
    })

    const declineAtSubmit = Effect.fn("Relay.declineAtSubmit")(function*(
      base: Submitted,
      decline: OutOfScope
    ) {
      const { id, build, hash, wire, signer } = base
      // Persisted first, then its audit entry, in one transaction (run again if it lost a lock conflict).
      const stored = yield* transaction(Effect.gen(function*() {
        const inserted = yield* sql`
          INSERT INTO user_operations (id, build_id, account_id, signer_address, intent_type, chain_id, sender, nonce,
                                       user_op_hash, signature_digest, user_op, status, outcome, reason, decline_reason, submitted_at, settled_at)
          VALUES (${id}, ${build.id}, ${build.accountId}, ${signer}, ${build.intentType}, ${wire.chainId}, ${wire.sender.toLowerCase()},
                  ${BigInt(wire.nonce).toString()}, ${hash}, ${signatureDigest(wire)}, ${JSON.stringify(wire)}::jsonb, 'failed', 'rejected',
                  ${`declined: ${decline.declineReason}`}, ${decline.declineReason}, now(), now())
          ON CONFLICT DO NOTHING
          RETURNING id`
        // The same operation submitted concurrently: the other request stored it (and its one audit entry).
        if (inserted.length === 0) return false
        const row = yield* load(id)
        // A declined operation is failed too: whatever an earlier check or the build held is freed with it.
        yield* hooks.runOnFailed(relayedOf(row, build), `declined: ${decline.declineReason}`)
        const auditId = yield* audit.recordOperation(
          auditFacts(row, build, "declined", { declineReason: decline.declineReason, reason: decline.message })
        )
        yield* sql`UPDATE user_operations SET audit_event_id = ${auditId} WHERE id = ${id}`
        return true
      })).pipe(Effect.orDie)
      if (!stored) return yield* racedAnswer(hash, signer, wire)
      return yield* new OutOfScope({
        message: decline.message,
        declineReason: decline.declineReason,
        details: { userOpId: id }
      })
    })

    return { store, racedAnswer, alreadyOnChain, recordFromChain, declineAtSubmit }
  })
