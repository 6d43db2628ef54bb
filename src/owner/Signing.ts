/**
 * Who signs for the account, and what they sign: the EIP-712 typed data and digest of the
 * account's own delegation to the Recovery contract, and a device's signature of a digest
 * checked against the signers the account holds on chain (docs/account.md, "Signing with a passkey").
 */
import type { Delegation } from "@metamask/smart-accounts-kit"
import { SIGNABLE_DELEGATION_TYPED_DATA } from "@metamask/smart-accounts-kit/utils"
import { HybridDeleGator } from "@metamask/delegation-abis"
import { Effect } from "effect"
import { type Address, BaseError, type Hash, type Hex, hashTypedData, recoverAddress, zeroAddress } from "viem"
import type { Account } from "../accounts/Domain.ts"
import { BadRequest, ServiceUnavailable } from "../api/Errors.ts"
import { delegationTypedData } from "../chain/AccountDelegations.ts"
import type { ChainNetwork } from "../chain/Chains.ts"
import { encodePasskeySignature, passkeyChallenge, readPasskey, verifyPasskeyAssertion } from "../chain/Devices.ts"
import type { WebAuthnAssertion } from "../domain/Operations.ts"
import { EIP712_DOMAIN_TYPE, fromWire } from "../builds/Wire.ts"
import type { UserOpBuild } from "../domain/Operations.ts"
import type { AccountDelegation, AccountDelegationTypedData, DelegationToSign, OwnerBuild } from "./Wire.ts"

/** An operation's build as the owner's endpoints answer it: with the digest a passkey asserts over. */
export const answerOf = (net: ChainNetwork, account: Account, build: UserOpBuild, signWith: OwnerBuild["signWith"]): OwnerBuild => {
  const digest = hashTypedData(net.accounts.userOperationTypedData(fromWire(build.userOp)))
  return { ...build, accountId: account.id, chainId: net.chainId, signingDigest: digest, webauthnChallenge: passkeyChallenge(digest), signWith }
}

const lower = (s: string) => s.toLowerCase()

export const delegationWire = (d: Delegation): typeof AccountDelegation.Type => ({
  delegate: lower(d.delegate),
  delegator: lower(d.delegator),
  authority: d.authority,
  caveats: d.caveats.map((c) => ({ enforcer: lower(c.enforcer), terms: c.terms, args: c.args })),
  salt: d.salt,
  signature: d.signature
})

export const delegationFromRow = (d: {
  readonly delegate: string
  readonly delegator: string
  readonly authority: string
  readonly caveats: ReadonlyArray<{ readonly enforcer: string; readonly terms: string; readonly args: string }>
  readonly salt: string
  readonly signature: string
}, signature?: string | null): Delegation => ({
  delegate: d.delegate as Address,
  delegator: d.delegator as Address,
  authority: d.authority as Hex,
  caveats: d.caveats.map((c) => ({ enforcer: c.enforcer as Address, terms: c.terms as Hex, args: c.args as Hex })),
  salt: d.salt as Hex,
  signature: (signature ?? d.signature) as Hex
})

const dmConfig = (net: ChainNetwork) => ({ chainId: net.chainId, delegationManager: net.network.delegation.DelegationManager })

export const delegationDigest = (net: ChainNetwork, d: Delegation): Hash => hashTypedData(delegationTypedData(d, dmConfig(net)))

export const delegationTypedDataJson = (net: ChainNetwork, d: Delegation): typeof AccountDelegationTypedData.Type => ({
  domain: { name: "DelegationManager", version: "1", chainId: net.chainId, verifyingContract: lower(net.network.delegation.DelegationManager) },
  types: {
    EIP712Domain: EIP712_DOMAIN_TYPE.map((f) => ({ ...f })),
    ...Object.fromEntries(
      Object.entries(SIGNABLE_DELEGATION_TYPED_DATA as Record<string, ReadonlyArray<{ name: string; type: string }>>)
        .map(([k, fields]) => [k, fields.map((f) => ({ name: f.name, type: f.type }))])
    )
  },
  primaryType: "Delegation",
  message: {
    delegate: lower(d.delegate),
    delegator: lower(d.delegator),
    authority: d.authority,
    caveats: d.caveats.map((c) => ({ enforcer: lower(c.enforcer), terms: c.terms })),
    salt: BigInt(d.salt).toString()
  }
})

