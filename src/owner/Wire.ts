/**
 * The owner's own account on the wire (docs/account.md, "The HTTP flows"): what
 * `POST /account/rules/build` takes for each intent, what it answers, what `GET /account/rules`
 * and `GET /account/devices` read back from the chain. Beyond the contract, which names these
 * endpoints without shapes (docs/decisions.md).
 */
import { Schema } from "effect"
import {
  GasTokenChoice,
  IntentType,
  userOpBuildExtraFields,
  userOpBuildFields,
  WebAuthnAssertion
} from "../domain/Operations.ts"
import { Address, ChainId, DecimalString, Hash32, HexString, Id, TextOfLength, Timestamp } from "../domain/Primitives.ts"

const EXAMPLE_ADDRESS = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
const EXAMPLE_PASSKEY_ID = "pYQ2xCy4Rp3mJbmwlOj3-Aym7GA"
const EXAMPLE_P256 = "0x04" +
  "6b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296" +
  "4fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5"

/** A passkey's credential id (base64url), the key id the account holds it under. */
export const KeyId = Schema.String.check(
  Schema.isPattern(/^[A-Za-z0-9_-]{1,512}$/, { description: "a base64url credential id (1 to 512 characters)" })
).annotate({ identifier: "PasskeyKeyId" })

export const Label = TextOfLength(1, 64).annotate({ identifier: "DeviceLabel", description: "A name the owner gives (1 to 64 characters, no NUL)" })

/** A token by symbol (`USDC`, `USDT`, `ETH` for the native coin). */
export const TokenSymbol = TextOfLength(1, 16).annotate({ identifier: "TokenSymbol" })

/** Which device will sign; the build's gas covers its verification. Omitted: the account's EOA owner key. */
export const SignWith = Schema.Struct({ keyId: KeyId }).annotate({
  identifier: "SignWith",
  description: "The passkey that will sign this operation (a passkey's verification costs more gas). Omitted: the EOA owner key."
})

const scope = {
  /** One of the signer's accounts; without it, the lowest visible account on `chainId`. */
  accountId: Schema.optionalKey(Id),
  /** The chain (default: the primary chain). */
  chainId: Schema.optionalKey(ChainId),
  signWith: Schema.optionalKey(SignWith)
}

export const FreezeRequest = Schema.Struct({
  intentType: Schema.Literals(["account_freeze", "account_unfreeze"]),
  ...scope
}).annotate({ identifier: "FreezeRequest", examples: [{ intentType: "account_freeze" }] })

export const SendRequest = Schema.Struct({
  intentType: Schema.Literal("send"),
  ...scope,
  /** The recipient (not with `withdrawToSafety`). */
  to: Schema.optionalKey(Address),
  /** `USDC`, `USDT`, ... or `ETH` (not with `withdrawToSafety`). */
  token: Schema.optionalKey(TokenSymbol),
  /** In token units, e.g. 12.5 (not with `withdrawToSafety`). */
  amount: Schema.optionalKey(Schema.Finite.check(Schema.isGreaterThan(0))),
  /** Move everything (or `tokens`) to the safe address registered on chain: risk-reducing, sponsored, allowed while frozen. */
  withdrawToSafety: Schema.optionalKey(Schema.Boolean),
  /** With `withdrawToSafety`: only these (symbols; `ETH` for the native coin). Default: every token held and ETH. */
  tokens: Schema.optionalKey(Schema.Array(TokenSymbol).check(Schema.isMinLength(1), Schema.isMaxLength(20))),
  /**
   * With `withdrawToSafety` (default true): the same operation also freezes the account (disables every live
   * grant, as `account_freeze`), so nothing can follow the funds out; false when the account is already frozen.
   */
  freeze: Schema.optionalKey(Schema.Boolean),
  /** Pay gas in a stablecoin instead of being sponsored (ignored, with a warning, for a withdraw to safety). */
  gasToken: Schema.optionalKey(GasTokenChoice)
}).annotate({
  identifier: "SendRequest",
  examples: [
    { intentType: "send", to: EXAMPLE_ADDRESS, token: "USDC", amount: 12.5 },
    { intentType: "send", withdrawToSafety: true }
  ]
})

