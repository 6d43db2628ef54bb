/**
 * The user-operation relay (docs/relay.md):
 *
 * submit: refuse an unsigned operation (400) → recompute the hash → answer an earlier
 * submission of this very signed operation (signature included) → find the signer's build
 * by that hash, i.e. every signed field equal (Matching.ts; 404 when nothing was built for
 * its sender and nonce, 400 when it is not what was built) → re-check policy (422 + one audit entry on a decline)
 * → persist it as `submitted` → forward it to the bundler. A bundler rejection settles it
 * at once (`failed` / `rejected`, one audit entry); a bundler that cannot be reached
 * leaves it `submitted` and unsent, answers 503/504 naming the chain, and the reconciler sends
 * it later. Every operation is routed by its own `chainId` (the `Chains` registry).
 *
 * A refusal that may be stale (AA10, AA25, a refused re-send) is checked on chain first
 * (Refusals.ts). Settlement: Settlement.ts; what the chain follower reports: ChainRecord.ts;
 * the stored row: OperationRow.ts.
 */
import { Cause, Config, Context, Duration, Effect, Layer, Result, Schema, type Scope } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import type { Hash } from "viem"
import { readFrozen } from "../accounts/Accounts.ts"
import { BadRequest, NotFound, OutOfScope, ServiceUnavailable, Unauthorized, UpstreamTimeout } from "../api/Errors.ts"
import { ACCOUNT_FROZEN, allowedWhileFrozen } from "../builds/Intents.ts"
import { OperationBuilder } from "../builds/OperationBuilder.ts"
import { fromWire, userOpHashOf } from "../builds/Wire.ts"
import { BundlerUnavailable } from "../chain/Bundler.ts"
import { type ChainNetwork, Chains } from "../chain/Chains.ts"
import { type Inclusion, nextNonce, type TransactionOf } from "../chain/Inclusions.ts"
import type { SignedUserOp, UserOpReceipt } from "../domain/Operations.ts"
import { cleanOutsideText } from "../domain/OutsideText.ts"
import { makeLoopHealth } from "../platform/LoopHealth.ts"
import { runLoop } from "../platform/Loop.ts"
import { makeChainRecord } from "./ChainRecord.ts"
import { buildOfSubmission, type PriorSubmission, priorVerdict } from "./Matching.ts"
import { withPasskeySignature } from "./Passkeys.ts"
import { ALREADY_KNOWN, OperationRow, rejectionReason, toReceipt } from "./OperationRow.ts"
import { chainVerdict, STALE_PRONE } from "./Refusals.ts"
import type { RelayedOperation } from "./RelayHooks.ts"
import { RelayHooks } from "./RelayHooks.ts"
import { makeSendMarks } from "./SendMarks.ts"
import { makeSettlement } from "./Settlement.ts"
import { makeSubmission } from "./Submission.ts"

export { type OperationRow, toReceipt } from "./OperationRow.ts"

/** An earlier submission of the same hash as the session's statement reads it (`earlierOf`). */
type EarlierSubmission = PriorSubmission & { readonly id: string }

export const RelayConfig = Config.all({
  /** How long a process may take to forward an operation before another may (re-)send it. */
  sendLease: Config.Duration("RELAY_SEND_LEASE").pipe(Config.withDefault(Duration.seconds(30))),
  /** A sent operation with no receipt after this long is sent again (the bundler may have dropped it). */
  resendAfter: Config.Duration("RELAY_RESEND_AFTER").pipe(Config.withDefault(Duration.minutes(2))),
  /** How far back (blocks) a refused operation is looked for on chain before the refusal counts. */
  chainLookback: Config.Int("RELAY_CHAIN_LOOKBACK").pipe(Config.withDefault(10_000))
})


/**
 * Who submits: a signer already authenticated, or the hash of a bearer session token, checked
 * in the same statement as the build lookup (`POST /userops`: one round trip fewer), before
 * anything is read back to the caller or stored; unknown, revoked or expired → 401.
 */
export type Submitter = string | { readonly tokenHash: Uint8Array }

