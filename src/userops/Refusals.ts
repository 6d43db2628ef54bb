/**
 * A bundler's refusal is an answer about the bundler's view at that moment, not about the
 * chain. "AA25 invalid account nonce" or "AA10 sender already constructed" after a lost
 * answer usually means the operation itself already executed, through this relay or any
 * other bundler. Before such a refusal settles an operation as failed, the chain is read
 * (docs/relay.md, "Refusals and the chain"):
 *
 * - the operation's `UserOperationEvent` is on chain → it settles from that receipt;
 * - its nonce was used by another operation, or it carries factory data for an account
 *   that now exists → it can never be included: the refusal is final;
 * - otherwise it may still be included: it stays `submitted` and is sent again later.
 */
import { Effect } from "effect"
import type { Address, Hash, PublicClient } from "viem"
import type { UserOperationV07 } from "../chain/Bundler.ts"
import { findInclusion, type Inclusion, nextNonce } from "../chain/Inclusions.ts"

/** Refusals that can be a stale view of an operation the chain already holds (or soon will). */
export const STALE_PRONE = /AA10|AA25|nonce|already|replacement/i

export type ChainVerdict =
  | { readonly _tag: "Included"; readonly inclusion: Inclusion }
  | { readonly _tag: "Final"; readonly why: string }
  | { readonly _tag: "Open" }
  /** The chain could not be read: nothing is decided. */
  | { readonly _tag: "Unknown"; readonly error: string }

export const chainVerdict = (
  client: PublicClient,
  entryPoint: Address,
  op: UserOperationV07,
  userOpHash: Hash,
  lookback: bigint
): Effect.Effect<ChainVerdict> =>
  Effect.tryPromise(async (): Promise<ChainVerdict> => {
    // What the chain says of the nonce and the account first, then the logs: an operation mined
    // between the reads is then found by the last one (the other order would see its nonce used,
    // or the account it deploys existing, and miss its event).
    const [next, code] = await Promise.all([
      nextNonce(client, entryPoint, op.sender, op.nonce),
      op.factory !== undefined && op.factory !== null ? client.getCode({ address: op.sender }) : Promise.resolve(undefined)
    ])
    const inclusion = await findInclusion(client, entryPoint, userOpHash, lookback)
    if (inclusion !== undefined) return { _tag: "Included", inclusion }
    if (next > op.nonce) return { _tag: "Final", why: "its nonce was used by another operation" }
    if (code !== undefined && code !== "0x") return { _tag: "Final", why: "it deploys an account that already exists" }
    return { _tag: "Open" }
  }).pipe(
    Effect.catch((e) => Effect.succeed<ChainVerdict>({ _tag: "Unknown", error: String(e.cause ?? e).slice(0, 300) })),
    Effect.withSpan("Relay.chainVerdict")
  )
