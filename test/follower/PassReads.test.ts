/**
 * The pass's kept chain reads (src/follower/PassReads.ts): each read once for the pass, a failed
 * read not kept (the transaction's ask reads again), and reads made after `seal` counted as late.
 */
import { assert, describe, it } from "@effect/vitest"
import type { PublicClient } from "viem"
import { makePassReads } from "../../src/follower/PassReads.ts"

const hash = `0x${"ab".repeat(32)}` as const

describe("PassReads", () => {
  it("reads each receipt once, reads again after a failure, and counts reads made after the seal", async () => {
    const calls: Array<string> = []
    let failNext = true
    const client = {
      getTransactionReceipt: async ({ hash }: { hash: string }) => {
        calls.push(`receipt:${hash}`)
        if (failNext) {
          failNext = false
          throw new Error("the node timed out")
        }
        return { logs: [], transactionHash: hash }
      },
      getTransaction: async ({ hash }: { hash: string }) => {
        calls.push(`tx:${hash}`)
        return { to: null, input: "0x", hash }
      }
    } as unknown as PublicClient
    const reads = makePassReads(client)
    const failed = await reads.receipt(hash).then(() => "answered", (e: Error) => e.message)
    assert.strictEqual(failed, "the node timed out")
    // The failure was not kept: asked again, read again; then kept (the upper-case hash is the same).
    await reads.receipt(hash)
    await reads.receipt(hash.toUpperCase().replace("0X", "0x") as `0x${string}`)
    assert.deepStrictEqual(calls, [`receipt:${hash}`, `receipt:${hash}`])
    reads.seal()
    await reads.receipt(hash)
    assert.strictEqual(reads.late(), 0)
    await reads.transaction(hash)
    await reads.transaction(hash)
    assert.strictEqual(reads.late(), 1)
    assert.deepStrictEqual(calls.slice(2), [`tx:${hash}`])
  })
})
