/**
 * RFC 6962 inclusion proofs, in the style of transparency-dev/merkle's proof tests:
 * every leaf of every tree of 1..40 leaves proves, and every corruption of a proof
 * (each element bit-flipped, index ±1, size ×2 and ÷2, an element removed or
 * inserted, wrong or swapped roots, garbage appended) fails.
 */
import { createHash } from "node:crypto"
import { assert, describe, it } from "@effect/vitest"
import { EMPTY_ROOT, inclusionProof, leafHash, nodeHash, root, verifyInclusion } from "../../src/audit/Rfc6962.ts"

const sha = (...parts: Array<Buffer>) => `0x${createHash("sha256").update(Buffer.concat(parts)).digest("hex")}`
const entry = (i: number) => sha(Buffer.from(`entry ${i}`))
const entries = (n: number) => Array.from({ length: n }, (_, i) => entry(i))
const flip = (hex: string, bit: number) => {
  const b = Buffer.from(hex.slice(2), "hex")
  b[bit >> 3]! ^= 1 << (bit & 7)
  return `0x${b.toString("hex")}`
}

describe("RFC 6962", () => {
  it("hashes leaves and nodes with the 0x00 / 0x01 prefixes", () => {
    const e = entry(0)
    assert.strictEqual(leafHash(e), sha(Buffer.of(0), Buffer.from(e.slice(2), "hex")))
    const [a, b] = [leafHash(entry(1)), leafHash(entry(2))]
    assert.strictEqual(nodeHash(a, b), sha(Buffer.of(1), Buffer.from(a.slice(2), "hex"), Buffer.from(b.slice(2), "hex")))
    assert.strictEqual(EMPTY_ROOT, sha())
    assert.strictEqual(root([]), EMPTY_ROOT)
  })

  it("splits a tree at the largest power of two below its size", () => {
    const l = entries(7).map(leafHash)
    const expected = nodeHash(
      nodeHash(nodeHash(l[0]!, l[1]!), nodeHash(l[2]!, l[3]!)),
      nodeHash(nodeHash(l[4]!, l[5]!), l[6]!)
    )
    assert.strictEqual(root(entries(7)), expected)
    const l5 = entries(5).map(leafHash)
    assert.strictEqual(root(entries(5)), nodeHash(nodeHash(nodeHash(l5[0]!, l5[1]!), nodeHash(l5[2]!, l5[3]!)), l5[4]!))
  })

  it("every leaf of trees of 1..40 proves, with at most ceil(log2 n) hashes", () => {
    for (let size = 1; size <= 40; size++) {
      const all = entries(size)
      const r = root(all)
      for (let i = 0; i < size; i++) {
        const path = inclusionProof(i, all)
        assert.isAtMost(path.length, Math.ceil(Math.log2(size)))
        assert.isTrue(verifyInclusion(i, size, all[i]!, path, r), `size ${size} index ${i}`)
      }
    }
  })

  it("every corruption of every proof fails", () => {
    let probes = 0
    for (let size = 1; size <= 40; size++) {
      const all = entries(size)
      const r = root(all)
      const otherRoot = root(entries(size + 1))
      for (let i = 0; i < size; i++) {
        const path = inclusionProof(i, all)
        const leaf = all[i]!
        const bad: Array<[string, number, number, string, ReadonlyArray<string>, string]> = [
          ["index - 1", i - 1, size, leaf, path, r],
          ["index + 1", i + 1, size, leaf, path, r],
          ["index ^ 2", i ^ 2, size, leaf, path, r],
          ["size * 2", i, size * 2, leaf, path, r],
          ["size / 2", i, Math.floor(size / 2), leaf, path, r],
          ["wrong leaf", i, size, entry(1000), path, r],
          ["a neighbour's leaf", i, size, size === 1 ? entry(1001) : all[(i + 1) % size]!, path, r],
          ["empty root", i, size, leaf, path, EMPTY_ROOT],
          ["wrong root", i, size, leaf, path, flip(r, 0)],
          ["another tree's root", i, size, leaf, path, otherRoot],
          ["leaf and root swapped", i, size, r, path, leaf],
          ["trailing root", i, size, leaf, [...path, r], r],
          ["trailing garbage", i, size, leaf, [...path, "0x"], r],
          ["preceding root", i, size, leaf, [r, ...path], r],
          ["preceding garbage", i, size, leaf, ["0x", ...path], r]
        ]
        for (let j = 0; j < path.length; j++) {
          for (const bit of [0, 3, 255]) {
            bad.push([`proof[${j}] bit ${bit}`, i, size, leaf, path.map((p, k) => (k === j ? flip(p, bit) : p)), r])
          }
          bad.push([`proof[${j}] removed`, i, size, leaf, path.filter((_, k) => k !== j), r])
          bad.push([`proof[${j}] duplicated`, i, size, leaf, [...path.slice(0, j + 1), path[j]!, ...path.slice(j + 1)], r])
          bad.push([`a leaf inserted before proof[${j}]`, i, size, leaf, [...path.slice(0, j), leafHash(leaf), ...path.slice(j)], r])
        }
        if (path.length > 0) bad.push(["trailing bytes", i, size, leaf, path.map((p, j) => (j === path.length - 1 ? `${p}00` : p)), r])
        if (path.length > 1) bad.push(["proof reversed", i, size, leaf, [...path].reverse(), r])
        if (i > 0 && i + 1 < size) bad.push(["the next leaf's proof", i, size, leaf, inclusionProof(i + 1, all), r])
        for (const [name, index, n, l, p, expected] of bad) {
          probes++
          assert.isFalse(verifyInclusion(index, n, l, p, expected), `size ${size} index ${i}: ${name} verified`)
        }
      }
    }
    assert.isAbove(probes, 10_000)
  })

  it("refuses indexes outside the tree", () => {
    assert.throws(() => inclusionProof(3, entries(3)))
    assert.throws(() => inclusionProof(-1, entries(3)))
    assert.isFalse(verifyInclusion(0, 0, entry(0), [], EMPTY_ROOT))
    assert.isFalse(verifyInclusion(0.5, 2, entry(0), [], EMPTY_ROOT))
  })
})
