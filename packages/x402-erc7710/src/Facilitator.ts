/**
 * The facilitator side of the ERC-7710 method, as an `@x402/core` `SchemeNetworkFacilitator`
 * (register one per scheme on an `x402Facilitator`). It holds the settlement key: the
 * address every payment delegation must name as its delegate, announced in `/supported`.
 *
 * verify: the requirements and the client's `accepted` agree; the payload decodes; the
 *   DelegationManager is this network's; the chain is well formed, pays from `delegator` and
 *   ends at this facilitator; the leaf allows exactly the required transfer (`exact`: the
 *   execution pinned; `upto`: the ceiling is the amount asked, the recipient pinned), once,
 *   before a deadline no later than `maxTimeoutSeconds` from now (chain time); the payer
 *   holds the amount; and `redeemDelegations` of exactly that transfer simulates from this
 *   key within a gas cap (every grant caveat runs in the simulation).
 * settle: the same checks with the amount to settle (`upto`: the resource server's actual
 *   amount, at most the ceiling signed; 0 settles nothing), then `redeemDelegations` from
 *   this key with an explicit gas limit; success only when the receipt holds the token's
 *   Transfer of that amount from the payer to `payTo`. One settlement per payment at a time.
 *
 * The facilitator builds the execution from the requirements, never from the payload:
 * whatever the client signed, it can only ever move `amount` of `asset` to `payTo`.
 */
import { hashDelegation, decodeRevertReason } from "@metamask/smart-accounts-kit/utils"
import type {
  Network,
  PaymentPayload,
  PaymentRequirements,
  SchemeNetworkFacilitator,
  SettleResponse,
  VerifyResponse
} from "@x402/core/types"
import { Result, Schema } from "effect"
import {
  type Account,
  type Address,
  type Chain as ViemChain,
  decodeEventLog,
  erc20Abi,
  getAddress,
  type Hex,
  isAddress,
  type PublicClient,
  type TransactionReceipt,
  type Transport,
  type WalletClient
} from "viem"
import {
  checkChain,
  decodeChain,
  type PaymentTerms,
  readPaymentTerms,
  redeemCallData,
  transferExecution
} from "./PaymentDelegation.ts"
import { chainIdOf, ERC7710, Erc7710Payload, type FacilitatorExtra, networkOf, type PaymentScheme, X402_VERSION, type DelegationEnvironment } from "./Wire.ts"

/** `invalidReason` / `errorReason` values (the spec's where it has one). */
export const REASONS = {
  scheme: "unsupported_scheme",
  network: "invalid_network",
  requirements: "invalid_payment_requirements",
  payload: "invalid_payload",
  accepted: "invalid_erc7710_accepted_mismatch",
  manager: "invalid_erc7710_delegation_manager",
  chain: "invalid_erc7710_delegation_chain",
  delegate: "invalid_erc7710_delegate",
  delegator: "invalid_erc7710_delegator",
  terms: "invalid_erc7710_terms",
  deadline: "invalid_erc7710_deadline",
  funds: "insufficient_funds",
  simulation: "invalid_erc7710_simulation_failed",
  gas: "invalid_erc7710_gas_limit",
  exceeds: "invalid_upto_evm_payload_settlement_exceeds_amount",
  inFlight: "invalid_erc7710_settlement_in_progress",
  transaction: "invalid_transaction_state",
  verifyError: "unexpected_verify_error",
  settleError: "unexpected_settle_error"
} as const

const messageOf = (e: unknown) => (e instanceof Error ? (e as { shortMessage?: string }).shortMessage ?? e.message : String(e))

export interface FacilitatorOptions {
  readonly chainId: number
  readonly environment: DelegationEnvironment
  readonly publicClient: PublicClient
  /** The settlement key (pays the gas); give its account a nonce manager when settlements run concurrently. */
  readonly walletClient: WalletClient<Transport, ViemChain, Account>
  /** A redemption that simulates above this is refused, and no settlement sends more (default 1,500,000). */
  readonly maxGas?: bigint
  /** Verify refuses a payment with less time than this left before its deadline (default 5 s). */
  readonly minSecondsLeft?: number
  /** Allowed lead of the payer's clock over the chain's (default 30 s). */
  readonly clockSkewSeconds?: number
}

