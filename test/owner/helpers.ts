/**
 * Steps of the owner's account tests over HTTP: what a wallet does with an account build,
 * signed by the EOA owner key (`eth_signTypedData_v4` of its typed data) or by a passkey (a
 * WebAuthn assertion over its `signingDigest`, relayed with `webauthn`), then relayed through
 * POST /userops and polled to the end.
 */
import { Duration, Effect } from "effect"
import type { Hash } from "viem"
import type { UserOperation } from "../../src/domain/Operations.ts"
import type { OwnerBuild } from "../../src/owner/Wire.ts"
import type { Api } from "../delegations/helpers.ts"
import { signOp } from "../delegations/helpers.ts"
import type { SoftwareAuthenticator } from "../support/SoftwareAuthenticator.ts"

export type Signer = { readonly kind: "eoa"; readonly key: `0x${string}` } | { readonly kind: "passkey"; readonly authenticator: SoftwareAuthenticator }

/** The signed submission of a build: `signature` (EOA) or `signature: "0x"` + `webauthn` (passkey). */
export const signed = (build: OwnerBuild, signer: Signer) =>
  Effect.gen(function*() {
    if (signer.kind === "eoa") return (yield* signOp(signer.key, build.userOp)) as UserOperation
    const a = signer.authenticator.assert(build.signingDigest as Hash)
    return {
      ...build.userOp,
      signature: "0x",
      webauthn: { keyId: signer.authenticator.keyId, authenticatorData: a.authenticatorData, clientDataJSON: a.clientDataJSON, signature: a.signature }
    } as UserOperation
  })

/** Relays through POST /userops and polls until terminal. */
export const relayOp = (api: Api, op: UserOperation) =>
  Effect.gen(function*() {
    let receipt = yield* api.userops.submit({ payload: op })
    for (let i = 0; i < 150 && receipt.status === "submitted"; i++) {
      yield* Effect.sleep(Duration.millis(200))
      receipt = yield* api.userops.get({ params: { userOpId: receipt.userOpId }, query: {} })
    }
    return receipt
  })

/** Build → sign → relay; the receipt. */
export const run = (api: Api, build: OwnerBuild, signer: Signer) =>
  Effect.flatMap(signed(build, signer), (op) => relayOp(api, op))
