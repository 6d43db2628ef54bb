/**
 * The merchant's side of a payment channel with the chain (Channel.ts holds the in-memory
 * part): `open` checks a new channel once, against the chain, with its first voucher;
 * `pay` checks every later voucher in memory only; `settle` sends the one redemption of the
 * highest voucher. The chain is the guard: the book can only refuse more than the chain would.
 */
import { MultiTokenPeriodEnforcer } from "@metamask/delegation-abis"
import { hashDelegation } from "@metamask/smart-accounts-kit/utils"
import { type Address, type Hex, parseAbi, type PublicClient, type TransactionReceipt, type WalletClient } from "viem"
import {
  type Accepted,
  ChannelBook,
  channelIdOf,
  channelSettlementCallData,
  decodeVoucherHeader,
  type OpenChannel,
  readChannel,
  type Voucher
} from "./Channel.ts"
import { revertReasonOf, transferredIn } from "./Facilitator.ts"
import type { DelegationEnvironment } from "./Wire.ts"

export const voucherEnforcerReadAbi = parseAbi([
  "function settled(address manager, bytes32 channel) view returns (uint256)",
  "event VoucherSettled(address indexed sender, bytes32 indexed channel, address indexed payTo, uint256 cumulativeAmount, uint256 amount, uint256 nonce)"
])

const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase()

export interface ChannelMerchantOptions {
  readonly chainId: number
  readonly environment: DelegationEnvironment
  /** The VoucherEnforcer's address on this chain. */
  readonly enforcer: Address
  readonly token: Address
  readonly payTo: Address
  readonly publicClient: PublicClient
  /** Holds the settlement key: the channel delegation's delegate, who alone may redeem it. */
  readonly walletClient: WalletClient
}

export type Settled =
  | { readonly ok: true; readonly transaction: Hex; readonly amount: bigint; readonly cumulativeAmount: bigint; readonly receipt: TransactionReceipt }
  | { readonly ok: false; readonly reason: string; readonly transaction?: Hex }

export const channelMerchant = (options: ChannelMerchantOptions) => {
  const { publicClient, walletClient, environment } = options
  const merchant = walletClient.account!.address
  const book = new ChannelBook({ chainId: options.chainId, enforcer: options.enforcer })
  const manager = environment.DelegationManager
  const opening = new Map<string, Promise<Accepted>>()

  /** What the grant's budget (MultiTokenPeriodEnforcer on the root, with the args the agent set) still allows; none: unbounded here. */
  const budgetLeft = async (chain: OpenChannel["chain"]): Promise<bigint | undefined> => {
    const period = environment.caveatEnforcers["MultiTokenPeriodEnforcer"]
    const root = chain[chain.length - 1]!
    const caveat = period === undefined ? undefined : root.caveats.find((c) => same(c.enforcer, period))
    if (period === undefined || caveat === undefined) return undefined
    const [available] = await publicClient.readContract({
      address: period,
      abi: MultiTokenPeriodEnforcer,
      functionName: "getAvailableAmount",
      args: [hashDelegation(root), manager, caveat.terms, caveat.args]
    }) as readonly [bigint, boolean, bigint]
    return available
  }

  /** A new channel, with its first voucher: the redemption of that voucher must simulate (every caveat of the channel and the grant runs). */
  const open = async (permissionContext: Hex, voucher: Voucher, price: bigint): Promise<Accepted> => {
    const read = readChannel(permissionContext, { enforcer: options.enforcer, merchant, token: options.token, payTo: options.payTo })
    if (!read.ok) return read
    const id = channelIdOf(read.terms)
    if (!same(id, voucher.channel)) return { ok: false, reason: "the voucher names another channel than the permission context" }
    const settled = await publicClient.readContract({ address: options.enforcer, abi: voucherEnforcerReadAbi, functionName: "settled", args: [manager, id] })
    if (voucher.cumulativeAmount <= settled) return { ok: false, reason: "the voucher is not above what the channel settled" }
    const data = channelSettlementCallData(read.chain, { enforcer: options.enforcer, terms: read.terms, voucher, amount: voucher.cumulativeAmount - settled })
    try {
      await publicClient.call({ account: merchant, to: manager, data, blockTag: "pending" })
    } catch (e) {
      return { ok: false, reason: `the channel's first voucher would not settle: ${revertReasonOf(e)}` }
    }
    const left = await budgetLeft(read.chain)
    const limit = left === undefined || settled + left > read.terms.cap ? read.terms.cap : settled + left
    book.add({ id, terms: read.terms, chain: read.chain, payer: read.payer, limit, settled, highest: undefined })
    return book.accept(voucher, price)
  }

  /**
   * A payment of `price` carried by a `PAYMENT-VOUCHER` header: in memory for an open channel;
   * a new channel is opened once (concurrent first vouchers of one channel share the opening).
   */
  const pay = async (header: string, price: bigint): Promise<Accepted> => {
    const decoded = decodeVoucherHeader(header)
    if (!decoded.ok) return decoded
    const { voucher } = decoded
    if (book.get(voucher.channel) !== undefined) return book.accept(voucher, price)
    if (decoded.permissionContext === undefined) return { ok: false, reason: "unknown channel: send the channel's permission context with its first voucher" }
    const key = voucher.channel.toLowerCase()
    const pending = opening.get(key)
    if (pending !== undefined) return pending.then(() => book.accept(voucher, price))
    const started = open(decoded.permissionContext, voucher, price).finally(() => opening.delete(key))
    opening.set(key, started)
    return started
  }

  /** One redemption of the channel's highest voucher: moves what it adds to what settled before. */
  const settle = async (id: Hex): Promise<Settled> => {
    const channel = book.get(id)
    if (channel === undefined) return { ok: false, reason: "unknown channel" }
    const voucher = channel.highest
    if (voucher === undefined || voucher.cumulativeAmount <= channel.settled) return { ok: false, reason: "nothing to settle" }
    const amount = voucher.cumulativeAmount - channel.settled
    const data = channelSettlementCallData(channel.chain, { enforcer: options.enforcer, terms: channel.terms, voucher, amount })
    let gas: bigint
    try {
      gas = await publicClient.estimateGas({ account: merchant, to: manager, data, blockTag: "pending" })
    } catch (e) {
      return { ok: false, reason: `the settlement would revert: ${revertReasonOf(e)}` }
    }
    const transaction = await walletClient.sendTransaction({ account: walletClient.account!, chain: walletClient.chain, to: manager, data, gas: gas + gas / 4n })
    const receipt = await publicClient.waitForTransactionReceipt({ hash: transaction, timeout: 60_000 })
    if (receipt.status !== "success") return { ok: false, reason: "the settlement reverted on chain", transaction }
    const moved = transferredIn(receipt, channel.terms.token, channel.payer, channel.terms.payTo)
    if (moved !== amount) return { ok: false, reason: `the settlement moved ${moved}, not ${amount}`, transaction }
    channel.settled = voucher.cumulativeAmount
    return { ok: true, transaction, amount, cumulativeAmount: voucher.cumulativeAmount, receipt }
  }

  return { merchant, book, pay, open, settle }
}

export type ChannelMerchant = ReturnType<typeof channelMerchant>