export class Relay extends Context.Service<Relay, {
  /** A passkey-signed operation (`webauthn`) gets its signature from the assertion first (Passkeys.ts). */
  submit(signer: string, op: SignedUserOp): Effect.Effect<
    UserOpReceipt,
    BadRequest | NotFound | OutOfScope | ServiceUnavailable | UpstreamTimeout
  >
  /** `submit` for the signer of a bearer session (`POST /userops`): the session checked with the first lookup (`Submitter`). */
  submitWithSession(session: { readonly tokenHash: Uint8Array }, op: SignedUserOp): Effect.Effect<
    UserOpReceipt,
    BadRequest | NotFound | OutOfScope | ServiceUnavailable | UpstreamTimeout | Unauthorized
  >
  /** The signer's operation, re-polled at the bundler when not yet settled. */
  get(signer: string, userOpId: string): Effect.Effect<UserOpReceipt, NotFound>
  /** One pass over operations nobody has settled (the reconciler's work); answers how many settled. */
  readonly reconcilePending: Effect.Effect<number>
  /** The same on one chain. */
  reconcileChain(chainId: number): Effect.Effect<number>
  /** `reconcileChain` as the reconciler's loop runs it: a failure is logged (a database outage once) and counts 0. */
  reconcilerPass(chainId: number): Effect.Effect<number>
  /**
   * What the chain shows about an operation (the chain follower's call, inside its transaction):
   * settles ours from it, corrects one recorded as refused, or adopts one built here and sent
   * around the relay. `unknown`: nothing of ours has this hash. `transactionOf` reads the bundle's
   * transaction (the adopted operation's signature) from what the caller already read.
   */
  observe(chainId: number, inclusion: Inclusion, transactionOf?: TransactionOf): Effect.Effect<"settled" | "recorded" | "corrected" | "adopted" | "unknown">
  /** The operation's inclusion left the chain (a reorg): it is `submitted` again, watched and re-sent. */
  reopen(chainId: number, userOpHash: string, transactionHash: string): Effect.Effect<ReadonlyArray<string>>
  /**
   * `listener` hears every settlement this process commits in a transaction of its own, with
   * the row as committed, right after the commit (Settlement.ts); for the life of the scope.
   */
  onSettled(listener: (row: OperationRow) => void): Effect.Effect<void, never, Scope.Scope>
}>()("das/userops/Relay") {
  static readonly layer = Layer.effect(Relay, Effect.suspend(() => make))
}

