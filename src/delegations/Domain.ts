import { Schema } from "effect"
import { Simulation, TokenAmount, TokenRef, UnsignedUserOp, userOpBuildExtraFields } from "../domain/Operations.ts"
import { Address, ChainId, DecimalString, Hash32, HexString, Selector, Timestamp, Id, Text, TextOfLength } from "../domain/Primitives.ts"

export const DelegationStatus = Schema.Literals(["active", "frozen", "expired", "revoked"]).annotate({
  identifier: "DelegationStatus"
})
export type DelegationStatus = typeof DelegationStatus.Type

export const RecipientEntry = Schema.Struct({ name: Text, address: Address, chainId: ChainId })
export const AllowedAction = Schema.Struct({
  name: Text,
  target: Address,
  selectors: Schema.Array(Selector)
})

/** A budget's renewal (beyond the contract): the allowance is `amount` per period, from `start`. */
export const BudgetPeriod = Schema.Struct({
  /** `month` is 30 days (the chain's periods have a fixed length). */
  every: Schema.Literals(["day", "week", "month", "seconds"]),
  seconds: Schema.Int,
  start: Timestamp
}).annotate({ identifier: "BudgetPeriod" })
export type BudgetPeriod = typeof BudgetPeriod.Type

/**
 * A token stream (beyond the contract), as ERC20StreamingEnforcer / NativeTokenStreamingEnforcer
 * hold it: nothing before `start`; from `start`, `initial` at once, then `perSecond` accrues;
 * what has accrued never exceeds the budget's `amount` (the stream's maximum). Amounts in token units.
 */
export const BudgetStream = Schema.Struct({
  perSecond: Schema.Finite,
  initial: Schema.Finite,
  start: Timestamp
}).annotate({ identifier: "BudgetStream" })
export type BudgetStream = typeof BudgetStream.Type

/**
 * A budget: the total for the grant's life, (with `period`) an allowance that renews, or (with
 * `stream`) an amount that accrues per second up to `amount`. At most one of `period` / `stream`.
 */
export const Budget = Schema.Struct({
  ...TokenAmount.fields,
  period: Schema.optionalKey(BudgetPeriod),
  stream: Schema.optionalKey(BudgetStream)
}).annotate({ identifier: "Budget" })

/**
 * Who may redeem the grant (beyond the contract), held by RedeemerEnforcer on the grant itself, so
 * it binds every chain of delegations below it: `delegate` (only the delegate), `named` (the
 * delegate and `addresses`, e.g. a payment facilitator it passes the grant to), or `redelegation`
 * (no redeemer caveat: anyone the delegate passes the grant to, within its limits). `addresses`
 * lists the redeemers besides the delegate (empty unless `named`).
 */
export const Redeemers = Schema.Struct({
  mode: Schema.Literals(["delegate", "named", "redelegation"]),
  addresses: Schema.Array(Address)
}).annotate({ identifier: "Redeemers" })
export type Redeemers = typeof Redeemers.Type

/**
 * An approval rule (beyond the contract; issue 25), held on chain by ApprovalEnforcer: a transfer
 * above its token's threshold, or of a budget token with no threshold, needs the EIP-712
 * approvals of `required` distinct `approvers` (addresses: a key, or a deployed smart account
 * signing through ERC-1271). docs/approvals.md.
 */
export const ApprovalRuleWire = Schema.Struct({
  required: Schema.Int,
  approvers: Schema.Array(Address),
  /**
   * The most that moves without approvals per token (token units; 0: every transfer needs them): in one
   * transfer, or with `period`, in all of a period's transfers together (issue 44).
   */
  thresholds: Schema.Array(Schema.Struct({ token: TokenRef, amount: Schema.Finite })),
  /** Per period: the thresholds count every transfer of a period made without approvals (absent: per transfer). */
  period: Schema.optionalKey(BudgetPeriod),
  /** Per period, counted per recipient: splitting across recipients is not held back, one recipient is. */
  perRecipient: Schema.optionalKey(Schema.Boolean)
}).annotate({ identifier: "ApprovalRule" })
export type ApprovalRuleWire = typeof ApprovalRuleWire.Type

