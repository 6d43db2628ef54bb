/**
 * What a submission is (docs/relay.md "Matching"): the relay takes exactly what was built
 * and signed.
 *
 * - A submission's build is found by the userOpHash recomputed from the submission, so
 *   it matches only when every signed field is the build's (sender, nonce, factory data,
 *   call data, gas limits, fees, paymaster and its data, chain, EntryPoint). The one
 *   allowed difference is the permit flow's: a permit build's `paymasterData` is its
 *   prefix, and the submission appends exactly the 65-byte permit signature; its build is
 *   found by the hash of the submission with that signature taken off.
 * - A stored submission is the whole signed operation, its signature included: a copy of
 *   an operation with another signature is another submission, and its outcome never
 *   answers for this one.
 */
import { Effect } from "effect"
import { type Hex, keccak256, toBytes } from "viem"
import { BadRequest, NotFound } from "../api/Errors.ts"
import { matchesBuild, type OperationBuilder, type StoredBuild } from "../builds/OperationBuilder.ts"
import { fromWire, userOpHashOf } from "../builds/Wire.ts"
import { splitPermitData } from "../chain/TokenPaymaster.ts"
import type { UserOperation } from "../domain/Operations.ts"

/** The build a submission was built as, or why there is none (404: nothing built for it; 400: not what was built). */
export const buildOfSubmission = Effect.fn("Matching.buildOfSubmission")(function*(a: {
  readonly builder: OperationBuilder["Service"]
  readonly signer: string
  readonly wire: UserOperation
  readonly userOpHash: string
  readonly tokenPaymaster: string | undefined
  /** The signer's builds with the submission's hash, when already read (with the session check). */
  readonly direct?: ReadonlyArray<StoredBuild> | undefined
}) {
  const { builder, signer, wire } = a
  const direct = a.direct ?? (yield* builder.byHash(signer, wire.chainId, a.userOpHash))
  const found = direct.find((b) => b.permitSignaturePrefix === undefined && matchesBuild(b, wire))
  if (found !== undefined) return found

  // The permit flow: the token paymaster's permit prefix followed by exactly 65 bytes of signature.
  const split = wire.paymasterData === undefined || a.tokenPaymaster === undefined ||
      wire.paymaster?.toLowerCase() !== a.tokenPaymaster
    ? undefined
    : splitPermitData(wire.paymasterData.toLowerCase() as Hex)
  if (split !== undefined) {
    const unsigned: UserOperation = { ...wire, paymasterData: split.prefix }
    const prefixHash = userOpHashOf(fromWire(unsigned), wire.chainId, wire.entryPoint as Hex)
    const permitted = (yield* builder.byHash(signer, wire.chainId, prefixHash)).find((b) =>
      b.permitSignaturePrefix !== undefined && matchesBuild(b, wire)
    )
    if (permitted !== undefined) return permitted
  }

  return yield* (yield* builder.hasBuildFor(signer, wire.chainId, wire.sender, wire.nonce))
    ? new BadRequest({
      message: "The operation is not the operation that was built: every signed field (call data, gas limits, fees, " +
        "paymaster and its data, factory data) must be the build's. A permit build takes exactly its " +
        "gasPermit.signaturePrefix followed by the 65-byte permit signature, and nothing else may change"
    })
    : new NotFound({
      message: "No build of your accounts matches this operation's sender, nonce and chain: build it first"
    })
})

/** Stored submissions of one userOpHash, as the relay weighs them. */
export interface PriorSubmission {
  readonly signer_address: string
  readonly status: string
  readonly user_op: { readonly signature: string }
}

/**
 * What earlier submissions of the same userOpHash say about this one: `same` (this very
 * signed operation: answer its receipt), `live` (another signature of it is pending or
 * included: refuse, the nonce is taken), or nothing (only failed copies with other
 * signatures, or none: this one goes ahead).
 */
export const priorVerdict = <R extends PriorSubmission>(
  rows: ReadonlyArray<R>,
  signer: string,
  signature: string
): { readonly _tag: "Same"; readonly row: R } | { readonly _tag: "Live"; readonly row: R } | undefined => {
  const sig = signature.toLowerCase()
  const same = rows.find((r) => r.user_op.signature.toLowerCase() === sig && r.signer_address === signer)
  if (same !== undefined) return { _tag: "Same", row: same }
  const live = rows.find((r) => r.status !== "failed")
  return live === undefined ? undefined : { _tag: "Live", row: live }
}

/** The stored key of a submission's signature (with its userOpHash: the whole signed operation). */
export const signatureDigest = (op: UserOperation): string => keccak256(toBytes(op.signature.toLowerCase()))
