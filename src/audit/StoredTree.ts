/**
 * The RFC 6962 tree of an account's entries (Rfc6962.ts), computed from stored complete
 * subtrees instead of every leaf (issue 30, item 5; docs/audit-log.md, "Stored subtrees").
 *
 * A node (level, index) is the complete, aligned subtree over the leaves
 * [index·2^level, (index+1)·2^level). Every subtree the RFC 6962 recursion uses from the
 * left edge is aligned, so a tree of n leaves is its aligned subtrees ("a compact range",
 * a Merkle mountain range read right to left), and an audit path is O(log n) of them.
 *
 * The anchoring pass stores every complete node at level ≥ `TILE_LEVEL` (one per 128
 * leaves), once: they never change, as entries never do. Below that level nodes are
 * computed from the leaves, so a proof reads O(log n) stored nodes, its own tile's leaves
 * and the leaves after the last stored tile; the pass reads only the leaves it adds.
 * Pure: the callers read the rows (Anchor.ts, EntryProof.ts).
 */
import { EMPTY_ROOT, type Hex32, leafHash, nodeHash } from "./Rfc6962.ts"

/** Nodes below this level are never stored: a tile is 2^8 = 256 leaves. */
export const TILE_LEVEL = 8
export const TILE = 2 ** TILE_LEVEL

export interface NodeKey {
  readonly level: number
  readonly index: number
}

export interface TreeSource {
  readonly tileLevel: number
  /** The leaves the stored nodes cover: [0, storedSize), a multiple of the tile. */
  readonly storedSize: number
  /** A stored node (asked only for level ≥ tileLevel, wholly below storedSize). */
  readonly stored: (key: NodeKey) => Hex32 | undefined
  /** The entry hash of leaf i (0-based), if it was read. */
  readonly entry: (i: number) => string | undefined
}

export interface Tree {
  /** The RFC 6962 root of the first `size` leaves. */
  readonly root: (size: number) => Hex32
  /** The audit path of leaf `index` in the tree of the first `size` leaves (as Rfc6962.inclusionProof). */
  readonly path: (index: number, size: number) => Array<Hex32>
  /** The hash of a complete node. */
  readonly node: (key: NodeKey) => Hex32
  /** Stored nodes asked for and not found (each is EMPTY_ROOT in what was computed). */
  readonly missing: ReadonlyArray<NodeKey>
}

const split = (n: number): number => {
  let k = 1
  while (k * 2 < n) k *= 2
  return k
}

const isPowerOfTwo = (n: number) => n > 0 && 2 ** Math.round(Math.log2(n)) === n

/** A tree over `source`. A leaf that was not read is a thrown error (a caller's bug, not data). */
export const treeOf = (source: TreeSource): Tree => {
  const memo = new Map<string, Hex32>()
  const missing: Array<NodeKey> = []
  const node = ({ level, index }: NodeKey): Hex32 => {
    if (level === 0) {
      const e = source.entry(index)
      if (e === undefined) throw new Error(`leaf ${index} was not read`)
      return leafHash(e)
    }
    // Only stored levels are remembered: below them each node is asked for at most once.
    if (level < source.tileLevel) return nodeHash(node({ level: level - 1, index: 2 * index }), node({ level: level - 1, index: 2 * index + 1 }))
    const key = `${level}:${index}`
    const hit = memo.get(key)
    if (hit !== undefined) return hit
    let h: Hex32
    if ((index + 1) * 2 ** level <= source.storedSize) {
      const s = source.stored({ level, index })
      if (s === undefined) missing.push({ level, index })
      h = s ?? EMPTY_ROOT
    } else {
      h = nodeHash(node({ level: level - 1, index: 2 * index }), node({ level: level - 1, index: 2 * index + 1 }))
    }
    memo.set(key, h)
    return h
  }
  // MTH of the leaves [start, start + size): aligned powers of two are nodes.
  const subtree = (start: number, size: number): Hex32 => {
    if (isPowerOfTwo(size)) {
      if (start % size !== 0) throw new Error(`subtree [${start}, ${start + size}) is not aligned`)
      return node({ level: Math.log2(size), index: start / size })
    }
    const k = split(size)
    return nodeHash(subtree(start, k), subtree(start + k, size - k))
  }
  const pathOf = (m: number, start: number, size: number): Array<Hex32> => {
    if (size <= 1) return []
    const k = split(size)
    return m < k
      ? [...pathOf(m, start, k), subtree(start + k, size - k)]
      : [...pathOf(m - k, start + k, size - k), subtree(start, k)]
  }
  return {
    root: (size) => (size === 0 ? EMPTY_ROOT : subtree(0, size)),
    path: (index, size) => {
      if (!Number.isSafeInteger(index) || index < 0 || index >= size) throw new Error(`leaf index ${index} is outside a tree of ${size}`)
      return pathOf(index, 0, size)
    },
    node,
    missing
  }
}

/** The stored nodes `compute` asks for: run it once with none, record what it asked. */
export const neededNodes = (source: Omit<TreeSource, "stored">, compute: (tree: Tree) => unknown): Array<NodeKey> => {
  const tree = treeOf({ ...source, stored: () => undefined })
  compute(tree)
  return [...tree.missing]
}

/** The complete nodes at level ≥ tileLevel that end in (from, to]: what extending the stored size from `from` to `to` adds. */
export const nodesBetween = (tileLevel: number, from: number, to: number): Array<NodeKey> => {
  const keys: Array<NodeKey> = []
  for (let level = tileLevel; 2 ** level <= to; level++) {
    const width = 2 ** level
    for (let index = Math.floor(from / width); (index + 1) * width <= to; index++) keys.push({ level, index })
  }
  return keys
}

/** The stored size a tree may use for a proof or pass up to `length`: whole tiles, at most what is stored. */
export const usableSize = (tileLevel: number, stored: number, length: number): number =>
  Math.min(stored, Math.floor(length / 2 ** tileLevel) * 2 ** tileLevel)