/**
 * A grant whose only power is revoking approvals the account gave (ERC-7715 `erc20-token-revocation`,
 * `token-approval-revocation`; issue 24, helper "h24"): the primitives the Delegation Framework's
 * ApprovalRevocationEnforcer lets the delegate call (each only to set an approval back to none).
 * Such a policy has no budget (`budgets` empty, `perActionMax` 0 ETH): it moves nothing.
 */
export const RevocationMethods = Schema.Struct({
  erc20Approve: Schema.Boolean,
  erc721Approve: Schema.Boolean,
  erc721SetApprovalForAll: Schema.Boolean,
  permit2Approve: Schema.Boolean,
  permit2Lockdown: Schema.Boolean,
  permit2InvalidateNonces: Schema.Boolean
}).annotate({ identifier: "RevocationMethods" })
export type RevocationMethods = typeof RevocationMethods.Type

/**
 * A basket budget (beyond the contract; issue 44), held on chain by BasketPeriodEnforcer: every
 * budget token counts at 1:1 in `unit` against one allowance `amount` per period (the budgets'
 * common period; none: the grant's whole life). docs/delegations.md, "Basket budgets".
 */
export const BasketBudget = Schema.Struct({
  unit: Schema.Literal("USD"),
  amount: Schema.Finite,
  tokens: Schema.Array(TokenRef),
  period: Schema.optionalKey(BudgetPeriod),
  /**
   * The grant's only budget caveat (ERC-7715 `erc20-basket-periodic`): each token's budget is the
   * basket's amount and no MultiTokenPeriodEnforcer holds them (the basket does), so a permission
   * context redeems any basket token without args. Absent: the budgets have their own caveat too.
   */
  only: Schema.optionalKey(Schema.Literal(true))
}).annotate({ identifier: "BasketBudget" })
export type BasketBudget = typeof BasketBudget.Type

export const PolicySet = Schema.Struct({
  budgets: Schema.Array(Budget),
  perActionMax: TokenAmount,
  maxActions: Schema.Int,
  recipientAllowlist: Schema.Array(RecipientEntry),
  allowedActions: Schema.Array(AllowedAction),
  expiresAt: Timestamp,
  /** Beyond the contract: redeemable only from this instant (TimestampEnforcer's lower bound; an AP2 mandate's window, docs/ap2.md). */
  notBefore: Schema.optionalKey(Timestamp),
  freezeGated: Schema.Boolean,
  /** Every build sets it (default `delegate`); absent on grants built before it existed (no redeemer caveat). */
  redeemers: Schema.optionalKey(Redeemers),
  /** Beyond the contract: approvals above a threshold (absent: the grant acts alone up to its limits). */
  approval: Schema.optionalKey(ApprovalRuleWire),
  /** A revocation-only grant (no budget): the approval-revocation primitives it may call. */
  revocation: Schema.optionalKey(RevocationMethods),
  /** Beyond the contract: one allowance across every budget token, counted 1:1 in USD. */
  basket: Schema.optionalKey(BasketBudget)
}).annotate({ identifier: "PolicySet" })
export type PolicySet = typeof PolicySet.Type

/**
 * The mandate a grant was built from (beyond the contract; docs/ap2.md): an AP2 open Payment
 * Mandate, named by the sha-256 of its RFC 8785 (JCS) canonical form. Absent on other grants.
 */
export const GrantMandate = Schema.Struct({
  standard: Schema.Literal("ap2"),
  /** The mandate's `vct` (`mandate.payment.open.1`). */
  vct: Schema.String,
  hash: Hash32,
  hashAlgorithm: Schema.Literal("sha-256"),
  canonicalization: Schema.Literal("RFC 8785")
}).annotate({ identifier: "GrantMandate" })
export type GrantMandate = typeof GrantMandate.Type

