/**
 * The MCP tools' input and output schemas (zod: what `@modelcontextprotocol/sdk`'s `registerTool`
 * takes; the SDK publishes them as JSON Schema in `tools/list` and checks every call and answer
 * against them). Each output is an object holding either its result under a named key or `error`
 * (a refused call): the SDK's client checks a tool's structured content against its output schema
 * even when the result is an error, so both shapes are in the one schema. docs/mcp.md.
 */
import * as z from "zod/v4"

const id = z.string().min(1).max(128)
const address = z.string().regex(/^0x[0-9a-fA-F]{40}$/, "a 20-byte hex address")
const hex = z.string().regex(/^0x[0-9a-fA-F]*$/, "hex")
const hash = z.string().regex(/^0x[0-9a-fA-F]{64}$/, "a 32-byte hex hash")
const positive = z.number().positive().finite()

/** Why a call was refused: the service's envelope (`declineReason` always set; see `toolError`). */
export const ToolError = z.object({
  /** The envelope's code (`out_of_scope`, `not_found`, `bad_request`, `unauthorized`, ...). */
  code: z.string(),
  message: z.string(),
  /** The grant rule that refused it (`per_action_exceeded`, `cap_exceeded`, ...), else the code. */
  declineReason: z.string(),
  details: z.optional(z.record(z.string(), z.json()))
})
export type ToolError = z.infer<typeof ToolError>

const token = z.object({ symbol: z.string(), chainId: z.number().int() })

/** One budget of a grant, as the agent can spend it now. */
export const BudgetView = z.object({
  token,
  kind: z.enum(["total", "period", "stream"]),
  /** The budget (a period's allowance; a stream's maximum). */
  limit: z.number(),
  spent: z.number(),
  /** Held by actions and payments not yet settled. */
  reserved: z.number(),
  /** What can still be spent now. */
  left: z.number(),
  /** A period budget: the allowance renews at `resetsAt` (unspent does not carry over). */
  renewal: z.optional(z.object({ every: z.string(), seconds: z.number().int(), periodStart: z.optional(z.string()), resetsAt: z.optional(z.string()) })),
  /** A stream budget: what accrues and what has so far. */
  stream: z.optional(z.object({ perSecond: z.number(), initial: z.number(), start: z.string(), unlocked: z.optional(z.number()) }))
})

/** A grant the agent holds, in the signed terms' words. */
export const GrantView = z.object({
  id: z.string(),
  /** The owner's name for it (the owner's text, at most 80 characters). */
  name: z.string(),
  status: z.enum(["active", "frozen", "expired", "revoked"]),
  chain: z.string(),
  chainId: z.number().int(),
  /** The account that pays (the delegator), when the service states it. */
  payer: z.optional(z.string()),
  delegate: z.string(),
  /** The service's plain-language summary of the signed terms. */
  summary: z.string(),
  expiresAt: z.string(),
  perActionMax: z.object({ token, amount: z.number() }),
  maxActions: z.number().int(),
  /** Empty: any recipient. */
  recipients: z.array(z.object({ name: z.string(), address: z.string() })),
  budgets: z.array(BudgetView),
  /** Transfers above a threshold need approvals (docs/approvals.md). */
  approvalRule: z.optional(z.object({ required: z.number().int(), approvers: z.array(z.string()) }))
})
export type GrantView = z.infer<typeof GrantView>

export const Receipt = z.object({
  userOpId: z.string(),
  userOpHash: z.string(),
  status: z.enum(["submitted", "included", "failed"]),
  outcome: z.enum(["mined", "reverted", "rejected", "pending"]),
  transactionHash: z.optional(z.string()),
  blockNumber: z.optional(z.string()),
  reason: z.optional(z.string()),
  auditEventId: z.optional(z.string())
})
export type Receipt = z.infer<typeof Receipt>

/** What the agent signs when the server does not hold its key (`eth_signTypedData_v4` JSON). */
export const TypedData = z.object({
  domain: z.object({ name: z.string(), version: z.string(), chainId: z.number().int(), verifyingContract: z.string() }),
  types: z.record(z.string(), z.array(z.object({ name: z.string(), type: z.string() }))),
  primaryType: z.string(),
  message: z.record(z.string(), z.string())
})

export const UserOp = z.object({
  sender: address,
  nonce: z.string(),
  factory: z.optional(address),
  factoryData: z.optional(hex),
  callData: hex,
  callGasLimit: z.string(),
  verificationGasLimit: z.string(),
  preVerificationGas: z.string(),
  maxFeePerGas: z.string(),
  maxPriorityFeePerGas: z.string(),
  paymaster: z.optional(address),
  paymasterVerificationGasLimit: z.optional(z.string()),
  paymasterPostOpGasLimit: z.optional(z.string()),
  paymasterData: z.optional(hex),
  signature: hex,
  chainId: z.number().int(),
  entryPoint: address
})

