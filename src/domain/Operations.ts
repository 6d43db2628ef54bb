/**
 * User operations, builds and simulations: the wire shapes shared by every
 * feature that builds or relays an ERC-4337 operation.
 */
import { Schema } from "effect"
import { Address, ChainId, DecimalString, Hash32, HexString, isStorableText, Timestamp } from "./Primitives.ts"

export const IntentType = Schema.Literals([
  "send",
  "swap",
  "delegation_enable",
  "delegation_freeze",
  "delegation_unfreeze",
  "delegation_revoke",
  "account_freeze",
  "account_unfreeze",
  "rules_update",
  "guardian_add",
  "guardian_remove",
  "account_deploy",
  "account_fund",
  "panic_install",
  "panic_freeze",
  "delegated_action",
  "device_add",
  "device_remove",
  "device_threshold",
  "managed_deposit"
]).annotate({ identifier: "IntentType" })
export type IntentType = typeof IntentType.Type

export const TokenRef = Schema.Struct({
  symbol: Schema.String,
  chainId: ChainId,
  /** Present in build and snapshot responses; absent in delegation list and detail responses. */
  address: Schema.optionalKey(Address)
}).annotate({ identifier: "TokenRef" })
export type TokenRef = typeof TokenRef.Type

export const TokenAmount = Schema.Struct({
  token: TokenRef,
  amount: Schema.Finite
}).annotate({ identifier: "TokenAmount" })
export type TokenAmount = typeof TokenAmount.Type

/** An ERC-4337 v0.7 user operation as the contract writes it (signature `0x` while unsigned). */
export const UserOperation = Schema.Struct({
  sender: Address,
  nonce: DecimalString,
  factory: Schema.optionalKey(Address),
  factoryData: Schema.optionalKey(HexString),
  callData: HexString,
  callGasLimit: DecimalString,
  verificationGasLimit: DecimalString,
  preVerificationGas: DecimalString,
  maxFeePerGas: DecimalString,
  maxPriorityFeePerGas: DecimalString,
  paymaster: Schema.optionalKey(Address),
  paymasterVerificationGasLimit: Schema.optionalKey(DecimalString),
  paymasterPostOpGasLimit: Schema.optionalKey(DecimalString),
  paymasterData: Schema.optionalKey(HexString),
  signature: HexString,
  entryPoint: Address,
  chainId: ChainId
}).annotate({ identifier: "UserOperation" })
export type UserOperation = typeof UserOperation.Type

/** The shape the builds return: identical to a user operation, with `signature: "0x"`. */
export const UnsignedUserOp = UserOperation.annotate({ identifier: "UnsignedUserOp" })

export const Simulation = Schema.Struct({
  id: Schema.String,
  intentType: IntentType,
  willSucceed: Schema.Boolean,
  declineReason: Schema.optionalKey(Schema.String),
  amountIn: Schema.optionalKey(TokenAmount),
  amountOut: Schema.optionalKey(TokenAmount),
  rate: Schema.optionalKey(Schema.Finite),
  route: Schema.optionalKey(Schema.String),
  slippageBps: Schema.optionalKey(Schema.Int),
  fees: Schema.Array(TokenAmount),
  gas: Schema.Struct({ method: Schema.String, cost: TokenAmount, sponsored: Schema.Boolean }),
  warnings: Schema.Array(Schema.String),
  expiresAt: Timestamp
}).annotate({ identifier: "Simulation" })
export type Simulation = typeof Simulation.Type

export const GasPermit = Schema.Struct({
  paymaster: Address,
  token: Address,
  tokenName: Schema.String,
  tokenVersion: Schema.String,
  kernelVersion: Schema.String,
  permitAmount: DecimalString,
  permitNonce: DecimalString,
  permitDeadline: Schema.String,
  permitDigest: Hash32,
  signaturePrefix: HexString,
  estimatedFee: Schema.Finite
}).annotate({ identifier: "GasPermit" })

export const UsdtApproval = Schema.Struct({
  token: Address,
  paymaster: Address,
  amount: Schema.String,
  calls: Schema.Array(Schema.Struct({ to: Address, data: HexString, value: Schema.String }))
}).annotate({ identifier: "UsdtApproval" })

export const userOpBuildFields = {
  intentType: IntentType,
  userOp: UnsignedUserOp,
  userOpHash: Hash32,
  humanSummary: Schema.NullOr(Schema.String),
  simulation: Schema.NullOr(Simulation),
  riskReducing: Schema.Boolean,
  instant: Schema.Boolean,
  gasless: Schema.Boolean,
  gasPermit: Schema.NullOr(GasPermit),
  usdtApproval: Schema.NullOr(UsdtApproval)
}

/**
 * EIP-712 typed data in its JSON (`eth_signTypedData_v4`) form: integers as decimal
 * strings, bytes as hex, `EIP712Domain` listed in `types`. What the owner key signs.
 */
export const TypedDataField = Schema.Struct({ name: Schema.String, type: Schema.String })
export const Eip712TypedData = Schema.Struct({
  domain: Schema.Struct({
    name: Schema.String,
    version: Schema.String,
    chainId: ChainId,
    verifyingContract: Address
  }),
  types: Schema.Record(Schema.String, Schema.Array(TypedDataField)),
  primaryType: Schema.String,
  message: Schema.Record(Schema.String, Schema.String)
}).annotate({
  identifier: "Eip712TypedData",
  description: "What the owner key signs for this operation (`eth_signTypedData_v4`); the signature goes into `userOp.signature`."
})
export type Eip712TypedData = typeof Eip712TypedData.Type