export const SpentEntry = Schema.Struct({
  token: TokenRef,
  /** The budget, or the current period's allowance. */
  limit: Schema.Finite,
  /** Executed (for a period budget: in the current period), the larger of the service's record and the chain's. */
  spent: Schema.Finite,
  /** What can still be spent: never above what the chain still allows, less open reservations. */
  remaining: Schema.Finite,
  expiresAt: Timestamp,
  /** Beyond the contract: held by action builds not yet executed or released. */
  reserved: Schema.optionalKey(Schema.Finite),
  /** Beyond the contract, period budgets: when the current period started and when it resets. */
  periodStart: Schema.optionalKey(Timestamp),
  resetsAt: Schema.optionalKey(Timestamp),
  /** Beyond the contract, stream budgets: what has accrued so far (spent or not, at most `limit`). */
  unlocked: Schema.optionalKey(Schema.Finite)
}).annotate({ identifier: "SpentEntry" })

/**
 * Beyond the contract: a basket budget's use (docs/delegations.md, "Basket budgets"), in USD:
 * spent = the larger of the service's record (each basket token counted 1:1) and
 * BasketPeriodEnforcer's own; remaining never below 0, less open reservations.
 */
export const BasketSpent = Schema.Struct({
  unit: Schema.Literal("USD"),
  limit: Schema.Finite,
  spent: Schema.Finite,
  remaining: Schema.Finite,
  reserved: Schema.Finite,
  periodStart: Schema.optionalKey(Timestamp),
  resetsAt: Schema.optionalKey(Timestamp)
}).annotate({ identifier: "BasketSpent" })
export type BasketSpent = typeof BasketSpent.Type

export const Delegation = Schema.Struct({
  id: Schema.String,
  permissionId: Hash32,
  name: Schema.String,
  kind: Schema.String,
  icon: Schema.String,
  delegateeAddress: Address,
  /** Beyond the contract: the granting account (the delegator), which pays; an agent paying an x402 checks it. */
  delegatorAddress: Schema.optionalKey(Address),
  chain: Schema.String,
  chainId: ChainId,
  status: DelegationStatus,
  humanSummary: Schema.String,
  policySet: PolicySet,
  spentToDate: Schema.Array(SpentEntry),
  /** Beyond the contract: with a basket budget, its use across its tokens. */
  basketToDate: Schema.optionalKey(BasketSpent),
  /** Beyond the contract: the mandate the grant was built from (docs/ap2.md). */
  mandate: Schema.optionalKey(GrantMandate)
}).annotate({ identifier: "Delegation" })
export type Delegation = typeof Delegation.Type

export const PolicySnapshot = Schema.Struct({
  id: Schema.String,
  delegationId: Schema.String,
  permissionId: Hash32,
  policySet: PolicySet,
  humanSummary: Schema.String,
  capturedAt: Timestamp,
  enableTxHash: Hash32
}).annotate({ identifier: "PolicySnapshot" })
export type PolicySnapshotType = typeof PolicySnapshot.Type

const PositiveAmount = Schema.Finite.check(Schema.isGreaterThan(0))

