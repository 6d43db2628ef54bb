/**
 * RFC 6962 Merkle trees (RFC 9162 §2.1) over an account's audit entry hashes: the
 * tree whose root is anchored with the account's head (Merkle.ts), and the O(log n)
 * audit paths `GET /activity/{eventId}/proof` serves. Pure; SHA-256 throughout.
 *
 *   leaf hash = SHA-256(0x00 || entry hash bytes)
 *   node hash = SHA-256(0x01 || left || right)
 *   MTH(D[n]) = MTH(D[0:k]) and MTH(D[k:n]) joined, k the largest power of two < n
 *
 * Hashes are `0x` + 64 lowercase hex characters on the way in and out.
 */
import { createHash } from "node:crypto"
import { hexToBytes } from "viem"

export type Hex32 = `0x${string}`

const HEX32 = /^0x[0-9a-fA-F]{64}$/

export const isHex32 = (value: unknown): value is Hex32 => typeof value === "string" && HEX32.test(value)

// Plain bytes (no Buffer): the console checks proofs in the browser with this module.
const bytes = (hex: string): Uint8Array => {
  if (!isHex32(hex)) throw new Error(`not a 32-byte hex value: ${hex}`)
  return hexToBytes(hex as Hex32)
}

const sha256 = (...parts: ReadonlyArray<Uint8Array>): Hex32 => {
  const h = createHash("sha256")
  for (const p of parts) h.update(p)
  return `0x${h.digest("hex")}`
}

/** The RFC 6962 hash of the tree with no leaves: SHA-256 of the empty string. */
export const EMPTY_ROOT: Hex32 = sha256()

/** The leaf hash of one entry (its `hash`, 32 bytes). */
export const leafHash = (entryHash: string): Hex32 => sha256(Uint8Array.of(0), bytes(entryHash))

export const nodeHash = (left: string, right: string): Hex32 => sha256(Uint8Array.of(1), bytes(left), bytes(right))

/** The largest power of two strictly below `n` (n ≥ 2). */
const split = (n: number): number => {
  let k = 1
  while (k * 2 < n) k *= 2
  return k
}

/** MTH over already-hashed leaves. */
const rootOfLeaves = (leaves: ReadonlyArray<Hex32>): Hex32 => {
  if (leaves.length === 0) return EMPTY_ROOT
  if (leaves.length === 1) return leaves[0]!
  const k = split(leaves.length)
  return nodeHash(rootOfLeaves(leaves.slice(0, k)), rootOfLeaves(leaves.slice(k)))
}

/** The tree head of these entry hashes, in chain order. */
export const root = (entryHashes: ReadonlyArray<string>): Hex32 => rootOfLeaves(entryHashes.map(leafHash))

const pathOf = (m: number, leaves: ReadonlyArray<Hex32>): Array<Hex32> => {
  if (leaves.length <= 1) return []
  const k = split(leaves.length)
  return m < k
    ? [...pathOf(m, leaves.slice(0, k)), rootOfLeaves(leaves.slice(k))]
    : [...pathOf(m - k, leaves.slice(k)), rootOfLeaves(leaves.slice(0, k))]
}

/** The audit path PATH(index, D[n]) of the leaf at 0-based `index`: ⌈log2 n⌉ hashes at most, leaf side first. */
export const inclusionProof = (index: number, entryHashes: ReadonlyArray<string>): Array<Hex32> => {
  if (!Number.isSafeInteger(index) || index < 0 || index >= entryHashes.length) {
    throw new Error(`leaf index ${index} is outside a tree of ${entryHashes.length}`)
  }
  return pathOf(index, entryHashes.map(leafHash))
}

/**
 * RFC 9162 §2.1.3.2: does `path` prove the entry hash `entryHash` at 0-based `index` in
 * the tree of `size` leaves whose root is `expectedRoot`? Any malformed input is `false`.
 */
export const verifyInclusion = (
  index: number,
  size: number,
  entryHash: string,
  path: ReadonlyArray<string>,
  expectedRoot: string
): boolean => {
  if (!Number.isSafeInteger(index) || !Number.isSafeInteger(size) || index < 0 || index >= size) return false
  if (!isHex32(entryHash) || !isHex32(expectedRoot) || !path.every(isHex32)) return false
  let fn = index
  let sn = size - 1
  let r: Hex32 = leafHash(entryHash)
  for (const p of path) {
    if (sn === 0) return false
    if (fn % 2 === 1 || fn === sn) {
      r = nodeHash(p, r)
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2)
          sn = Math.floor(sn / 2)
        }
      }
    } else {
      r = nodeHash(r, p)
    }
    fn = Math.floor(fn / 2)
    sn = Math.floor(sn / 2)
  }
  return sn === 0 && r.toLowerCase() === expectedRoot.toLowerCase()
}