/** Added by this service to every build (not in the contract's table; optional so other shapes can reuse the fields). */
export const userOpBuildExtraFields = {
  /** The stored build this operation must match at the relay. */
  buildId: Schema.optionalKey(Schema.String),
  /** The EIP-712 typed data the owner signs (not the raw `userOpHash`; see docs/relay.md). */
  typedData: Schema.optionalKey(Eip712TypedData),
  /** When the build (and its paymaster sponsorship) stops being accepted by the relay. */
  expiresAt: Schema.optionalKey(Timestamp)
}

export const UserOpBuild = Schema.Struct({ ...userOpBuildFields, ...userOpBuildExtraFields }).annotate({
  identifier: "UserOpBuild"
})
export type UserOpBuild = typeof UserOpBuild.Type

/**
 * Beyond the contract: a passkey's WebAuthn assertion over the build's `signingDigest`
 * (`navigator.credentials.get` with `challenge` = the build's `webauthnChallenge`). The relay
 * checks it against the key the account holds on chain and encodes the account's signature.
 */
export const WebAuthnAssertion = Schema.Struct({
  /** The passkey's credential id (base64url), the key id the account holds it under. */
  keyId: Schema.String.check(
    Schema.isPattern(/^[A-Za-z0-9_-]{1,512}$/, { description: "a base64url credential id (1 to 512 characters)" })
  ),
  /** `response.authenticatorData`, hex. */
  authenticatorData: HexString.check(Schema.isMaxLength(2 + 2 * 1024)),
  /** `response.clientDataJSON` decoded as UTF-8 text. */
  clientDataJSON: Schema.String.check(isStorableText, Schema.isBetweenLength(1, 4096)),
  /** `response.signature`: the ASN.1 DER ECDSA signature, hex. */
  signature: HexString.check(Schema.isMaxLength(2 + 2 * 80))
}).annotate({ identifier: "WebAuthnAssertion" })
export type WebAuthnAssertion = typeof WebAuthnAssertion.Type

/** A signed operation as submitted to the relay: the user operation with its signature attached. */
export const SignedUserOp = Schema.Struct({
  ...UserOperation.fields,
  /**
   * Beyond the contract: signed by a passkey. `signature` stays `0x`; the relay verifies the
   * assertion and makes the account's signature from it (docs/account.md, "Signing with a passkey").
   */
  webauthn: Schema.optionalKey(WebAuthnAssertion)
}).annotate({
  identifier: "SignedUserOp",
  description: "The user operation returned by a build, with `signature` populated (an empty `0x` is refused), " +
    "or, signed by a passkey, `signature: \"0x\"` and `webauthn` (the assertion over the build's `signingDigest`)."
})
export type SignedUserOp = typeof SignedUserOp.Type

export const UserOpStatus = Schema.Literals(["submitted", "included", "failed"]).annotate({ identifier: "UserOpStatus" })
export type UserOpStatus = typeof UserOpStatus.Type
/** The client-side four-way classification of a receipt. */
export const UserOpOutcome = Schema.Literals(["mined", "reverted", "rejected", "pending"])
export type UserOpOutcome = typeof UserOpOutcome.Type

/**
 * Beyond the contract: the bundler's refusal of an operation, in fields of its own (the
 * receipt's `reason` says the same in words).
 */
export const BundlerRefusal = Schema.Struct({
  /** The JSON-RPC error code (ERC-7769: -32500 … -32521, or another the bundler sent). */
  rpcCode: Schema.Int,
  /** The EntryPoint's validation code in the message (`AA24`, `AA25`, ...), when there is one. */
  aaCode: Schema.optionalKey(Schema.String),
  /** A name for the code (`invalid_signature`, `rejected_by_paymaster`, ...; `unknown` when none fits). */
  reason: Schema.String,
  /** The bundler's own message. */
  message: Schema.String,
  /** The revert reason carried by the refusal, decoded (an enforcer's string, a custom error by name). */
  revertReason: Schema.optionalKey(Schema.String)
}).annotate({ identifier: "BundlerRefusal" })
export type BundlerRefusal = typeof BundlerRefusal.Type

export const UserOpReceipt = Schema.Struct({
  userOpId: Schema.String,
  userOpHash: Hash32,
  intentType: IntentType,
  chainId: ChainId,
  sender: Address,
  status: UserOpStatus,
  outcome: UserOpOutcome,
  transactionHash: Schema.optionalKey(Hash32),
  blockNumber: Schema.optionalKey(DecimalString),
  reason: Schema.optionalKey(Schema.String),
  /** Beyond the contract: the raw revert data of a reverted operation (`reason` says it in words). */
  revertData: Schema.optionalKey(HexString),
  /** Beyond the contract: the bundler's refusal, when one settled it (`outcome: rejected`). */
  bundlerError: Schema.optionalKey(BundlerRefusal),
  auditEventId: Schema.optionalKey(Schema.String),
  submittedAt: Timestamp,
  settledAt: Schema.optionalKey(Timestamp)
}).annotate({ identifier: "UserOpReceipt" })
export type UserOpReceipt = typeof UserOpReceipt.Type

/** Beyond the contract: pay a build's gas in a stablecoin through the token paymaster (docs/relay.md). */
export const GasTokenChoice = Schema.Literals(["USDC", "USDT"]).annotate({
  identifier: "GasToken",
  description: "Pay gas in this stablecoin instead of being sponsored: USDC by permit (two signatures), USDT by a batched approve."
})