type Check =
  | { readonly ok: false; readonly reason: string; readonly message: string; readonly payer?: Address }
  | {
    readonly ok: true
    readonly payer: Address
    readonly terms: PaymentTerms
    /** What this phase moves: verify, the full amount (upto: the ceiling); settle, the amount to settle. */
    readonly amount: bigint
    readonly callData: Hex
    readonly gas: bigint
  }

const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase()
const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)
const decimal = (s: unknown): bigint | undefined => (typeof s === "string" && /^(0|[1-9][0-9]{0,77})$/.test(s) ? BigInt(s) : undefined)
const decodePayload = Schema.decodeUnknownResult(Erc7710Payload)

/** The revert reason in a failed call: the enforcer's string or the manager's error, decoded. */
export const revertReasonOf = (error: unknown): string => {
  const decoded = decodeRevertReason(error)
  if (decoded !== undefined) return decoded.message
  const text = error instanceof Error ? error.message : String(error)
  return /[A-Za-z0-9]+Enforcer:[a-z-]+/.exec(text)?.[0] ?? text.split("\n")[0] ?? "reverted"
}

/** The amount of `asset` the receipt shows moving from `from` to `to`. */
export const transferredIn = (receipt: TransactionReceipt, asset: Address, from: Address, to: Address): bigint => {
  let moved = 0n
  for (const log of receipt.logs) {
    if (!same(log.address, asset)) continue
    try {
      const event = decodeEventLog({ abi: erc20Abi, topics: log.topics, data: log.data })
      if (event.eventName === "Transfer" && same(event.args.from, from) && same(event.args.to, to)) moved += event.args.value
    } catch {
      // another event of the token
    }
  }
  return moved
}

export class Erc7710FacilitatorScheme implements SchemeNetworkFacilitator {
  readonly caipFamily = "eip155:*"
  /** Payments (by leaf delegation hash) being settled now: a second settle of one waits for nothing and is refused. */
  private readonly settling = new Set<string>()
  private readonly maxGas: bigint

  constructor(readonly scheme: PaymentScheme, private readonly options: FacilitatorOptions) {
    this.maxGas = options.maxGas ?? 1_500_000n
  }

  get address(): Address {
    return this.options.walletClient.account.address
  }

  get network(): Network {
    return networkOf(this.options.chainId)
  }

  getExtra(_network: string): Record<string, unknown> {
    const extra: FacilitatorExtra = { facilitatorAddress: this.address, delegationManager: this.options.environment.DelegationManager }
    return { ...extra }
  }

  getSigners(_network: string): string[] {
    return [this.address]
  }

  async verify(payload: PaymentPayload, requirements: PaymentRequirements): Promise<VerifyResponse> {
    // A chain that does not answer is a refusal with its reason, never a thrown 500.
    const check = await this.check(payload, requirements, "verify").catch((e): Check => ({ ok: false, reason: REASONS.verifyError, message: messageOf(e) }))
    return check.ok
      ? { isValid: true, payer: check.payer }
      : { isValid: false, invalidReason: check.reason, invalidMessage: check.message, ...(check.payer === undefined ? {} : { payer: check.payer }) }
  }

