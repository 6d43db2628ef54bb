/**
 * The tree from stored subtrees (StoredTree.ts) against the full recomputation (Rfc6962.ts):
 * for every size 1..40 and the edges up to 70, every stored size (up to 33 leaves; five above) (0 and each whole tile up to it), tiles of 2, 4 and
 * 8 leaves and the production 256: the same root, and for every leaf the same audit path,
 * reading only the leaves after the stored size and the leaf's own tile. A stored node that
 * was tampered with changes the path, and the path then fails `verifyInclusion` against the
 * true root; a node that is not stored is reported missing, never guessed.
 */
import { createHash } from "node:crypto"
import { assert, describe, it } from "@effect/vitest"
import { inclusionProof, type Hex32, root, verifyInclusion } from "../../src/audit/Rfc6962.ts"
import { type NodeKey, neededNodes, nodesBetween, TILE_LEVEL, treeOf, usableSize } from "../../src/audit/StoredTree.ts"

const entry = (i: number) => `0x${createHash("sha256").update(`entry ${i}`).digest("hex")}`
const entries = (n: number) => Array.from({ length: n }, (_, i) => entry(i))
const keyOf = (k: NodeKey) => `${k.level}:${k.index}`

/** Every node a pass would have stored up to `storedSize`, computed from all the leaves. */
const storedNodes = (hashes: ReadonlyArray<string>, tileLevel: number, storedSize: number) => {
  const full = treeOf({ tileLevel, storedSize: 0, stored: () => undefined, entry: (i) => hashes[i] })
  return new Map(nodesBetween(tileLevel, 0, storedSize).map((k) => [keyOf(k), full.node(k)]))
}

/** A source that reads only the leaves at or after `from` and in [tileStart, tileEnd), and records each one read. */
const sourceOf = (hashes: ReadonlyArray<string>, tileLevel: number, storedSize: number, stored: Map<string, Hex32>, leafTile?: number) => {
  const tile = 2 ** tileLevel
  const read = new Set<number>()
  return {
    read,
    source: {
      tileLevel,
      storedSize,
      stored: (k: NodeKey) => stored.get(keyOf(k)),
      entry: (i: number) => {
        const inTile = leafTile !== undefined && Math.floor(i / tile) === Math.floor(leafTile / tile)
        if (i < storedSize && !inTile) return undefined
        read.add(i)
        return hashes[i]
      }
    }
  }
}