export const RulesChange = Schema.Union([
  /** Where withdraw-to-safety sends (held by the Recovery contract); `null` clears it. Never the account itself. */
  Schema.Struct({ kind: Schema.Literal("safe_address"), address: Schema.NullOr(Address) }),
  /** How long a started recovery waits for the owner's cancel (1 hour to 30 days). */
  Schema.Struct({ kind: Schema.Literal("recovery_delay"), delaySeconds: Schema.Int }),
  /** Stops a started recovery and voids the approvals gathered (risk-reducing). */
  Schema.Struct({ kind: Schema.Literal("recovery_cancel") }),
  /** Removes an installed panic key: the account disables its panic delegation on chain (the key can no longer freeze). */
  Schema.Struct({ kind: Schema.Literal("panic_key_remove"), delegationHash: Hash32 })
]).annotate({ identifier: "RulesChange" })

export const RulesUpdateRequest = Schema.Struct({
  intentType: Schema.Literal("rules_update"),
  ...scope,
  change: RulesChange
}).annotate({
  identifier: "RulesUpdateRequest",
  examples: [
    { intentType: "rules_update", change: { kind: "safe_address", address: EXAMPLE_ADDRESS } },
    { intentType: "rules_update", change: { kind: "recovery_cancel" } }
  ]
})

export const NewDevice = Schema.Union([
  /** A WebAuthn passkey: its credential id and P-256 public key (SEC1 `0x04‖x‖y` or the SPKI DER of `getPublicKey()`). */
  Schema.Struct({ kind: Schema.Literal("passkey"), keyId: KeyId, publicKey: HexString, label: Label }),
  /** An EOA: replaces the account's one EOA owner key (HybridDeleGator holds one). */
  Schema.Struct({ kind: Schema.Literal("eoa"), address: Address, label: Label })
]).annotate({ identifier: "NewDevice" })

export const DeviceAddRequest = Schema.Struct({
  intentType: Schema.Literal("device_add"),
  ...scope,
  device: NewDevice
}).annotate({
  identifier: "DeviceAddRequest",
  examples: [{
    intentType: "device_add",
    device: { kind: "passkey", keyId: EXAMPLE_PASSKEY_ID, publicKey: EXAMPLE_P256, label: "Alice's phone" }
  }]
})

export const DeviceRemoveRequest = Schema.Struct({
  intentType: Schema.Literal("device_remove"),
  ...scope,
  device: Schema.Union([
    Schema.Struct({ kind: Schema.Literal("passkey"), keyId: KeyId }),
    /** The EOA owner key (the account keeps its passkeys). */
    Schema.Struct({ kind: Schema.Literal("eoa") })
  ])
}).annotate({
  identifier: "DeviceRemoveRequest",
  examples: [{ intentType: "device_remove", device: { kind: "passkey", keyId: EXAMPLE_PASSKEY_ID } }]
})

export const GuardianAddRequest = Schema.Struct({
  intentType: Schema.Literal("guardian_add"),
  ...scope,
  guardians: Schema.Array(Schema.Struct({ address: Address, label: Schema.optionalKey(Label) })).check(
    Schema.isMinLength(1),
    Schema.isMaxLength(16)
  ),
  /** How many guardians must approve a recovery, counted over every guardian after this change (1..n). */
  threshold: Schema.Int,
  /** Set the recovery delay too (1 hour to 30 days; 2 days until set). */
  delaySeconds: Schema.optionalKey(Schema.Int)
}).annotate({
  identifier: "GuardianAddRequest",
  examples: [{ intentType: "guardian_add", guardians: [{ address: EXAMPLE_ADDRESS, label: "Carol" }], threshold: 1, delaySeconds: 172800 }]
})

export const GuardianRemoveRequest = Schema.Struct({
  intentType: Schema.Literal("guardian_remove"),
  ...scope,
  guardians: Schema.Array(Address).check(Schema.isMinLength(1), Schema.isMaxLength(16)),
  /** The threshold over the guardians left (0 when none is left). */
  threshold: Schema.Int
}).annotate({
  identifier: "GuardianRemoveRequest",
  examples: [{ intentType: "guardian_remove", guardians: [EXAMPLE_ADDRESS], threshold: 0 }]
})

