/**
 * `createHash("sha256")` of `node:crypto` for the browser bundle (the audit hashes use it),
 * over @noble/hashes (viem's own dependency): update with bytes or UTF-8 text, digest as hex.
 */
import { sha256 } from "@noble/hashes/sha2.js"
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils.js"

export const createHash = (algorithm: string) => {
  if (algorithm !== "sha256") throw new Error(`unsupported hash ${algorithm}`)
  const h = sha256.create()
  const self = {
    update(data: Uint8Array | string) {
      h.update(typeof data === "string" ? utf8ToBytes(data) : data)
      return self
    },
    digest(encoding: "hex") {
      if (encoding !== "hex") throw new Error(`unsupported digest encoding ${encoding}`)
      return bytesToHex(h.digest())
    }
  }
  return self
}
