/**
 * The anchor's Merkle tree over audit chain heads, computable with standard tools:
 * leaf = keccak256(abi.encode(string accountId, uint256 length, bytes32 headHash, bytes32 entriesRoot))
 * (`entriesRoot`: the RFC 6962 root of the account's first `length` entry hashes, Rfc6962.ts);
 * leaves sorted ascending; a parent is keccak256 of its two children sorted ascending
 * (so proofs need no left/right flags); an odd node is carried up as is.
 *
 * Anchors sent before entries roots existed (tag `das-anchor-v1`) used the leaf without
 * `entriesRoot`: a head without one hashes that way, so their roots still recompute.
 */
import { concat, encodeAbiParameters, type Hex, keccak256 } from "viem"

export interface AnchoredHead {
  readonly accountId: string
  readonly length: number
  readonly headHash: Hex
  /** Absent only on heads of `das-anchor-v1` anchors. */
  readonly entriesRoot?: Hex | undefined
}

export const leafOf = (h: AnchoredHead): Hex =>
  keccak256(
    h.entriesRoot === undefined
      ? encodeAbiParameters([{ type: "string" }, { type: "uint256" }, { type: "bytes32" }], [
        h.accountId,
        BigInt(h.length),
        h.headHash
      ])
      : encodeAbiParameters([{ type: "string" }, { type: "uint256" }, { type: "bytes32" }, { type: "bytes32" }], [
        h.accountId,
        BigInt(h.length),
        h.headHash,
        h.entriesRoot
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

/**
 * Every head's proof at once (what `merkleProof` gives for each): the levels are built once,
 * O(heads · log heads), where calling `merkleProof` per head is quadratic. Keyed by leaf.
 */
export const merkleProofs = (heads: ReadonlyArray<AnchoredHead>): Map<Hex, ReadonlyArray<Hex>> => {
  const levels: Array<Array<Hex>> = [heads.map(leafOf).sort()]
  while (levels.at(-1)!.length > 1) {
    const level = levels.at(-1)!
    const next: Array<Hex> = []
    for (let i = 0; i < level.length; i += 2) next.push(i + 1 < level.length ? hashPair(level[i]!, level[i + 1]!) : level[i]!)
    levels.push(next)
  }
  return new Map(levels[0]!.map((leaf, leafIndex) => {
    const proof: Array<Hex> = []
    let index = leafIndex
    for (const level of levels.slice(0, -1)) {
      const sibling = index ^ 1
      if (sibling < level.length) proof.push(level[sibling]!)
      index = Math.floor(index / 2)
    }
    return [leaf, proof]
  }))
}

export const verifyProof = (head: AnchoredHead, proof: ReadonlyArray<Hex>, root: Hex): boolean =>
  proof.reduce((acc, sibling) => hashPair(acc, sibling), leafOf(head)) === root

/** Transaction data of an anchor: a fixed tag, then the root. `v2`: leaves carry the entries root. */
export const ANCHOR_TAG: Hex = "0x6461732d616e63686f722d7632" // "das-anchor-v2"
/** The tag of anchors whose leaves had no entries root. */
export const ANCHOR_TAG_V1: Hex = "0x6461732d616e63686f722d7631" // "das-anchor-v1"
export const anchorCalldata = (root: Hex): Hex => concat([ANCHOR_TAG, root])
