/**
 * What a delegated action did, read from logs alone (no build, no reservation): the
 * DelegationManager's `RedeemedDelegation` events and the ERC-20 `Transfer`s out of the
 * delegator that the redemption executed. The owner's log (OwnerLog.ts) and the chain
 * follower (src/follower) describe the owner's money with these, whichever path the
 * redemption took.
 */
import { DelegationManager } from "@metamask/delegation-abis"
import { type Address, concat, encodeAbiParameters, erc20Abi, formatUnits, type Hash, type Hex, keccak256, toHex } from "viem"
import { eventDecoder } from "./AbiDecode.ts"

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

interface DelegationStruct {
  readonly delegate: Address
  readonly delegator: Address
  readonly authority: Hash
  readonly caveats: ReadonlyArray<{ enforcer: Address; terms: Hex; args: Hex }>
  readonly salt: bigint
}

// The EIP-712 type hashes, once: viem's `hashStruct` encodes and hashes the type string again
// for the delegation and for each caveat on every call, and the follower hashes every link of
// every redemption it reads (docs/performance.md, "Issue 46 items 1, 2, 4 (h47d)"). The strings
// are EIP-712's encodeType of the two structs (the referenced Caveat appended to Delegation's).
const DELEGATION_TYPEHASH = keccak256(
  toHex("Delegation(address delegate,address delegator,bytes32 authority,Caveat[] caveats,uint256 salt)Caveat(address enforcer,bytes terms)")
)
const CAVEAT_TYPEHASH = keccak256(toHex("Caveat(address enforcer,bytes terms)"))
const caveatParams = [{ type: "bytes32" }, { type: "address" }, { type: "bytes32" }] as const
const delegationParams = [{ type: "bytes32" }, { type: "address" }, { type: "address" }, { type: "bytes32" }, { type: "bytes32" }, {
  type: "uint256"
}] as const

/**
 * The DelegationManager's hash of a delegation (EIP-712 struct hash; the permission id): the
 * same value as viem's `hashStruct` of those types (test/delegations/redemptions.test.ts).
 */
export const delegationHashOf = (d: DelegationStruct): Hash => {
  const caveats = d.caveats.map((c) => keccak256(encodeAbiParameters(caveatParams, [CAVEAT_TYPEHASH, c.enforcer, keccak256(c.terms)])))
  return keccak256(
    encodeAbiParameters(delegationParams, [DELEGATION_TYPEHASH, d.delegate, d.delegator, d.authority, keccak256(caveats.length === 0 ? "0x" : concat(caveats)), d.salt])
  )
}

const managerLog = eventDecoder(DelegationManager)
const erc20Log = eventDecoder(erc20Abi)

type Decoded = Omit<Redemption, "logIndex"> | null

/**
 * A log's decoded redemption (`null`: another event), by its topics and data. A pass reads the
 * same `RedeemedDelegation` log up to four times (Redeemed.ts: the known-event check, the loop,
 * the transaction's contexts, the boundaries before it), and decoding it hashes every caveat;
 * the answer depends on the log's bytes alone. The most recent entries only.
 */
const decodedLogs = new Map<string, Decoded>()
const DECODED_KEPT = 512

const decodeRedemption = (log: RawLog): Decoded => {
  const key = `${log.topics.join("")}${log.data}`
  const kept = decodedLogs.get(key)
  if (kept !== undefined) return kept
  let decoded: Decoded = null
  try {
    const ev = managerLog(log)
    if (ev?.eventName === "RedeemedDelegation") {
      const args = ev.args as unknown as { rootDelegator: Address; redeemer: Address; delegation: DelegationStruct }
      decoded = {
        rootDelegator: args.rootDelegator,
        redeemer: args.redeemer,
        delegate: args.delegation.delegate,
        authority: args.delegation.authority,
        delegationHash: delegationHashOf(args.delegation)
      }
    }
  } catch {
    // another event
  }
  if (decodedLogs.size >= DECODED_KEPT) decodedLogs.delete(decodedLogs.keys().next().value!)
  decodedLogs.set(key, decoded)
  return decoded
}

/** Every `RedeemedDelegation` the DelegationManager logged among `logs`. */
export const redemptionsIn = (delegationManager: Address, logs: ReadonlyArray<RawLog>): ReadonlyArray<Redemption> => {
  const out: Array<Redemption> = []
  for (const log of logs) {
    if (log.address.toLowerCase() !== delegationManager.toLowerCase()) continue
    const decoded = decodeRedemption(log)
    if (decoded !== null) out.push({ ...decoded, logIndex: log.logIndex ?? 0 })
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
      const ev = erc20Log(log)
      if (ev?.eventName !== "Transfer") continue
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
