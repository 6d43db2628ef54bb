/**
 * The anchor's Merkle tree over audit chain heads, computable with standard tools:
 * leaf = keccak256(abi.encode(string accountId, uint256 length, bytes32 headHash));
 * leaves sorted ascending; a parent is keccak256 of its two children sorted
 * ascending (so proofs need no left/right flags); an odd node is carried up as is.
 */
import { concat, encodeAbiParameters, type Hex, keccak256 } from "viem"

export interface AnchoredHead {
  readonly accountId: string
  readonly length: number
  readonly headHash: Hex
}

export const leafOf = (h: AnchoredHead): Hex =>
  keccak256(
    encodeAbiParameters([{ type: "string" }, { type: "uint256" }, { type: "bytes32" }], [
      h.accountId,
      BigInt(h.length),
      h.headHash
    ])
  )

const hashPair = (a: Hex, b: Hex): Hex => (a.toLowerCase() < b.toLowerCase() ? keccak256(concat([a, b])) : keccak256(concat([b, a])))

export const merkleRoot = (heads: ReadonlyArray<AnchoredHead>): Hex => {
  if (heads.length === 0) throw new Error("no heads to anchor")
  let level = heads.map(leafOf).sort()
  while (level.length > 1) {
    const next: Array<Hex> = []
    for (let i = 0; i < level.length; i += 2) next.push(i + 1 < level.length ? hashPair(level[i]!, level[i + 1]!) : level[i]!)
    level = next
  }
  return level[0]!
}

/** The proof that `head` is in the tree of `heads`: sibling hashes from leaf to root. */
export const merkleProof = (heads: ReadonlyArray<AnchoredHead>, head: AnchoredHead): ReadonlyArray<Hex> => {
  let level = heads.map(leafOf).sort()
  let index = level.indexOf(leafOf(head))
  if (index < 0) throw new Error("head is not in the tree")
  const proof: Array<Hex> = []
  while (level.length > 1) {
    const sibling = index ^ 1
    if (sibling < level.length) proof.push(level[sibling]!)
    const next: Array<Hex> = []
    for (let i = 0; i < level.length; i += 2) next.push(i + 1 < level.length ? hashPair(level[i]!, level[i + 1]!) : level[i]!)
    level = next
    index = Math.floor(index / 2)
  }
  return proof
}

export const verifyProof = (head: AnchoredHead, proof: ReadonlyArray<Hex>, root: Hex): boolean =>
  proof.reduce((acc, sibling) => hashPair(acc, sibling), leafOf(head)) === root

/** Transaction data of an anchor: a fixed tag, then the root. */
export const ANCHOR_TAG: Hex = "0x6461732d616e63686f722d7631" // "das-anchor-v1"
export const anchorCalldata = (root: Hex): Hex => concat([ANCHOR_TAG, root])
