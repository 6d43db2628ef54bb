/**
 * What a delegated action did, read from logs alone (no build, no reservation): the
 * DelegationManager's `RedeemedDelegation` events and the ERC-20 `Transfer`s out of the
 * delegator that the redemption executed. The owner's log (OwnerLog.ts) and the chain
 * follower (src/follower) describe the owner's money with these, whichever path the
 * redemption took.
 */
import { DelegationManager } from "@metamask/delegation-abis"
import { type Address, decodeEventLog, erc20Abi, formatUnits, type Hash, type Hex, hashStruct } from "viem"

export interface RawLog {
  readonly address: Address
  readonly topics: ReadonlyArray<Hex>
  readonly data: Hex
  readonly logIndex?: number | null
}

export interface Redemption {
  readonly rootDelegator: Address
  readonly redeemer: Address
  /** The delegate named in the redeemed delegation. */
  readonly delegate: Address
  /** The redeemed delegation's authority (`ROOT_AUTHORITY` for the root of a chain). */
  readonly authority: Hash
  readonly delegationHash: Hash
  readonly logIndex: number
}

export interface TransferOut {
  readonly token: Address
  readonly to: Address
  readonly units: bigint
  readonly logIndex: number
}

const delegationTypes = {
  Delegation: [
    { name: "delegate", type: "address" },
    { name: "delegator", type: "address" },
    { name: "authority", type: "bytes32" },
    { name: "caveats", type: "Caveat[]" },
    { name: "salt", type: "uint256" }
  ],
  Caveat: [
    { name: "enforcer", type: "address" },
    { name: "terms", type: "bytes" }
  ]
} as const

interface DelegationStruct {
  readonly delegate: Address
  readonly delegator: Address
  readonly authority: Hash
  readonly caveats: ReadonlyArray<{ enforcer: Address; terms: Hex; args: Hex }>
  readonly salt: bigint
}

/** The DelegationManager's hash of a delegation (EIP-712 struct hash; the permission id). */
export const delegationHashOf = (d: DelegationStruct): Hash =>
  hashStruct({
    types: delegationTypes,
    primaryType: "Delegation",
    data: {
      delegate: d.delegate,
      delegator: d.delegator,
      authority: d.authority,
      caveats: d.caveats.map((c) => ({ enforcer: c.enforcer, terms: c.terms })),
      salt: d.salt
    }
  })

/** Every `RedeemedDelegation` the DelegationManager logged among `logs`. */
export const redemptionsIn = (delegationManager: Address, logs: ReadonlyArray<RawLog>): ReadonlyArray<Redemption> => {
  const out: Array<Redemption> = []
  for (const log of logs) {
    if (log.address.toLowerCase() !== delegationManager.toLowerCase()) continue
    try {
      const ev = decodeEventLog({ abi: DelegationManager, topics: log.topics as [Hex, ...Array<Hex>], data: log.data })
      if (ev.eventName !== "RedeemedDelegation") continue
      const args = ev.args as unknown as { rootDelegator: Address; redeemer: Address; delegation: DelegationStruct }
      out.push({
        rootDelegator: args.rootDelegator,
        redeemer: args.redeemer,
        delegate: args.delegation.delegate,
        authority: args.delegation.authority,
        delegationHash: delegationHashOf(args.delegation),
        logIndex: log.logIndex ?? 0
      })
    } catch {
      // another event
    }
  }
  return out
}

/** ERC-20 `Transfer`s out of `from` among `logs`, optionally only those with a log index in (after, before). */
export const transfersOut = (
  logs: ReadonlyArray<RawLog>,
  from: string,
  window?: { readonly after: number; readonly before: number }
): ReadonlyArray<TransferOut> => {
  const out: Array<TransferOut> = []
  for (const log of logs) {
    const index = log.logIndex ?? 0
    if (window !== undefined && (index <= window.after || index >= window.before)) continue
    if (log.topics.length !== 3) continue
    try {
      const ev = decodeEventLog({ abi: erc20Abi, topics: log.topics as [Hex, ...Array<Hex>], data: log.data })
      if (ev.eventName !== "Transfer") continue
      const args = ev.args as { from: Address; to: Address; value: bigint }
      if (args.from.toLowerCase() !== from.toLowerCase()) continue
      out.push({ token: log.address.toLowerCase() as Address, to: args.to.toLowerCase() as Address, units: args.value, logIndex: index })
    } catch {
      // not a Transfer
    }
  }
  return out
}

/** A transfer as the audit log shows it: amount in the token's units, its symbol when known, else its address. */
export const describeTransfer = (
  t: TransferOut,
  tokenOf: (address: string) => { readonly symbol: string; readonly decimals: number } | undefined
) => {
  const token = tokenOf(t.token)
  return token === undefined
    ? { token: t.token, recipient: t.to }
    : { amount: Number(formatUnits(t.units, token.decimals)), token: token.symbol, recipient: t.to }
}
