/**
 * The user-operation relay (docs/relay.md):
 *
 * submit: refuse an unsigned operation (400) → recompute the hash → answer an earlier
 * submission of this very signed operation (signature included) → find the signer's build
 * by that hash, i.e. every signed field equal (Matching.ts; 404 when nothing was built for
 * its sender and nonce, 400 when it is not what was built) → re-check policy (422 + one audit entry on a decline)
 * → persist it as `submitted` → forward it to the bundler. A bundler rejection settles it
 * at once (`failed` / `rejected`, one audit entry); a bundler that cannot be reached
 * leaves it `submitted` and unsent, answers 502/504, and the reconciler sends it later.
 *
 * A refusal that may be stale (AA10, AA25, a refused re-send) is checked on chain first
 * (Refusals.ts). Settlement: Settlement.ts; what the chain follower reports: ChainRecord.ts;
 * the stored row: OperationRow.ts.
 */
import { Config, Context, Duration, Effect, Layer, Result, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import type { Hash } from "viem"
import { readFrozen } from "../accounts/Accounts.ts"
import { BadRequest, NotFound, OutOfScope, UpstreamTimeout, UpstreamUnavailable } from "../api/Errors.ts"
import { ACCOUNT_FROZEN, allowedWhileFrozen } from "../builds/Intents.ts"
import { OperationBuilder, type StoredBuild } from "../builds/OperationBuilder.ts"
import { fromWire, userOpHashOf } from "../builds/Wire.ts"
import { Bundler, BundlerRejected } from "../chain/Bundler.ts"
import { Chain } from "../chain/Chain.ts"
import type { Inclusion } from "../chain/Inclusions.ts"
import { Network } from "../chain/Network.ts"
import { transactionRetryingConflicts } from "../db/Conflicts.ts"
import type { UserOperation, UserOpReceipt } from "../domain/Operations.ts"
import { makeChainRecord } from "./ChainRecord.ts"
import { buildOfSubmission, priorVerdict, signatureDigest } from "./Matching.ts"
import { ALREADY_KNOWN, OperationRow, rejectionReason, toReceipt } from "./OperationRow.ts"
import { chainVerdict, STALE_PRONE } from "./Refusals.ts"
import type { RelayedOperation } from "./RelayHooks.ts"
import { RelayHooks } from "./RelayHooks.ts"
import { RelayAudit } from "./RelayAudit.ts"
import { makeSendMarks } from "./SendMarks.ts"
import { makeSettlement } from "./Settlement.ts"
import { runLoop } from "../platform/Loop.ts"

export { type OperationRow, toReceipt } from "./OperationRow.ts"

export const RelayConfig = Config.all({
  /** How long a process may take to forward an operation before another may (re-)send it. */
  sendLease: Config.Duration("RELAY_SEND_LEASE").pipe(Config.withDefault(Duration.seconds(30))),
  /** A sent operation with no receipt after this long is sent again (the bundler may have dropped it). */
  resendAfter: Config.Duration("RELAY_RESEND_AFTER").pipe(Config.withDefault(Duration.minutes(2))),
  /** How far back (blocks) a refused operation is looked for on chain before the refusal counts. */
  chainLookback: Config.Int("RELAY_CHAIN_LOOKBACK").pipe(Config.withDefault(10_000))
})


export class Relay extends Context.Service<Relay, {
  submit(signer: string, op: UserOperation): Effect.Effect<
    UserOpReceipt,
    BadRequest | NotFound | OutOfScope | UpstreamUnavailable | UpstreamTimeout
  >
  /** The signer's operation, re-polled at the bundler when not yet settled. */
  get(signer: string, userOpId: string): Effect.Effect<UserOpReceipt, NotFound>
  /** One pass over operations nobody has settled (the reconciler's work); answers how many settled. */
  readonly reconcilePending: Effect.Effect<number>
  /**
   * What the chain shows about an operation (the chain follower's call, inside its transaction):
   * settles ours from it, corrects one recorded as refused, or adopts one built here and sent
   * around the relay. `unknown`: nothing of ours has this hash.
   */
  observe(inclusion: Inclusion): Effect.Effect<"settled" | "recorded" | "corrected" | "adopted" | "unknown">
  /** The operation's inclusion left the chain (a reorg): it is `submitted` again, watched and re-sent. */
  reopen(userOpHash: string, transactionHash: string): Effect.Effect<ReadonlyArray<string>>
}>()("das/userops/Relay") {
  static readonly layer = Layer.effect(Relay, Effect.suspend(() => make))
}

const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const transaction = transactionRetryingConflicts(sql)
  const bundler = yield* Bundler
  const network = yield* Network
  const chain = yield* Chain
  const builder = yield* OperationBuilder
  const hooks = yield* RelayHooks
  const audit = yield* RelayAudit
  const config = yield* RelayConfig
  const background = yield* Effect.scope
  const leaseMs = Duration.toMillis(config.sendLease)
  const resendAfterMs = Duration.toMillis(config.resendAfter)
  const chainId = network.chainId
  const entryPoint = network.entryPoint.toLowerCase()

  // A frozen account relays only risk-reducing operations (and its unfreeze). The flag comes
  // with the build (read by the same statement as the lookup: no round trip of its own);
  // a build without it (not from `byHash`) reads it here.
  yield* hooks.registerPolicyCheck("*", "account_frozen", (op) =>
    allowedWhileFrozen(op.intentType, op.build.riskReducing)
      ? Effect.void
      : (op.build.accountFrozen !== undefined
        ? Effect.succeed(op.build.accountFrozen)
        : readFrozen(sql, op.accountId)).pipe(Effect.flatMap((frozen) =>
          frozen ? Effect.fail(new OutOfScope({ message: "The account is frozen", declineReason: ACCOUNT_FROZEN })) : Effect.void
        )))

  const settlement = yield* makeSettlement
  const { byId, byHash, load, relayedOf, auditFacts, settle } = settlement
  const { observe, reopen } = yield* makeChainRecord(settlement)

  const { claimSend, markSent, markRefusedPending, markUnsent } = makeSendMarks(sql, leaseMs, resendAfterMs)

  /**
   * Sends a claimed operation. A refusal settles it (after checking it was not in fact
   * already included: a re-send of an included operation is refused for its nonce); an
   * unreachable bundler leaves it unsent, with the error, for the next pass.
   */
  const forward = Effect.fn("Relay.forward")(function*(row: OperationRow, isResend: boolean, markSentLater = false) {
    const sent = yield* bundler.sendUserOperation(fromWire(row.user_op)).pipe(
      Effect.map(() => ({ _tag: "Sent" as const })),
      Effect.catchTag("BundlerRejected", (error) => Effect.succeed({ _tag: "Rejected" as const, error })),
      Effect.catchTags({
        BundlerUnavailable: (e) => Effect.succeed({ _tag: "Down" as const, error: e }),
        BundlerTimeout: (e) => Effect.succeed({ _tag: "Down" as const, error: e })
      })
    )
    switch (sent._tag) {
      case "Sent":
        // The first send answers without waiting for this write (one round trip off the
        // request): until it lands the row is unsent but holds the send lease, so nobody
        // re-sends it; were it lost, the lease runs out and a re-send is taken as "already known".
        if (markSentLater) {
          yield* Effect.forkIn(
            markSent(row.id).pipe(
              Effect.catchCause((cause) => Effect.logWarning(`relay: marking ${row.id} sent failed; the lease covers it`, cause))
            ),
            background
          )
        }
        else yield* markSent(row.id)
        return { _tag: "Sent" as const }
      case "Down":
        yield* markUnsent(row.id, `${sent.error._tag}: ${sent.error.message}`.slice(0, 1000))
        return sent
      case "Rejected": {
        if (isResend && ALREADY_KNOWN.test(sent.error.message)) {
          yield* markSent(row.id)
          return { _tag: "Sent" as const }
        }
        if (isResend || STALE_PRONE.test(sent.error.message)) {
          // The refusal may be stale (Refusals.ts): the chain decides.
          const verdict = yield* chainVerdict(
            chain.client,
            network.entryPoint,
            fromWire(row.user_op),
            row.user_op_hash as Hash,
            BigInt(config.chainLookback)
          )
          switch (verdict._tag) {
            case "Included":
              yield* settle(row, { _tag: "Receipt", receipt: verdict.inclusion.receipt })
              return { _tag: "Settled" as const }
            case "Open":
            case "Unknown": {
              // It may still be included: stays submitted, counted as sent, looked at again after RELAY_RESEND_AFTER.
              const why = verdict._tag === "Open" ? "not on chain, nonce still open" : `chain unreadable: ${verdict.error}`
              yield* markRefusedPending(row.id, `${rejectionReason(sent.error)}; ${why}`.slice(0, 1000))
              return { _tag: "Sent" as const }
            }
            case "Final":
              yield* settle(row, {
                _tag: "Rejected",
                error: new BundlerRejected({
                  method: sent.error.method,
                  code: sent.error.code,
                  reason: sent.error.reason,
                  message: `${sent.error.message} (${verdict.why})`
                })
              })
              return { _tag: "Settled" as const }
          }
        }
        yield* settle(row, { _tag: "Rejected", error: sent.error })
        return { _tag: "Settled" as const }
      }
    }
  })

  /** Brings one unsettled operation forward: settle it if the bundler has a receipt, else (re-)send it when due. */
  const reconcile = Effect.fn("Relay.reconcile")(function*(row: OperationRow) {
    if (row.status !== "submitted") return row
    const receipt = yield* bundler.getUserOperationReceipt(row.user_op_hash as Hash).pipe(
      Effect.tapError((e) => Effect.logDebug(`relay: receipt of ${row.id} not available: ${e.message}`)),
      Effect.orElseSucceed(() => undefined)
    )
    if (receipt === undefined) return row // bundler unreachable: leave it for later
    if (receipt !== null) {
      yield* settle(row, { _tag: "Receipt", receipt })
      return yield* load(row.id)
    }
    const unsent = row.sent_at === null
    const dueForResend = !unsent && Date.now() - row.sent_at!.getTime() > resendAfterMs
    if ((unsent || dueForResend) && (yield* claimSend(row.id, !unsent))) {
      yield* Effect.logInfo(`relay: ${unsent ? "sending" : "re-sending"} operation ${row.id}`)
      yield* forward(row, true)
    }
    return yield* load(row.id)
  })

  const declineAtSubmit = Effect.fn("Relay.declineAtSubmit")(function*(
    base: { id: string; build: StoredBuild; hash: string; wire: UserOperation; signer: string },
    decline: OutOfScope
  ) {
    const { id, build, hash, wire, signer } = base
    // Persisted first, then its audit entry, in one transaction (run again if it lost a lock conflict).
    const stored = yield* transaction(Effect.gen(function*() {
      const inserted = yield* sql`
        INSERT INTO user_operations (id, build_id, account_id, signer_address, intent_type, chain_id, sender, nonce,
                                     user_op_hash, signature_digest, user_op, status, outcome, reason, decline_reason, submitted_at, settled_at)
        VALUES (${id}, ${build.id}, ${build.accountId}, ${signer}, ${build.intentType}, ${chainId}, ${wire.sender.toLowerCase()},
                ${wire.nonce}, ${hash}, ${signatureDigest(wire)}, ${JSON.stringify(wire)}::jsonb, 'failed', 'rejected',
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
    if (!stored) {
      const raced = priorVerdict(yield* byHash(hash).pipe(Effect.orDie), signer, wire.signature)
      if (raced?._tag === "Same") return toReceipt(raced.row)
      return yield* new BadRequest({ message: "This operation was already submitted" })
    }
    return yield* new OutOfScope({
      message: decline.message,
      declineReason: decline.declineReason,
      details: { userOpId: id }
    })
  })

  const submit = Effect.fn("Relay.submit")(function*(signer: string, wire: UserOperation) {
    if (/^0x0*$/.test(wire.signature)) {
      return yield* new BadRequest({ message: "The operation has no signature: sign the build's typedData and set userOp.signature" })
    }
    if (wire.chainId !== chainId) {
      return yield* new BadRequest({ message: `This relay serves chain ${chainId}, not ${wire.chainId}` })
    }
    if (wire.entryPoint.toLowerCase() !== entryPoint) {
      return yield* new BadRequest({ message: `This relay serves EntryPoint ${entryPoint}` })
    }
    const op = fromWire(wire)
    // viem refuses values its packing cannot hold (a nonce ≥ 2^256, a gas limit ≥ 2^128): the client's mistake.
    const hash = yield* Effect.try({
      try: () => userOpHashOf(op, chainId, network.entryPoint),
      catch: (e) => new BadRequest({ message: `The operation cannot be encoded: ${e instanceof Error ? e.message.split("\n")[0] : String(e)}` })
    })
    // Both lookups at once (two round trips in the time of one): earlier submissions of this
    // hash, and the signer's build it matches. Both only read.
    const [earlier, matched] = yield* Effect.all([
      byHash(hash).pipe(Effect.orDie),
      Effect.result(buildOfSubmission({
        builder,
        signer,
        wire,
        userOpHash: hash,
        tokenPaymaster: network.tokenPaymaster?.address.toLowerCase()
      }))
    ], { concurrency: 2 })
    // The same signed operation (signature included) submitted again is the same operation: answer its receipt.
    const prior = priorVerdict(earlier, signer, wire.signature)
    if (prior?._tag === "Same") return toReceipt(prior.row)
    if (prior?._tag === "Live") {
      return yield* new BadRequest({
        message: "This operation is already submitted with another signature, and is pending or included",
        ...(prior.row.signer_address === signer ? { details: { userOpId: prior.row.id } } : {})
      })
    }
    if (Result.isFailure(matched)) return yield* Effect.fail(matched.failure)
    const build = matched.success
    if (build.expiresAt.getTime() < Date.now()) {
      return yield* new BadRequest({ message: `The build expired at ${build.expiresAt.toISOString()}: build the operation again` })
    }
    const id = `uop_${crypto.randomUUID()}`
    const relayed: RelayedOperation = {
      id,
      accountId: build.accountId,
      signerAddress: signer,
      intentType: build.intentType,
      chainId,
      userOpHash: hash,
      userOp: op,
      build
    }
    const declined = yield* hooks.checkPolicy(relayed).pipe(
      Effect.as(undefined),
      Effect.catchTag("OutOfScope", (e) => Effect.succeed(e))
    )
    if (declined !== undefined) return yield* declineAtSubmit({ id, build, hash, wire, signer }, declined)

    // Persisted (holding the send lease) before anything is forwarded.
    const inserted = yield* sql`
      INSERT INTO user_operations (id, build_id, account_id, signer_address, intent_type, chain_id, sender, nonce,
                                   user_op_hash, signature_digest, user_op, status, outcome, send_attempts, send_lease_until, submitted_at)
      VALUES (${id}, ${build.id}, ${build.accountId}, ${signer}, ${build.intentType}, ${chainId}, ${wire.sender.toLowerCase()},
              ${wire.nonce}, ${hash}, ${signatureDigest(wire)}, ${JSON.stringify({ ...wire, sender: wire.sender.toLowerCase() })}::jsonb,
              'submitted', 'pending', 1, now() + ${`${leaseMs} milliseconds`}::interval, now())
      ON CONFLICT DO NOTHING
      RETURNING *`.pipe(Effect.orDie, Effect.flatMap(Schema.decodeUnknownEffect(Schema.Array(OperationRow))), Effect.orDie)
    if (inserted.length === 0) {
      const raced = priorVerdict(yield* byHash(hash).pipe(Effect.orDie), signer, wire.signature)
      if (raced?._tag === "Same") return toReceipt(raced.row)
      return yield* new BadRequest({ message: "This operation was already submitted" })
    }
    const row = inserted[0]!
    const forwarded = yield* forward(row, false, true)
    if (forwarded._tag === "Down") {
      const details = { userOpId: id, status: "submitted", willRetry: true }
      return yield* (forwarded.error._tag === "BundlerTimeout"
        ? new UpstreamTimeout({
          message: "The bundler did not answer in time; the operation is stored and will be sent again",
          details
        })
        : new UpstreamUnavailable({
          message: "The bundler is unavailable; the operation is stored and will be sent when it is back",
          details
        }))
    }
    // Sent: still submitted / pending (no need to read it back); settled at once: read the outcome.
    return forwarded._tag === "Sent" ? toReceipt(row) : toReceipt(yield* load(id))
  })

  const get = Effect.fn("Relay.get")(function*(signer: string, userOpId: string) {
    const row = (yield* byId(userOpId).pipe(Effect.orDie))[0]
    if (row === undefined || row.signer_address !== signer) {
      return yield* new NotFound({ message: `No operation ${userOpId}` })
    }
    return toReceipt(yield* reconcile(row))
  })

  const pending = SqlSchema.findAll({
    Request: Schema.Void,
    Result: OperationRow,
    execute: () =>
      // Least recently visited first: a backlog of stuck operations cannot starve newer ones.
      sql`SELECT * FROM user_operations WHERE status = 'submitted' AND chain_id = ${chainId}
          ORDER BY reconciled_at NULLS FIRST, submitted_at LIMIT 200`
  })

  const reconcilePending = Effect.gen(function*() {
    const rows = yield* pending().pipe(Effect.orDie)
    if (rows.length > 0) {
      yield* sql`UPDATE user_operations SET reconciled_at = now() WHERE id IN ${sql.in(rows.map((r) => r.id))}`.pipe(Effect.orDie)
    }
    const settled = yield* Effect.forEach(
      rows,
      (row) =>
        reconcile(row).pipe(
          Effect.map((after) => after.status !== "submitted"),
          Effect.catchCause((cause) => Effect.logWarning(`relay: reconciling ${row.id} failed`, cause).pipe(Effect.as(false)))
        ),
      { concurrency: 4 }
    )
    return settled.filter(Boolean).length
  }).pipe(Effect.withSpan("Relay.reconcilePending"))


  return Relay.of({ submit, get, reconcilePending, observe, reopen })
})

/** Settles what nobody polls, and whatever a previous process left behind: a scoped fiber. */
export const ReconcilerLive = Layer.effectDiscard(Effect.gen(function*() {
  const relay = yield* Relay
  const interval = yield* Config.Duration("RELAY_RECONCILE_INTERVAL").pipe(Config.withDefault(Duration.seconds(5)))
  yield* runLoop({
    name: "relay reconciler",
    interval,
    pass: Effect.gen(function*() {
      const settled = yield* relay.reconcilePending.pipe(
        Effect.catchCause((cause) => Effect.logWarning("relay: reconciler pass failed", cause).pipe(Effect.as(-1)))
      )
      if (settled > 0) yield* Effect.logInfo(`relay: reconciler settled ${settled} operation(s)`)
      return settled === 0 ? "idle" : "worked"
    })
  })
}))