export const ActionBuild = z.object({
  userOp: UserOp,
  userOpHash: z.string(),
  typedData: z.optional(TypedData),
  summary: z.optional(z.string()),
  expiresAt: z.optional(z.string())
})

export const ChangeRequestView = z.object({
  id: z.string(),
  status: z.enum(["pending", "accepting", "accepted", "declined", "expired"]),
  grantId: z.string(),
  summary: z.string(),
  reason: z.string(),
  diff: z.array(z.object({ field: z.string(), from: z.string(), to: z.string(), text: z.string() })),
  deadline: z.string(),
  /** Once the owner accepted: the grant that replaces the old one (act on it from then on). */
  newGrantId: z.optional(z.string()),
  decision: z.optional(z.object({ by: z.string(), at: z.string(), reason: z.optional(z.string()) }))
})
export type ChangeRequestView = z.infer<typeof ChangeRequestView>

/** An agent's ask for a new permission as it stands (the owner's permission approval, `POST /permissions/asks`). */
export const PermissionAskView = z.object({
  id: z.string(),
  status: z.enum(["pending", "approving", "granted", "revoked", "rejected", "expired", "failed"]),
  /** The owner's account asked (`from`). */
  payer: z.string(),
  chainId: z.number().int(),
  /** The service's summary of the grant the owner would sign (from its terms; the justification quoted last). */
  summary: z.string(),
  /** The ERC-7715 request as it would be granted (the defaults filled in). */
  asked: z.record(z.string(), z.json()),
  /** Until when the owner can sign it. */
  expiresAt: z.string(),
  /** What the grant would hold differently from the ask (only when adjustment was allowed). */
  adjustments: z.optional(z.array(z.object({ field: z.string(), requested: z.string(), granted: z.string(), reason: z.string() }))),
  /** Once granted: the new grant's id (act under it) and its ERC-7710 permission context. */
  grantId: z.optional(z.string()),
  context: z.optional(z.string()),
  failure: z.optional(z.string())
})
export type PermissionAskView = z.infer<typeof PermissionAskView>

/** An x402 offer as the resource server's `PAYMENT-REQUIRED` `accepts[]` carries it. */
export const X402Offer = z.object({
  scheme: z.string(),
  network: z.string(),
  asset: address,
  amount: z.string().regex(/^\d{1,78}$/, "base units, a decimal string"),
  payTo: address,
  maxTimeoutSeconds: z.number().int(),
  extra: z.object({ assetTransferMethod: z.string(), facilitatorAddress: address })
})
export type X402OfferInput = z.infer<typeof X402Offer>

// ---------------------------------------------------------------------------------------
// Inputs