/** Installs a signed panic delegation (`POST /account/rules/delegations/build` with `kind: "panic"`, then `.../sign`). */
export const PanicInstallRequest = Schema.Struct({
  intentType: Schema.Literal("panic_install"),
  ...scope,
  delegationHash: Hash32,
  /** An installed panic key this one replaces (rotation): the same operation disables its delegation on chain. */
  replaces: Schema.optionalKey(Hash32)
}).annotate({
  identifier: "PanicInstallRequest",
  examples: [{ intentType: "panic_install", delegationHash: "0x3c9b1e5b4f0ad8a2d5f0b3b3b0a7a7f2c2dfd4e0f6b5c7d1a1e2f3a4b5c6d7e8" }]
})

/** Deploys the account (its factory call) without another operation: a zero-value call of the account to itself. */
export const AccountDeployRequest = Schema.Struct({
  intentType: Schema.Literal("account_deploy"),
  ...scope
}).annotate({ identifier: "AccountDeployRequest", examples: [{ intentType: "account_deploy" }] })

/**
 * Answered with a 400 and the reason (docs/account.md): `device_threshold` (a HybridDeleGator accepts
 * any one of its signers), `swap` (not offered by this service, docs/decisions.md), `account_fund` (not an
 * operation the account signs: `GET /account/fund`), `panic_freeze` (the panic key's own: `POST /panic/freeze/build`).
 */
export const DeviceThresholdRequest = Schema.Struct({
  intentType: Schema.Literals(["device_threshold", "swap", "account_fund", "panic_freeze"]),
  ...scope,
  threshold: Schema.optionalKey(Schema.Int)
}).annotate({ identifier: "DeviceThresholdRequest" })

export const OwnerBuildRequest = Schema.Union([
  FreezeRequest,
  SendRequest,
  RulesUpdateRequest,
  DeviceAddRequest,
  DeviceRemoveRequest,
  GuardianAddRequest,
  GuardianRemoveRequest,
  PanicInstallRequest,
  AccountDeployRequest,
  DeviceThresholdRequest
]).annotate({ identifier: "AccountRulesBuildRequest" })
export type OwnerBuildRequest = typeof OwnerBuildRequest.Type

// ---- the account's own delegation to the Recovery contract ----

export const AccountDelegation = Schema.Struct({
  delegate: Address,
  delegator: Address,
  authority: Hash32,
  caveats: Schema.Array(Schema.Struct({ enforcer: Address, terms: HexString, args: HexString })),
  salt: HexString,
  signature: HexString
}).annotate({ identifier: "AccountDelegation", description: "A Delegation Framework delegation (what the DelegationManager redeems)" })

export const AccountDelegationTypedData = Schema.Struct({
  domain: Schema.Struct({ name: Schema.String, version: Schema.String, chainId: ChainId, verifyingContract: Address }),
  types: Schema.Record(Schema.String, Schema.Array(Schema.Struct({ name: Schema.String, type: Schema.String }))),
  primaryType: Schema.Literal("Delegation"),
  message: Schema.Struct({
    delegate: Address,
    delegator: Address,
    authority: Hash32,
    caveats: Schema.Array(Schema.Struct({ enforcer: Address, terms: HexString })),
    salt: DecimalString
  })
}).annotate({ identifier: "AccountDelegationTypedData" })

/** The account's delegation to the Recovery contract, for a device to sign (`POST /account/rules/delegations/build`). */
export const DelegationToSign = Schema.Struct({
  delegationHash: Hash32,
  kind: Schema.Literals(["recovery", "panic"]),
  delegation: AccountDelegation,
  /** For an EOA device: `eth_signTypedData_v4`. */
  typedData: AccountDelegationTypedData,
  /** The EIP-712 digest; a passkey asserts over it (`webauthnChallenge`). */
  signingDigest: Hash32,
  webauthnChallenge: Schema.String,
  /** Why it is to be signed. */
  reason: Schema.String
}).annotate({ identifier: "DelegationToSign" })