  async settle(payload: PaymentPayload, requirements: PaymentRequirements): Promise<SettleResponse> {
    const failure = (reason: string, message: string, extra: { payer?: Address; transaction?: Hex } = {}): SettleResponse => ({
      success: false,
      errorReason: reason,
      errorMessage: message,
      transaction: extra.transaction ?? "",
      network: this.network,
      ...(extra.payer === undefined ? {} : { payer: extra.payer })
    })
    const key = this.paymentKey(payload)
    if (key !== undefined && this.settling.has(key)) return failure(REASONS.inFlight, "this payment is being settled already")
    if (key !== undefined) this.settling.add(key)
    try {
      const check = await this.check(payload, requirements, "settle").catch((e): Check => ({ ok: false, reason: REASONS.settleError, message: messageOf(e) }))
      if (!check.ok) return failure(check.reason, check.message, check.payer === undefined ? {} : { payer: check.payer })
      if (check.amount === 0n) {
        // upto: nothing used, nothing moves; the delegation lapses at its deadline.
        return { success: true, transaction: "", network: this.network, payer: check.payer, amount: "0" }
      }
      const { walletClient, publicClient, environment } = this.options
      const gas = check.gas + check.gas / 4n > this.maxGas ? this.maxGas : check.gas + check.gas / 4n
      let hash: Hex
      try {
        hash = await walletClient.sendTransaction({
          account: walletClient.account,
          chain: walletClient.chain,
          to: environment.DelegationManager,
          data: check.callData,
          gas
        })
      } catch (e) {
        return failure(REASONS.settleError, `the redemption was not sent: ${messageOf(e)}`, { payer: check.payer })
      }
      let receipt: TransactionReceipt
      try {
        receipt = await publicClient.waitForTransactionReceipt({ hash, timeout: 60_000 })
      } catch (e) {
        // Sent but not seen mined: indeterminate, the hash says where to look.
        return failure(REASONS.transaction, `no receipt for the redemption yet: ${messageOf(e)}`, { payer: check.payer, transaction: hash })
      }
      if (receipt.status !== "success") {
        return failure(REASONS.transaction, "the redemption reverted on chain", { payer: check.payer, transaction: hash })
      }
      const moved = transferredIn(receipt, check.terms.asset, check.payer, check.terms.payTo)
      if (moved !== check.amount) {
        return failure(REASONS.transaction, `the redemption moved ${moved}, not ${check.amount}`, { payer: check.payer, transaction: hash })
      }
      return { success: true, transaction: hash, network: this.network, payer: check.payer, amount: String(moved) }
    } finally {
      if (key !== undefined) this.settling.delete(key)
    }
  }

  /** The leaf delegation's hash, when the payload decodes that far. */
  private paymentKey(payload: PaymentPayload): string | undefined {
    const decoded = decodePayload(payload.payload)
    if (Result.isFailure(decoded)) return undefined
    const chain = decodeChain(decoded.success.permissionContext as Hex)
    return chain?.[0] === undefined ? undefined : hashDelegation(chain[0])
  }