describe("stored subtrees", () => {
  it("give the full recomputation's root and audit paths for every size 1..40 and the edges to 70, stored size and tile", () => {
    // The cost grows as size⁴ (sizes × stored sizes × leaves × a path's hashes): every size up to
    // 40 (five powers of two and their neighbours), then the edges of the next two, with fewer
    // stored sizes above 33 leaves.
    const edges = [1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 70]
    const every = [...Array.from({ length: 40 }, (_, i) => i + 1), 63, 64, 65, 70]
    for (const [tileLevel, sizes] of [[2, every], [1, edges], [3, edges], [TILE_LEVEL, edges]] as const) {
      const tile = 2 ** tileLevel
      for (const size of sizes) {
        const hashes = entries(size)
        const expectedRoot = root(hashes)
        const expectedPaths = hashes.map((_, i) => inclusionProof(i, hashes))
        // Every stored size up to 33 leaves; above, the first two, one in the middle and the last two.
        const all = Array.from({ length: Math.floor(size / tile) + 1 }, (_, k) => k * tile)
        const storedSizes = size <= 33 ? all : [...new Set([...all.slice(0, 2), all[all.length >> 1]!, ...all.slice(-2)])]
        for (const storedSize of storedSizes) {
          const stored = storedNodes(hashes, tileLevel, storedSize)
          const forRoot = sourceOf(hashes, tileLevel, storedSize, stored)
          const tree = treeOf(forRoot.source)
          assert.strictEqual(tree.root(size), expectedRoot, `root of ${size}, tile ${tile}, stored ${storedSize}`)
          assert.deepStrictEqual(tree.missing, [])
          assert.isTrue([...forRoot.read].every((i) => i >= storedSize), "the root reads no leaf under the stored size")
          for (let i = 0; i < size; i++) {
            const { read, source } = sourceOf(hashes, tileLevel, storedSize, stored, i)
            const t = treeOf(source)
            const path = t.path(i, size)
            assert.deepStrictEqual(path, expectedPaths[i], `leaf ${i} of ${size}, tile ${tile}, stored ${storedSize}`)
            assert.deepStrictEqual(t.missing, [])
            // What a proof reads: its tile and what follows the stored size, never more.
            for (const r of read) assert.isTrue(r >= storedSize || Math.floor(r / tile) === Math.floor(i / tile))
            // The stored nodes it asks for are the ones `neededNodes` finds without them.
            if (i % 7 !== 0 && i !== size - 1) continue
            const needed = neededNodes(source, (x) => x.path(i, size)).map(keyOf)
            assert.isAtMost(needed.length, 2 * Math.ceil(Math.log2(size + 1)))
            assert.isTrue(needed.every((k) => stored.has(k)))
          }
        }
      }
    }
  }, 240_000)

  it("a tampered stored node gives a path the true root refuses; a missing one is reported", () => {
    const size = 45
    const tileLevel = 2
    const hashes = entries(size)
    const expectedRoot = root(hashes)
    const stored = storedNodes(hashes, tileLevel, 40)
    const expectedPaths = hashes.map((_, i) => inclusionProof(i, hashes))
    let caught = 0
    for (const [key] of stored) {
      const tampered = new Map(stored)
      tampered.set(key, `0x${"ab".repeat(32)}`)
      for (let i = 0; i < size; i++) {
        const tree = treeOf(sourceOf(hashes, tileLevel, 40, tampered, i).source)
        const path = tree.path(i, size)
        // A path the node changed fails against the true root; any other is the true path.
        if (JSON.stringify(path) !== JSON.stringify(expectedPaths[i])) {
          assert.isFalse(verifyInclusion(i, size, hashes[i]!, path, expectedRoot))
          caught++
        }
      }
      const without = new Map(stored)
      without.delete(key)
      const tree = treeOf(sourceOf(hashes, tileLevel, 40, without).source)
      tree.root(size)
      const missing = tree.missing.map(keyOf)
      // The root uses the stored peaks only; a node inside a peak is never asked for.
      assert.isTrue(missing.length === 0 || (missing.length === 1 && missing[0] === key))
      if (missing.length === 0) assert.strictEqual(tree.root(size), expectedRoot)
    }
    // Every stored node is used by some path (so each tampering was caught by some proof).
    assert.isAtLeast(caught, stored.size)
  })

  it("extending: the nodes between two stored sizes, and the usable size of a length", () => {
    assert.deepStrictEqual(nodesBetween(2, 0, 16).map(keyOf), ["2:0", "2:1", "2:2", "2:3", "3:0", "3:1", "4:0"])
    assert.deepStrictEqual(nodesBetween(2, 8, 16).map(keyOf), ["2:2", "2:3", "3:1", "4:0"])
    assert.deepStrictEqual(nodesBetween(2, 8, 12).map(keyOf), ["2:2"])
    assert.deepStrictEqual(nodesBetween(2, 12, 12), [])
    assert.strictEqual(usableSize(2, 16, 13), 12)
    assert.strictEqual(usableSize(2, 8, 13), 8)
    assert.strictEqual(usableSize(8, 0, 1_000_000), 0)
    // A tree extended tile by tile stores exactly the nodes of one built at once.
    const tileLevel = 2
    const hashes = entries(70)
    let grown: Array<string> = []
    for (let s = 0; s + 4 <= 68; s += 4) grown = [...grown, ...nodesBetween(tileLevel, s, s + 4).map(keyOf)]
    assert.deepStrictEqual(new Set(grown), new Set(nodesBetween(tileLevel, 0, 68).map(keyOf)))
    assert.strictEqual(treeOf({ tileLevel, storedSize: 0, stored: () => undefined, entry: (i) => hashes[i] }).root(70), root(hashes))
  })
})