export const OwnerBuild = Schema.Struct({
  ...userOpBuildFields,
  ...userOpBuildExtraFields,
  accountId: Schema.String,
  chainId: ChainId,
  /** The operation's EIP-712 digest (of `typedData`): what a passkey's assertion signs. */
  signingDigest: Hash32,
  /** `base64url(signingDigest)`: the WebAuthn `challenge` a passkey must assert over. */
  webauthnChallenge: Schema.String,
  /** The device the gas was estimated for. */
  signWith: Schema.Struct({ kind: Schema.Literals(["eoa", "passkey"]), keyId: Schema.optionalKey(Schema.String) })
}).annotate({ identifier: "AccountOperationBuild" })
export type OwnerBuild = typeof OwnerBuild.Type

export const DelegationBuildRequest = Schema.Struct({
  accountId: Schema.optionalKey(Id),
  chainId: Schema.optionalKey(ChainId),
  /** `recovery` (default): the account's delegation to the Recovery contract; `panic`: a panic key's. */
  kind: Schema.optionalKey(Schema.Literals(["recovery", "panic"])),
  /** With `kind: "panic"`: the trusted contact's or cold key's address (it signs in with it; its own account redeems). */
  panicKey: Schema.optionalKey(Address),
  /** With `kind: "panic"`: a name for it. */
  label: Schema.optionalKey(Label)
}).annotate({
  identifier: "DelegationBuildRequest",
  examples: [{ chainId: 31337 }, { kind: "panic", panicKey: EXAMPLE_ADDRESS, label: "Bob (brother)" }]
})

export const SignDelegationRequest = Schema.Struct({
  delegationHash: Hash32,
  /** An EOA device's signature of the delegation's typed data. */
  signature: Schema.optionalKey(HexString),
  /** Or a passkey's assertion over its `signingDigest`. */
  webauthn: Schema.optionalKey(WebAuthnAssertion)
}).annotate({
  identifier: "SignDelegationRequest",
  examples: [{
    delegationHash: "0x3c9b1e5b4f0ad8a2d5f0b3b3b0a7a7f2c2dfd4e0f6b5c7d1a1e2f3a4b5c6d7e8",
    signature:
      "0x5f1c3a7b9e2d4c6a8b0e1f3a5c7e9b1d3f5a7c9e1b3d5f7a9c1e3b5d7f9a1c3e51c3a7b9e2d4c6a8b0e1f3a5c7e9b1d3f5a7c9e1b3d5f7a9c1e3b5d7f9a1c3e1b"
  }]
})

// ---- read back from the chain ----

export const Device = Schema.Struct({
  /** The EOA's address, or a passkey's key id hash (what the account stores). */
  id: Schema.String,
  kind: Schema.Literals(["eoa", "passkey"]),
  /** The EOA owner key's address (for a passkey: absent). */
  address: Schema.optionalKey(Address),
  /** A passkey's credential id (base64url). */
  keyId: Schema.optionalKey(Schema.String),
  /** A passkey's public key, SEC1 uncompressed. */
  publicKey: Schema.optionalKey(HexString),
  label: Schema.String,
  role: Schema.Literal("owner"),
  /** When the chain put it on the account (block time); an undeployed account's owner key: when the account was made. */
  addedAt: Timestamp,
  /** The transaction that put it on the account. */
  transactionHash: Schema.optionalKey(Hash32)
}).annotate({ identifier: "Device" })
export type Device = typeof Device.Type

export const RecoveryDelegation = Schema.Struct({
  delegationHash: Hash32,
  /** The Recovery contract: the only delegate, and its caveats allow only `updateSigners` on the account. */
  delegate: Address,
  /** Its guardians were installed with it (the operation executed). */
  installedAt: Schema.NullOr(Timestamp),
  /** Read from the chain: the DelegationManager has not disabled it. */
  enabledOnChain: Schema.Boolean,
  /** Read from the chain: the account accepts its signature now (false: a device that signed it is gone; sign it again). */
  signatureValid: Schema.Boolean,
  /** The signed delegation, for safekeeping: executing a recovery needs it (it can do nothing but what guardians approved). */
  delegation: AccountDelegation
}).annotate({ identifier: "RecoveryDelegation" })