const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const chains = yield* Chains
  const builder = yield* OperationBuilder
  const hooks = yield* RelayHooks
  const config = yield* RelayConfig
  const background = yield* Effect.scope
  const leaseMs = Duration.toMillis(config.sendLease)
  const resendAfterMs = Duration.toMillis(config.resendAfter)

  // A frozen account relays only risk-reducing operations (and its unfreeze). The flag comes
  // with the build (read by the same statement as the lookup: no round trip of its own);
  // a build without it (not from `byHash`) reads it here. It writes nothing: read-only.
  yield* hooks.registerPolicyCheck("*", "account_frozen", (op) =>
    allowedWhileFrozen(op.intentType, op.build.riskReducing)
      ? Effect.void
      : (op.build.accountFrozen !== undefined
        ? Effect.succeed(op.build.accountFrozen)
        : readFrozen(sql, op.accountId)).pipe(Effect.flatMap((frozen) =>
          frozen ? Effect.fail(new OutOfScope({ message: "The account is frozen", declineReason: ACCOUNT_FROZEN })) : Effect.void
        )), { readOnly: true })

  const settlement = yield* makeSettlement
  const { byId, byHash, load, settle } = settlement
  const { observe, reopen } = yield* makeChainRecord(settlement)

  const { claimSend, markSent, markRefusedPending, markUnsent } = makeSendMarks(sql, leaseMs, resendAfterMs)

  /**
   * The earlier submissions of a hash as a scalar subquery (what `priorVerdict` weighs, in
   * `byHash`'s order), read by the session's statement: a JSON array, empty when none.
   */
  const earlierOf = (chainId: number, hash: string) =>
    sql`(SELECT coalesce(json_agg(json_build_object('id', u.id, 'signer_address', u.signer_address, 'status', u.status,
                                                    'user_op', json_build_object('signature', u.user_op->>'signature'))
                                  ORDER BY (u.status <> 'failed') DESC, u.submitted_at DESC), '[]'::json)
         FROM user_operations u WHERE u.chain_id = ${chainId} AND u.user_op_hash = ${hash})`
  const submission = yield* makeSubmission(settlement, { leaseMs, chainLookback: config.chainLookback })

  /** Whether the chain shows the operation's nonce used (by it or another); false when the chain cannot be read. */
  const nonceUsed = ({ chain, network }: ChainNetwork, row: OperationRow) =>
    Effect.tryPromise(() => nextNonce(chain.client, network.entryPoint, row.sender as Hash, BigInt(row.nonce))).pipe(
      Effect.map((next) => next > BigInt(row.nonce)),
      Effect.orElseSucceed(() => false),
      Effect.withSpan("Relay.nonceUsed")
    )

  /**
   * Sends a claimed operation. A refusal settles it (after checking it was not in fact
   * already included: a re-send of an included operation is refused for its nonce); an
   * unreachable bundler leaves it unsent, with the error, for the next pass.
   */
  const forward = Effect.fn("Relay.forward")(function*(row: OperationRow, isResend: boolean, markSentLater = false) {
    const net = chains.find(row.chain_id)
    if (net === undefined) {
      const error = new BundlerUnavailable({ method: "eth_sendUserOperation", message: `chain ${row.chain_id} is not served by this process` })
      yield* markUnsent(row.id, error.message)
      return { _tag: "Down" as const, error }
    }
    const { bundler, chain, network } = net
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
              yield* settle(row, { _tag: "Rejected", error: sent.error, note: verdict.why })
              return { _tag: "Settled" as const }
          }
        }
        yield* settle(row, { _tag: "Rejected", error: sent.error })
        return { _tag: "Settled" as const }
      }
    }
  })

  /** Brings one unsettled operation forward: settle it if the bundler has a receipt, else (re-)send it when due. */
  const reconcile = Effect.fn("Relay.reconcile")(function*(row: OperationRow, fromReconciler = false) {
    if (row.status !== "submitted") return row
    const net = chains.find(row.chain_id)
    if (net === undefined) return row // a chain no longer served: left as it is
    const { bundler, chain, network } = net
    const receipt = yield* bundler.getUserOperationReceipt(row.user_op_hash as Hash).pipe(
      // The bundler's words: on one line, bounded, no hidden character (src/domain/OutsideText.ts).
      Effect.tapError((e) => Effect.logDebug(`relay: receipt of ${row.id} not available: ${cleanOutsideText(e.message, 200)}`)),
      Effect.orElseSucceed(() => undefined)
    )
    if (receipt === undefined) return row // bundler unreachable: leave it for later
    if (receipt !== null) {
      yield* settle(row, { _tag: "Receipt", receipt })
      return yield* load(row.id)
    }
    const unsent = row.sent_at === null
    const dueForResend = !unsent && Date.now() - row.sent_at!.getTime() > resendAfterMs
    // Refused in a way that may be stale (kept for RELAY_RESEND_AFTER) and still without a receipt: the
    // reconciler asks the chain on each pass. Its nonce used means it was included (the bundler lost
    // the receipt) or another operation took the nonce: settled now, not minutes later. (The
    // follower settles the same from the blocks it reads; this covers a service that runs none.)
    if (fromReconciler && !unsent && row.last_error !== null && (yield* nonceUsed(net, row))) {
      const verdict = yield* chainVerdict(chain.client, network.entryPoint, fromWire(row.user_op), row.user_op_hash as Hash, BigInt(config.chainLookback))
      if (verdict._tag === "Included") yield* settle(row, { _tag: "Receipt", receipt: verdict.inclusion.receipt })
      else if (verdict._tag === "Final") yield* settle(row, { _tag: "NonceUsed", transactionHash: undefined })
      return yield* load(row.id)
    }
    if ((unsent || dueForResend) && (yield* claimSend(row.id, !unsent))) {
      yield* Effect.logInfo(`relay: ${unsent ? "sending" : "re-sending"} operation ${row.id}`)
      yield* forward(row, true)
    }
    return yield* load(row.id)
  })

  const submitAs = Effect.fn("Relay.submit")(function*(submitter: Submitter, input: SignedUserOp) {
    const wire = yield* withPasskeySignature(chains, input)
    if (/^0x0*$/.test(wire.signature)) {
      return yield* new BadRequest({ message: "The operation has no signature: sign the build's typedData and set userOp.signature" })
    }
    // Routed by the operation's chain; its hash (and the owner's signature domain) names that chain.
    const { network } = yield* chains.get(wire.chainId)
    const chainId = network.chainId
    if (wire.entryPoint.toLowerCase() !== network.entryPoint.toLowerCase()) {
      return yield* new BadRequest({ message: `The relay serves EntryPoint ${network.entryPoint.toLowerCase()} on chain ${chainId}` })
    }
    const op = fromWire(wire)
    // viem refuses values its packing cannot hold (a nonce ≥ 2^256, a gas limit ≥ 2^128): the client's mistake.
    const hash = yield* Effect.try({
      try: () => userOpHashOf(op, chainId, network.entryPoint),
      catch: (e) => new BadRequest({ message: `The operation cannot be encoded: ${e instanceof Error ? e.message.split("\n")[0] : String(e)}` })
    })
    const tokenPaymaster = network.tokenPaymaster?.address.toLowerCase()
    // The signer, the build it matches and the earlier submissions of this hash. A session token
    // is checked in the build lookup's own statement, which reads the earlier submissions too (one
    // statement: issue 46 item 2): a revoked or expired session finds nothing and stops here (401),
    // before any answer about an operation and before anything is stored.
    const { signer, matched, earlier } = typeof submitter === "string"
      // Both lookups at once (two round trips in the time of one). Both only read.
      ? yield* Effect.all({
        signer: Effect.succeed(submitter),
        matched: Effect.result(buildOfSubmission({ builder, signer: submitter, wire, userOpHash: hash, tokenPaymaster })),
        earlier: byHash(chainId, hash).pipe(Effect.orDie)
      }, { concurrency: 2 })
      : yield* Effect.flatMap(builder.byHashForSession(submitter.tokenHash, chainId, hash, earlierOf(chainId, hash)), (session) =>
        session === undefined
          ? Effect.fail(new Unauthorized({ message: "Missing, unknown, expired or revoked session token" }))
          : Effect.map(
            Effect.result(buildOfSubmission({ builder, signer: session.signer, wire, userOpHash: hash, tokenPaymaster, direct: session.builds })),
            (matched) => ({ signer: session.signer, matched, earlier: session.alongside as ReadonlyArray<EarlierSubmission> })
          ))
    // The same signed operation (signature included) submitted again is the same operation: answer its receipt.
    const prior = priorVerdict<EarlierSubmission>(earlier, signer, wire.signature)
    if (prior?._tag === "Same") return toReceipt(yield* load(prior.row.id))
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
    const base = { id, build, hash, wire, signer }
    const stored = yield* submission.store(relayed, base)
    if (stored._tag === "Raced") return yield* submission.racedAnswer(hash, signer, wire)
    if (stored._tag === "Declined") {
      // The chain may already hold it (sent through another bundler): then that is the answer.
      const inclusion = yield* submission.alreadyOnChain(chainId, op, hash)
      if (inclusion !== undefined) return yield* submission.recordFromChain(base, inclusion)
      return yield* submission.declineAtSubmit(base, stored.decline)
    }
    const row = stored.row
    const forwarded = yield* forward(row, false, true)
    if (forwarded._tag === "Down") {
      const details = { userOpId: id, status: "submitted", willRetry: true, chainId }
      return yield* (forwarded.error._tag === "BundlerTimeout"
        ? new UpstreamTimeout({
          message: `The bundler of chain ${chainId} did not answer in time; the operation is stored and will be sent again`,
          details
        })
        : new ServiceUnavailable({
          message: `The bundler of chain ${chainId} is unavailable; the operation is stored and will be sent when it is back`,
          details: { ...details, retryAfterSeconds: 5 }
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
    Request: Schema.Number,
    Result: OperationRow,
    execute: (chainId) =>
      // Least recently visited first: a backlog of stuck operations cannot starve newer ones.
      sql`SELECT * FROM user_operations WHERE status = 'submitted' AND chain_id = ${chainId}
          ORDER BY reconciled_at NULLS FIRST, submitted_at LIMIT 200`
  })

  // Each chain's reconciler loop health (a database outage logged once, not per row and per pass).
  const healthOf = new Map(chains.all.map((c) => [c.chainId, makeLoopHealth(`relay reconciler on ${c.name}`)]))

  // Per chain: a chain whose bundler is down makes its own pass slow, never the others'.
  const reconcileChain = (chainId: number) => Effect.gen(function*() {
    const health = healthOf.get(chainId) ?? makeLoopHealth(`relay reconciler on chain ${chainId}`)
    const rows = yield* pending(chainId).pipe(Effect.orDie)
    if (rows.length > 0) {
      // Only the order of the next passes (a hint): a row a settlement or the follower holds is
      // skipped, never waited for. Waiting, in no order, deadlocked with the follower's locks in id order.
      yield* sql`UPDATE user_operations SET reconciled_at = now() WHERE id IN (
        SELECT id FROM user_operations WHERE id IN ${sql.in(rows.map((r) => r.id))} ORDER BY id FOR UPDATE SKIP LOCKED)`.pipe(
        Effect.orDie
      )
    }
    const settled = yield* Effect.forEach(
      rows,
      (row) =>
        reconcile(row, true).pipe(
          Effect.map((after) => after.status !== "submitted"),
          Effect.catchCause((cause) =>
            Cause.hasInterruptsOnly(cause)
              ? Effect.interrupt
              : health.failed(cause, `relay: reconciling ${row.id} failed`).pipe(Effect.as(false)))
        ),
      { concurrency: 4 }
    )
    return settled.filter(Boolean).length
  }).pipe(Effect.withSpan("Relay.reconcilePending", { attributes: { chainId } }))

  const reconcilePending = Effect.forEach(chains.ids, reconcileChain, { concurrency: "unbounded" }).pipe(
    Effect.map((counts) => counts.reduce((a, b) => a + b, 0))
  )

  // An authenticated signer: no session to check (the `Unauthorized` branch cannot run).
  const submit = (signer: string, input: SignedUserOp) => submitAs(signer, input).pipe(Effect.catchTag("Unauthorized", Effect.die))
  const submitWithSession = (session: { readonly tokenHash: Uint8Array }, input: SignedUserOp) => submitAs(session, input)

  return Relay.of({
    submit,
    submitWithSession,
    get,
    reconcilePending,
    reconcileChain,
    reconcilerPass: (chainId) =>
      (healthOf.get(chainId) ?? makeLoopHealth(`relay reconciler on chain ${chainId}`)).pass(
        reconcileChain(chainId),
        0,
        `relay: reconciler pass on chain ${chainId} failed`
      ),
    observe,
    reopen,
    onSettled: settlement.onSettled
  })
})

/** Settles what nobody polls, and whatever a previous process left behind: a scoped fiber. */
export const ReconcilerLive = Layer.effectDiscard(Effect.gen(function*() {
  const relay = yield* Relay
  const chains = yield* Chains
  const interval = yield* Config.Duration("RELAY_RECONCILE_INTERVAL").pipe(Config.withDefault(Duration.seconds(5)))
  // One loop per chain (see reconcileChain); a failed pass is logged by the chain's loop health.
  for (const net of chains.all) {
    yield* runLoop({
      name: `relay reconciler on ${net.name}`,
      interval,
      pass: Effect.gen(function*() {
        const settled = yield* relay.reconcilerPass(net.chainId)
        if (settled > 0) yield* Effect.logInfo(`relay: reconciler settled ${settled} operation(s) on chain ${net.chainId}`)
        return settled === 0 ? "idle" : "worked"
      })
    })
  }
}))