export const inputs = {
  listGrants: {
    status: z.optional(z.enum(["active", "frozen", "expired", "revoked"])).describe("Only grants in this status")
  },
  getGrant: { grantId: id.describe("The grant's id (`dlg_…`)") },
  act: {
    grantId: id.describe("The grant to act under"),
    recipient: z.string().min(1).max(256).describe("An address, or a name on the grant's recipient allowlist"),
    amount: positive.describe("In token units (e.g. 1.5 for 1.5 USDC)"),
    token: z.optional(z.string().min(1).max(64)).describe("A budget token's symbol (default: the per-action maximum's token)")
  },
  submitSigned: {
    userOp: UserOp.describe("The build's `userOp` with `signature` set to the agent key's signature of its `typedData`")
  },
  payX402: {
    grantId: id.describe("The grant that pays"),
    url: z.string().url().max(2048).describe("The paid resource (fetched by the agent's own process; over HTTP it is only recorded)"),
    maxUnits: z.string().regex(/^\d{1,78}$/).describe("The most this call may pay, in the asset's base units (the 402's `amount` unit)"),
    method: z.optional(z.enum(["GET", "POST"])).describe("HTTP method of the resource (default GET)"),
    offer: z.optional(X402Offer).describe(
      "Over HTTP (the server holds no key): the `accepts[]` entry of the 402 the agent received; the answer is what to sign"
    )
  },
  requestMore: {
    grantId: id.describe("The grant to change"),
    reason: z.string().min(1).max(500).describe("Why, for the owner"),
    budgets: z.optional(z.array(z.object({ token: z.string().min(1).max(20), amount: positive })).min(1).max(8)).describe(
      "New totals of the grant's own budget tokens"
    ),
    perActionMax: z.optional(z.object({ token: z.string().min(1).max(20), amount: positive })),
    maxActions: z.optional(z.number().int().min(1).max(1_000_000)),
    expiresAt: z.optional(z.string().datetime()).describe("A new expiry (ISO time)"),
    addRecipients: z.optional(z.array(z.object({ name: z.string().min(1).max(80), address, chainId: z.number().int() })).min(1).max(32))
  },
  getRequest: { requestId: id.describe("The change request's id (`gcr_…`)") },
  requestPermission: {
    payer: address.describe("The owner's account to ask (`from`): one that granted this agent before (see list_grants' `payer`)"),
    chainId: z.number().int().positive().describe("The chain the permission is on"),
    type: z.enum(["erc20-token-periodic", "erc20-token-allowance", "native-token-periodic", "native-token-allowance"]).describe(
      "ERC-7715 permission type: a periodic allowance that renews, or one allowance over the grant's life"
    ),
    tokenAddress: z.optional(address).describe("The ERC-20 token (erc20-* types)"),
    amount: z.string().regex(/^[1-9]\d{0,77}$/, "base units, a positive decimal string").describe(
      "The amount in the token's base units (USDC: 6 decimals, so 5000000 is 5 USDC): per period, or in total"
    ),
    periodSeconds: z.optional(z.number().int().min(1).max(315_360_000)).describe("periodic types: the period (86400 a day, 604800 a week)"),
    expiresAt: z.optional(z.string().datetime()).describe("When the permission ends (ISO time; default: the service's 30 days)"),
    justification: z.string().min(1).max(280).describe("Why the agent asks: the owner reads it, quoted"),
    isAdjustmentAllowed: z.optional(z.boolean()).describe("Whether the owner's wallet may grant it differently (default false)")
  },
  getPermissionRequest: { requestId: id.describe("The permission request's id (`pap_…`), as request_permission answered") },
  getReceipt: {
    userOpId: id.describe("The action's operation id (`op_…`), as `act` or `submit_signed_action` answered"),
    wait: z.optional(z.number().int().min(0).max(30)).describe("Seconds to wait for the outcome (default 0)")
  }
} as const

// ---------------------------------------------------------------------------------------
// Outputs: a result under its key, or `error`.

const error = z.optional(ToolError).describe("Set when the call was refused; nothing was changed")

export const outputs = {
  listGrants: { grants: z.optional(z.array(GrantView)), error },
  getGrant: { grant: z.optional(GrantView), error },
  act: {
    /** `executed`: included on chain; `failed`: relayed, did not execute; `needs_signature`: sign `build` and submit it. */
    status: z.optional(z.enum(["executed", "failed", "submitted", "needs_signature"])),
    receipt: z.optional(Receipt),
    build: z.optional(ActionBuild),
    next: z.optional(z.string()),
    error
  },
  submitSigned: { status: z.optional(z.enum(["executed", "failed", "submitted"])), receipt: z.optional(Receipt), error },
  payX402: {
    status: z.optional(z.enum(["paid", "not_paid", "needs_signature"])),
    /** The resource's answer (its body is the server's text, quoted and cut at 4000 characters). */
    response: z.optional(z.object({ status: z.number().int(), contentType: z.optional(z.string()), body: z.string() })),
    settlement: z.optional(z.object({ success: z.boolean(), transaction: z.string(), network: z.string(), amount: z.optional(z.string()) })),
    /** Over HTTP: the payment the service reserved and the delegation to sign. */
    authorization: z.optional(z.object({
      paymentId: z.string(),
      amount: z.string(),
      typedData: z.record(z.string(), z.json()),
      delegation: z.record(z.string(), z.json()),
      grant: z.record(z.string(), z.json()),
      delegationManager: z.string(),
      payer: z.string()
    })),
    next: z.optional(z.string()),
    error
  },
  requestMore: { request: z.optional(ChangeRequestView), next: z.optional(z.string()), error },
  getRequest: { request: z.optional(ChangeRequestView), error },
  requestPermission: { request: z.optional(PermissionAskView), next: z.optional(z.string()), error },
  getPermissionRequest: { request: z.optional(PermissionAskView), error },
  getReceipt: {
    receipt: z.optional(Receipt),
    /** The audit entry's inclusion proof once an anchor covers it (verify: `npm run audit:verify-proof`). */
    proof: z.optional(z.object({
      eventId: z.string(),
      leafIndex: z.number().int(),
      treeSize: z.number().int(),
      auditPath: z.array(hash),
      entriesRoot: hash,
      anchor: z.object({ merkleRoot: hash, proof: z.array(hash), txHash: hash, blockNumber: z.string(), chainId: z.number().int(), anchoredAt: z.string() })
    })),
    proofStatus: z.optional(z.enum(["proven", "not_anchored_yet", "no_entry"])),
    error
  }
} as const