export const RecoverySettings = Schema.Struct({
  contract: Address,
  guardians: Schema.Array(Schema.Struct({ address: Address, label: Schema.NullOr(Schema.String) })),
  threshold: Schema.Int,
  delaySeconds: Schema.Int,
  nonce: DecimalString,
  started: Schema.NullOr(Schema.Struct({ recoveryId: Hash32, executeAfter: Timestamp, approvals: Schema.Int })),
  delegation: Schema.NullOr(RecoveryDelegation)
}).annotate({ identifier: "RecoverySettings" })

/** A panic key as its owner sees it (`GET /account/rules`), read from the chain where it is held. */
export const PanicKey = Schema.Struct({
  delegationHash: Hash32,
  /** The trusted contact's or cold key's address (its sign-in). */
  panicKey: Address,
  /** Its own account on this chain: the delegate, and the sender of its freeze. */
  delegate: Address,
  label: Schema.String,
  /** Signed by a device (the install can be built). */
  signed: Schema.Boolean,
  /** Its `panic_install` executed. */
  installedAt: Schema.NullOr(Timestamp),
  /** Read from the chain: not disabled by the DelegationManager. */
  enabledOnChain: Schema.Boolean,
  /** Read from the chain: the account accepts its signature now. */
  signatureValid: Schema.Boolean
}).annotate({ identifier: "PanicKey" })

/** What a panic key's own sign-in sees of an account it can freeze (`GET /panic/accounts`): nothing else. */
export const PanicAccount = Schema.Struct({
  delegationHash: Hash32,
  /** The account it can freeze. */
  account: Address,
  chainId: ChainId,
  label: Schema.String,
  frozen: Schema.Boolean,
  /** Read from the chain: the owner has not replaced it (disabled its delegation), and its signature still verifies. */
  usable: Schema.Boolean,
  /** The signed delegation, for safekeeping: with it the panic key's account freezes without this service. */
  delegation: AccountDelegation
}).annotate({ identifier: "PanicAccount" })

export const PanicFreezeRequest = Schema.Struct({
  delegationHash: Hash32,
  signWith: Schema.optionalKey(SignWith)
}).annotate({
  identifier: "PanicFreezeRequest",
  examples: [{ delegationHash: "0x3c9b1e5b4f0ad8a2d5f0b3b3b0a7a7f2c2dfd4e0f6b5c7d1a1e2f3a4b5c6d7e8" }]
})

/** An amount in token units as a string, e.g. `12.5` (at most the token's decimals). */
export const UnitsString = Schema.String.check(
  Schema.isPattern(/^(0|[1-9][0-9]{0,30})(\.[0-9]{1,18})?$/, { description: "a decimal amount in token units, e.g. 12.5" })
).annotate({ identifier: "TokenUnits" })

/** `GET /account/fund`: where and how to fund the account (nothing is signed; `account_fund`). */
export const FundingRequest = Schema.Struct({
  intentType: Schema.Literal("account_fund"),
  accountId: Schema.String,
  address: Address,
  chainId: ChainId,
  chainName: Schema.String,
  deployed: Schema.Boolean,
  /** The token to send (`ETH` for the native coin), with its contract on this chain. */
  token: Schema.Struct({ symbol: Schema.String, address: Schema.NullOr(Address), decimals: Schema.Int }),
  /** As asked, in token units. */
  amount: Schema.NullOr(UnitsString),
  /** An ERC-681 payment request (`ethereum:` URI) a wallet or QR code can take. */
  paymentUri: Schema.String,
  /** What the account holds of this token now, read from the chain (token units). */
  balance: UnitsString,
  /** Plain words: the address, the chain, and that any other chain loses the funds. */
  humanSummary: Schema.String
}).annotate({ identifier: "FundingRequest" })

export const FundQuery = Schema.Struct({
  accountId: Schema.optionalKey(Id),
  chainId: Schema.optionalKey(ChainId),
  /** `USDC`, `USDT`, ... or `ETH` (default `USDC`). */
  token: Schema.optionalKey(TokenSymbol),
  /** Token units, e.g. 25 or 12.5. */
  amount: Schema.optionalKey(UnitsString)
}).annotate({ identifier: "FundQuery" })