export const toSign = (
  net: ChainNetwork,
  hash: string,
  d: Delegation,
  reason: string
): typeof DelegationToSign.Type => {
  const digest = delegationDigest(net, d)
  return {
    delegationHash: lower(hash),
    kind: "recovery",
    delegation: delegationWire({ ...d, signature: "0x" }),
    typedData: delegationTypedDataJson(net, d),
    signingDigest: digest,
    webauthnChallenge: passkeyChallenge(digest),
    reason
  }
}

const chainDown = (net: ChainNetwork) => (e: { readonly message: string }) =>
  new ServiceUnavailable({ message: `Chain ${net.chainId} cannot be read: ${e.message}`, details: { chainId: net.chainId } })

/** The account's EOA signer now: `owner()` on chain, or the key it will be deployed with. */
export const currentOwner = (net: ChainNetwork, account: Account) =>
  Effect.gen(function*() {
    const deployed = yield* net.chain.isDeployed(account.address as Address).pipe(Effect.mapError(chainDown(net)))
    if (!deployed) return { deployed, owner: lower(account.signerAddress) as Address | null }
    const owner = yield* Effect.tryPromise({
      try: () => net.chain.client.readContract({ address: account.address as Address, abi: HybridDeleGator, functionName: "owner" }),
      catch: (e) => chainDown(net)({ message: e instanceof BaseError ? e.shortMessage : String(e) })
    })
    return { deployed, owner: owner === zeroAddress ? null : lower(owner) as Address }
  })

/**
 * The account's signature of `digest` by one of its current devices: an EOA device's ECDSA
 * (`signature`, which must recover to the account's owner key), or a passkey's assertion
 * (`webauthn`, checked against the key the account holds and encoded). 400 naming the field otherwise.
 */
export const deviceSignature = (
  net: ChainNetwork,
  account: Account,
  digest: Hash,
  input: { readonly signature?: string | undefined; readonly webauthn?: WebAuthnAssertion | undefined }
) =>
  Effect.gen(function*() {
    if ((input.signature === undefined) === (input.webauthn === undefined)) {
      return yield* new BadRequest({ message: "Give exactly one of `signature` (an EOA device) or `webauthn` (a passkey)", details: { field: "signature" } })
    }
    if (input.signature !== undefined) {
      const signature = input.signature as Hex
      const signer = signature.length === 132
        ? yield* Effect.tryPromise(() => recoverAddress({ hash: digest, signature })).pipe(Effect.orElseSucceed(() => undefined))
        : undefined
      const { owner } = yield* currentOwner(net, account)
      if (signer === undefined || owner === null || lower(signer) !== owner) {
        return yield* new BadRequest({
          message: "The signature is not the account's owner key's (an EOA device signs the typed data; a passkey sends `webauthn`)",
          details: { field: "signature" }
        })
      }
      return signature
    }
    const webauthn = input.webauthn!
    const key = yield* readPasskey(net.chain.client, account.address as Address, webauthn.keyId).pipe(Effect.mapError(chainDown(net)))
    if (key === undefined) {
      return yield* new BadRequest({ message: `The account holds no passkey with key id ${webauthn.keyId}`, details: { field: "webauthn.keyId" } })
    }
    const assertion = { authenticatorData: webauthn.authenticatorData as Hex, clientDataJSON: webauthn.clientDataJSON, signature: webauthn.signature as Hex }
    const encoded = encodePasskeySignature(webauthn.keyId, digest, assertion)
    if (encoded._tag === "Invalid") {
      return yield* new BadRequest({ message: `webauthn.${encoded.field}: ${encoded.message}`, details: { field: `webauthn.${encoded.field}` } })
    }
    if (!verifyPasskeyAssertion(key, assertion)) {
      return yield* new BadRequest({ message: "The passkey's signature does not verify against the key the account holds", details: { field: "webauthn.signature" } })
    }
    return encoded.value
  })