  private async check(payload: PaymentPayload, requirements: PaymentRequirements, phase: "verify" | "settle"): Promise<Check> {
    const fail = (reason: string, message: string, payer?: Address): Check => ({ ok: false, reason, message, ...(payer === undefined ? {} : { payer }) })
    const { environment, publicClient } = this.options

    // The requirements (from the resource server) and what the client accepted.
    if (!isRecord(requirements) || requirements.scheme !== this.scheme) return fail(REASONS.scheme, `this mechanism settles ${this.scheme}`)
    if (chainIdOf(requirements.network) !== this.options.chainId) return fail(REASONS.network, `this facilitator settles on ${this.network}`)
    if (!isRecord(requirements.extra) || requirements.extra["assetTransferMethod"] !== ERC7710) {
      return fail(REASONS.requirements, `extra.assetTransferMethod must be "${ERC7710}"`)
    }
    const amount = decimal(requirements.amount)
    if (typeof requirements.asset !== "string" || !isAddress(requirements.asset) || typeof requirements.payTo !== "string" || !isAddress(requirements.payTo) || amount === undefined) {
      return fail(REASONS.requirements, "asset, payTo and amount must be an address, an address and a decimal amount")
    }
    if (amount === 0n && !(this.scheme === "upto" && phase === "settle")) return fail(REASONS.requirements, "the amount must be at least 1 base unit")
    const asset = getAddress(requirements.asset)
    const payTo = getAddress(requirements.payTo)
    if (!isRecord(payload) || payload.x402Version !== X402_VERSION || !isRecord(payload.accepted)) {
      return fail(REASONS.payload, `the payment must be an x402 v${X402_VERSION} payload with its accepted requirements`)
    }
    const accepted = payload.accepted
    const acceptedAmount = decimal(accepted.amount)
    if (
      accepted.scheme !== this.scheme || accepted.network !== requirements.network || typeof accepted.asset !== "string" ||
      !same(accepted.asset, asset) || typeof accepted.payTo !== "string" || !same(accepted.payTo, payTo) || acceptedAmount === undefined
    ) {
      return fail(REASONS.accepted, "the payment was made for other requirements (scheme, network, asset or payTo)")
    }
    // upto's amount is the ceiling when verified and the amount to settle when settled.
    const settling = this.scheme === "upto" && phase === "settle"
    if (settling ? amount > acceptedAmount : amount !== acceptedAmount) {
      return settling
        ? fail(REASONS.exceeds, `cannot settle ${amount}: the payment allows at most ${acceptedAmount}`)
        : fail(REASONS.accepted, `the payment was made for ${acceptedAmount}, the requirement is ${amount}`)
    }

    // The payload and the delegation chain it carries.
    const decoded = decodePayload(payload.payload)
    if (Result.isFailure(decoded)) return fail(REASONS.payload, "payload must hold delegationManager, permissionContext and delegator")
    const { delegationManager, permissionContext, delegator } = decoded.success
    const payer = getAddress(delegator)
    if (!same(delegationManager, environment.DelegationManager)) {
      return fail(REASONS.manager, `this facilitator redeems through ${environment.DelegationManager} only`, payer)
    }
    const chain = decodeChain(permissionContext as Hex)
    if (chain === undefined) return fail(REASONS.payload, "permissionContext is not an encoded delegation chain", payer)
    const shape = checkChain(chain)
    if (!shape.ok) return fail(REASONS.chain, shape.reason, payer)
    if (!same(shape.leaf.delegate, this.address)) return fail(REASONS.delegate, `the payment delegation must name ${this.address} as its delegate`, payer)
    if (!same(shape.root.delegator, payer)) return fail(REASONS.delegator, "the chain does not pay from the payload's delegator", payer)

    // The leaf allows exactly this payment, once, before a near deadline.
    const read = readPaymentTerms(environment, shape.leaf, this.scheme)
    if (!read.ok) return fail(REASONS.terms, read.reason, payer)
    const terms = read.terms
    if (!same(terms.asset, asset) || !same(terms.payTo, payTo) || terms.amount !== acceptedAmount) {
      return fail(REASONS.terms, `the payment delegation allows ${terms.amount} of ${terms.asset} to ${terms.payTo}, not the payment required`, payer)
    }
    // The chain's view, read at once: the next block's time (an idle, automining chain lags the
    // wall clock until its next block), the payer's balance, and the redemption simulated
    // against the next block (its time is what the deadlines and the grant's expiry will see).
    const moves = phase === "verify" ? acceptedAmount : amount
    const callData = redeemCallData(permissionContext as Hex, transferExecution(asset, payTo, moves))
    const [latest, balance, simulated] = await Promise.all([
      publicClient.getBlock({ blockTag: "latest" }),
      moves === 0n ? Promise.resolve(0n) : publicClient.readContract({ address: asset, abi: erc20Abi, functionName: "balanceOf", args: [payer] }),
      moves === 0n
        ? Promise.resolve({ gas: 0n })
        : publicClient.estimateGas({ account: this.address, to: environment.DelegationManager, data: callData, blockTag: "pending" }).then(
          (gas) => ({ gas }),
          (error: unknown) => ({ error })
        )
    ])
    const now = Math.max(Number(latest.timestamp), Math.floor(Date.now() / 1000))
    const maxTimeout = typeof requirements.maxTimeoutSeconds === "number" ? requirements.maxTimeoutSeconds : 0
    const minLeft = phase === "verify" ? this.options.minSecondsLeft ?? 5 : 1
    if (terms.validBefore < now + minLeft) return fail(REASONS.deadline, `the payment expires at ${terms.validBefore}; the chain is at ${now}`, payer)
    if (terms.validBefore > now + maxTimeout + (this.options.clockSkewSeconds ?? 30)) {
      return fail(REASONS.deadline, `the payment stays valid until ${terms.validBefore}, longer than maxTimeoutSeconds (${maxTimeout}) from now (${now})`, payer)
    }
    // upto settling nothing: no transaction, nothing to simulate.
    if (moves === 0n) return { ok: true, payer, terms, amount: 0n, callData, gas: 0n }
    if (balance < moves) return fail(REASONS.funds, `${payer} holds ${balance} of ${asset}, less than ${moves}`, payer)
    if ("error" in simulated) return fail(REASONS.simulation, `the redemption would revert: ${revertReasonOf(simulated.error)}`, payer)
    const gas = simulated.gas
    if (gas > this.maxGas) return fail(REASONS.gas, `the redemption needs ${gas} gas, more than ${this.maxGas}`, payer)
    return { ok: true, payer, terms, amount: moves, callData, gas }
  }
}