export const AccountRules = Schema.Struct({
  accountId: Schema.String,
  address: Address,
  chainId: ChainId,
  frozen: Schema.Boolean,
  /** Whether the account has code on chain. */
  deployed: Schema.Boolean,
  /** Intent types `POST /account/rules/build` builds for this account now. */
  buildableIntents: Schema.Array(IntentType),
  devices: Schema.Array(Device),
  /** Where withdraw-to-safety sends, read from the Recovery contract. */
  safeAddress: Schema.NullOr(Address),
  /** Null when this chain has no Recovery contract. */
  recovery: Schema.NullOr(RecoverySettings),
  /** The account's panic keys, newest first. */
  panicKeys: Schema.optionalKey(Schema.Array(PanicKey))
}).annotate({ identifier: "AccountRules" })
export type AccountRules = typeof AccountRules.Type

// ---- the guardian's own view (docs/account.md, "The guardian lane") ----

/** What a guardian's own sign-in sees of an account it guards (`GET /guardian/accounts`), read from the chain. */
export const GuardianAccount = Schema.Struct({
  /** The account it guards. */
  account: Address,
  chainId: ChainId,
  /** How many guardians must approve the same new owner key, of how many. */
  threshold: Schema.Int,
  guardians: Schema.Int,
  delaySeconds: Schema.Int,
  /** Approvals are given at this nonce; a cancel, an execution or a settings change moves it (and voids them). */
  nonce: DecimalString,
  /** The started recovery, if any. */
  started: Schema.NullOr(Schema.Struct({
    recoveryId: Hash32,
    /** The key the recovery makes the account's owner. */
    newOwner: Schema.NullOr(Address),
    executeAfter: Timestamp,
    approvals: Schema.Int,
    approvedByYou: Schema.Boolean,
    /** The delay has passed (chain time): `POST /guardian/recovery/build` with `action: "execute"` builds it. */
    executable: Schema.Boolean
  }))
}).annotate({ identifier: "GuardianAccount" })

const guardianTarget = {
  /** The account guarded (its address on `chainId`). */
  account: Address,
  /** Without it, the primary chain. */
  chainId: Schema.optionalKey(ChainId)
}

export const GuardianApprovalRequest = Schema.Struct({
  ...guardianTarget,
  /** The key that becomes the account's owner (an EOA: the owner's new key, which each guardian names alike). */
  newOwner: Address
}).annotate({
  identifier: "GuardianApprovalRequest",
  examples: [{ account: EXAMPLE_ADDRESS, chainId: 31337, newOwner: "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC" }]
})

/** The EIP-712 approval a guardian signs with its key (`eth_signTypedData_v4`), then passes to the build. */
export const GuardianApprovalToSign = Schema.Struct({
  recoveryId: Hash32,
  nonce: DecimalString,
  /** Approvals of this same proposal so far, and how many start the recovery. */
  approvals: Schema.Int,
  threshold: Schema.Int,
  typedData: Schema.Struct({
    domain: Schema.Struct({ name: Schema.String, version: Schema.String, chainId: ChainId, verifyingContract: Address }),
    types: Schema.Record(Schema.String, Schema.Array(Schema.Struct({ name: Schema.String, type: Schema.String }))),
    primaryType: Schema.Literal("RecoveryApproval"),
    message: Schema.Struct({
      account: Address,
      nonce: DecimalString,
      owner: Address,
      keyIds: Schema.Array(Schema.String),
      xs: Schema.Array(DecimalString),
      ys: Schema.Array(DecimalString)
    })
  }),
  signingDigest: Hash32,
  humanSummary: Schema.String
}).annotate({ identifier: "GuardianApprovalToSign" })

export const GuardianRecoveryRequest = Schema.Struct({
  ...guardianTarget,
  /** `approve`: record this guardian's signed approval (the one reaching the threshold starts the delay); `execute`: after the delay. */
  action: Schema.Literals(["approve", "execute"]),
  /** With `approve`: the new owner key, as in the approval signed. */
  newOwner: Schema.optionalKey(Address),
  /** With `approve`: the guardian key's signature of `GuardianApprovalToSign.typedData`. */
  approvalSignature: Schema.optionalKey(HexString),
  /** The passkey of the guardian's own account that will sign (omitted: its EOA key). */
  signWith: Schema.optionalKey(SignWith)
}).annotate({
  identifier: "GuardianRecoveryRequest",
  examples: [{ account: EXAMPLE_ADDRESS, chainId: 31337, action: "execute" }]
})