export const DelegationBuildRequest = Schema.Struct({
  name: TextOfLength(1, 80),
  kind: TextOfLength(1, 40),
  delegateeAddress: Address,
  chainId: ChainId,
  budgets: Schema.Array(Schema.Struct({
    token: Schema.Struct({ symbol: TextOfLength(1, 64) }),
    amount: PositiveAmount,
    /** Beyond the contract: the allowance renews every `every` (day, week, 30-day month) or `seconds`, from `start` (default: now). */
    period: Schema.optionalKey(Schema.Struct({
      every: Schema.optionalKey(Schema.Literals(["day", "week", "month"])),
      seconds: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThan(0))),
      start: Schema.optionalKey(Timestamp)
    })),
    /** Beyond the contract: a stream; `amount` is then its maximum (docs/delegations.md, "Streams"). */
    stream: Schema.optionalKey(Schema.Struct({
      perSecond: PositiveAmount,
      initial: Schema.optionalKey(Schema.Finite.check(Schema.isGreaterThanOrEqualTo(0))),
      start: Schema.optionalKey(Timestamp)
    }))
  })).check(
    Schema.isMinLength(1)
  ),
  // Optional on input; the contract does not show them (defaults: docs/decisions.md).
  perActionMax: Schema.optionalKey(Schema.Struct({ token: Schema.Struct({ symbol: TextOfLength(1, 64) }), amount: PositiveAmount })),
  maxActions: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 1_000_000 }))),
  recipientAllowlist: Schema.optionalKey(Schema.Array(RecipientEntry)),
  allowedActions: Schema.optionalKey(Schema.Array(AllowedAction)),
  expiresAt: Schema.optionalKey(Timestamp),
  accountId: Schema.optionalKey(Id),
  /** Beyond the contract: who may redeem (default `{ mode: "delegate" }`; docs/delegations.md, "Redeemers"). */
  redeemers: Schema.optionalKey(Schema.Struct({
    mode: Schema.Literals(["delegate", "named", "redelegation"]),
    addresses: Schema.optionalKey(Schema.Array(Address))
  })),
  /**
   * Beyond the contract: approvals above a threshold, held on chain (docs/approvals.md). `required`
   * of `approvers` must sign a transfer above its token's threshold (or of a budget token without one).
   */
  approval: Schema.optionalKey(Schema.Struct({
    required: Schema.Int,
    approvers: Schema.Array(Address).check(Schema.isMaxLength(64)),
    thresholds: Schema.optionalKey(Schema.Array(Schema.Struct({
      token: Schema.Struct({ symbol: TextOfLength(1, 64) }),
      amount: Schema.Finite.check(Schema.isGreaterThanOrEqualTo(0))
    })).check(Schema.isMaxLength(64))),
    /**
     * Issue 44: the thresholds hold per period, not per transfer: what moves without approvals in each
     * period (`every` day, week, 30-day month, or `seconds`, from `start`, default now) counts together,
     * so splitting a transfer cannot escape them. Absent: per transfer.
     */
    period: Schema.optionalKey(Schema.Struct({
      every: Schema.optionalKey(Schema.Literals(["day", "week", "month"])),
      seconds: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThan(0))),
      start: Schema.optionalKey(Timestamp)
    })),
    /** With `period`: counted per recipient (each recipient has the threshold per period); default false: per token. */
    perRecipient: Schema.optionalKey(Schema.Boolean)
  })),
  /**
   * Beyond the contract: one budget across every budget token (USD stablecoins), each counted at
   * 1:1 in `unit` after its decimals, held on chain (docs/delegations.md, "Basket budgets"): `amount`
   * per period of the budgets' common period, or in total. The per-token budgets stay as caps of their own.
   * With `tokens` (and `budgets` empty) the basket is the grant's only budget: each token's budget is the
   * basket's amount and renews with the basket's own `period` (the ERC-7715 `erc20-basket-periodic` grant).
   */
  basket: Schema.optionalKey(Schema.Struct({
    amount: PositiveAmount,
    unit: Schema.optionalKey(Schema.Literal("USD")),
    tokens: Schema.optionalKey(Schema.Array(Schema.Struct({ symbol: TextOfLength(1, 64) }))),
    period: Schema.optionalKey(Schema.Struct({
      every: Schema.optionalKey(Schema.Literals(["day", "week", "month"])),
      seconds: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThan(0))),
      start: Schema.optionalKey(Timestamp)
    }))
  }))
}).annotate({ identifier: "DelegationBuildRequest" })

/** A Delegation Framework caveat as the DelegationManager takes it. */
export const DfCaveat = Schema.Struct({ enforcer: Address, terms: HexString, args: HexString })

