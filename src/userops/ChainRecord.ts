/**
 * What the chain shows about the relay's operations (the chain follower's calls, inside
 * its transaction; src/follower): an operation of ours is settled from its inclusion, one
 * recorded as refused is corrected by a second entry (never rewritten), one built here and
 * sent around the relay is adopted (stored, then settled with the build's effects and
 * `onchain_unrelayed` provenance), and one whose block left the chain is reopened. Any
 * inclusion, ours or not, used its sender's nonce: our other operations still open at that
 * nonce settle `failed` at once (they can never execute).
 */
import { Effect, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { OperationBuilder, type StoredBuild } from "../builds/OperationBuilder.ts"
import { Chains } from "../chain/Chains.ts"
import { type Inclusion, signatureOnChain, transactionFrom, type TransactionOf } from "../chain/Inclusions.ts"
import { signatureDigest } from "./Matching.ts"
import { OperationRow, type Verdict } from "./OperationRow.ts"
import type { Settlement } from "./Settlement.ts"

export const makeChainRecord = (settlement: Settlement) => Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const chains = yield* Chains
  const builder = yield* OperationBuilder
  const { byHash, settle, supersede } = settlement

  const buildByHash = (chainId: number, hash: string) =>
    sql<{ id: string }>`SELECT id FROM op_builds WHERE chain_id = ${chainId} AND user_op_hash = ${hash}
                        ORDER BY created_at DESC LIMIT 1`.pipe(
      Effect.orDie,
      Effect.flatMap((rows) => rows[0] === undefined ? Effect.succeed(undefined) : builder.findById(rows[0].id))
    )

  /** Stores an operation built here and included around the relay, as `submitted`, ready to settle. */
  const adopt = (chainId: number, build: StoredBuild, inclusion: Inclusion, transactionOf: TransactionOf | undefined) =>
    Effect.gen(function*() {
      const net = yield* chains.serving(chainId).pipe(Effect.orDie)
      const signature = yield* Effect.promise(() =>
        signatureOnChain(transactionOf ?? transactionFrom(net.chain.client), net.network.entryPoint, inclusion)
      )
      const wire = { ...build.userOp, sender: build.userOp.sender.toLowerCase(), signature: signature ?? "0x" }
      const rows = yield* sql`
        INSERT INTO user_operations (id, build_id, account_id, signer_address, intent_type, chain_id, sender, nonce,
                                     user_op_hash, signature_digest, user_op, status, outcome, send_attempts, sent_at, submitted_at)
        VALUES (${`uop_${crypto.randomUUID()}`}, ${build.id}, ${build.accountId}, ${build.signerAddress}, ${build.intentType},
                ${chainId}, ${wire.sender}, ${wire.nonce}, ${build.userOpHash}, ${signatureDigest(wire)},
                ${JSON.stringify(wire)}::jsonb, 'submitted', 'pending', 0, now(), now())
        ON CONFLICT DO NOTHING
        RETURNING *`.pipe(Effect.orDie, Effect.flatMap(Schema.decodeUnknownEffect(Schema.Array(OperationRow))), Effect.orDie)
      return rows[0]
    })

  const observe = Effect.fn("Relay.observe")(function*(chainId: number, inclusion: Inclusion, transactionOf?: TransactionOf) {
    const outcome = yield* record(chainId, inclusion, transactionOf)
    // The nonce is used, whoever's operation used it: ours still open at it can never execute.
    yield* supersede(chainId, inclusion)
    return outcome
  })

  const record = Effect.fnUntraced(function*(chainId: number, inclusion: Inclusion, transactionOf: TransactionOf | undefined) {
    const hash = inclusion.userOpHash.toLowerCase()
    const tx = inclusion.transactionHash.toLowerCase()
    const rows = yield* byHash(chainId, hash).pipe(Effect.orDie)
    const verdict: Verdict = { _tag: "Receipt", receipt: inclusion.receipt }
    if (rows.some((r) => r.status !== "submitted" && r.transaction_hash === tx)) return "recorded" as const
    const open = rows.find((r) => r.status === "submitted")
    if (open !== undefined) return (yield* settle(open, verdict)) ? "settled" as const : "recorded" as const
    // Recorded as refused (or reverted in a block that left the chain), yet the chain holds it:
    // corrected with a second entry, never by rewriting the first.
    const stale = rows.find((r) => r.status === "failed")
    if (stale !== undefined) {
      const moved = yield* settle(stale, verdict, { from: "failed", entryKey: `chain:${stale.id}:${tx}:${inclusion.logIndex}` })
      return moved ? "corrected" as const : "recorded" as const
    }
    if (rows.length > 0) return "recorded" as const
    // Built here, sent around the relay: adopted, and settled with the build's effects.
    const build = yield* buildByHash(chainId, hash)
    if (build === undefined) return "unknown" as const
    const adopted = yield* adopt(chainId, build, inclusion, transactionOf)
    if (adopted === undefined) return "recorded" as const
    yield* settle(adopted, verdict, { provenance: "onchain_unrelayed" })
    return "adopted" as const
  })

  const reopen = Effect.fn("Relay.reopen")(function*(chainId: number, userOpHash: string, transactionHash: string) {
    const rows = yield* sql<{ id: string }>`
      UPDATE user_operations
      SET status = 'submitted', outcome = 'pending', transaction_hash = NULL, block_number = NULL, reason = NULL,
          revert_data = NULL, settled_at = NULL, sent_at = now(), send_lease_until = NULL, last_error = 'its block left the chain'
      WHERE chain_id = ${chainId} AND user_op_hash = ${userOpHash.toLowerCase()}
        AND transaction_hash = ${transactionHash.toLowerCase()}
      RETURNING id`.pipe(Effect.orDie)
    return rows.map((r) => r.id)
  })

  return { observe, reopen }
})