/** One Delegation Framework delegation (one per grant, every limit a caveat: Grant.ts), unsigned while `signature` is `0x`. */
export const DfDelegation = Schema.Struct({
  delegate: Address,
  delegator: Address,
  authority: Hash32,
  caveats: Schema.Array(DfCaveat),
  salt: HexString,
  signature: HexString
}).annotate({ identifier: "DfDelegation" })

const TypedDataField = Schema.Struct({ name: Schema.String, type: Schema.String })

/** EIP-712 typed data of a delegation, for `eth_signTypedData_v4` (salt as a decimal uint256). */
export const DelegationTypedData = Schema.Struct({
  domain: Schema.Struct({ name: Schema.String, version: Schema.String, chainId: ChainId, verifyingContract: Address }),
  types: Schema.Record(Schema.String, Schema.Array(TypedDataField)),
  primaryType: Schema.Literal("Delegation"),
  message: Schema.Struct({
    delegate: Address,
    delegator: Address,
    authority: Hash32,
    caveats: Schema.Array(Schema.Struct({ enforcer: Address, terms: HexString })),
    salt: DecimalString
  })
}).annotate({ identifier: "DelegationTypedData" })

/** What the owner signs besides the enable operation: one delegation for the whole grant. */
export const DelegationToSign = Schema.Struct({
  permissionId: Hash32,
  /** The first budget token (the delegation covers every one: `tokens`). */
  token: TokenRef,
  /** Beyond the contract: every budget token the delegation covers, in the terms' order. */
  tokens: Schema.optionalKey(Schema.Array(TokenRef)),
  delegation: DfDelegation,
  typedData: DelegationTypedData
}).annotate({ identifier: "DelegationToSign" })

export const DelegationBuild = Schema.Struct({
  policySet: PolicySet,
  humanSummary: Schema.String,
  enableUserOp: UnsignedUserOp,
  userOpHash: Hash32,
  simulation: Simulation,
  /** Beyond the contract, as on every build: buildId, the EIP-712 typed data of the enable operation, expiry. */
  ...userOpBuildExtraFields,
  /** Beyond the contract: the delegation(s) the owner signs (EIP-712) and returns to `POST /delegations`. */
  delegations: Schema.Array(DelegationToSign)
}).annotate({ identifier: "DelegationBuild" })

/** The owner's signature of the delegation (`delegations[i].typedData` of the build), by permission id. */
export const DelegationSignature = Schema.Struct({ permissionId: Hash32, signature: HexString }).annotate({
  identifier: "DelegationSignature"
})

/**
 * One redemption of a grant as the chain showed it (beyond the contract; the chain follower records
 * it: docs/follower.md): the permission context leaf first, who redeemed it, what moved.
 */
export const RedemptionRecord = Schema.Struct({
  /** The grant (absent for a grant this service did not build). */
  delegationId: Schema.optionalKey(Schema.String),
  /** The grant's permission id: the root of the chain. */
  permissionId: Hash32,
  txHash: Hash32,
  blockNumber: DecimalString,
  /** `msg.sender` of `DelegationManager.redeemDelegations`. */
  redeemer: Address,
  via: Schema.Literals(["transaction", "user_operation", "account_execute", "unknown"]),
  chain: Schema.Array(Schema.Struct({ permissionId: Hash32, delegator: Address, delegate: Address })),
  moved: Schema.Array(Schema.Struct({
    token: Address,
    symbol: Schema.optionalKey(Schema.String),
    amount: Schema.optionalKey(Schema.Finite),
    /** Base units, exact. */
    units: DecimalString,
    recipient: Address
  })),
  /** The entries recording it: on the owner's log, and on the delegate's when someone it passed the grant to redeemed it. */
  ownerEntryId: Schema.optionalKey(Schema.String),
  delegateEntryId: Schema.optionalKey(Schema.String)
}).annotate({ identifier: "RedemptionRecord" })
export type RedemptionRecord = typeof RedemptionRecord.Type
