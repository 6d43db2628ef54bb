/**
 * The audit log's canonical JSON is RFC 8785 from the `canonicalize` package
 * (src/audit/Chain.ts). Every entry stored in a database full of awkward values (written one
 * by one, in group-commit batches, with and without a recipient) hashes as stored, and its
 * encoding is byte for byte what the hand-written encoder it replaced wrote (kept below as the
 * reference), so no chain written before the swap breaks. Plus RFC 8785's own example.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Effect, Fiber, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { AuditChain, entryColumns, EntryRow, fromRow } from "../../src/audit/AuditChain.ts"
import { type AuditRecord, canonicalEncoding, canonicalJson, hashRecord } from "../../src/audit/Chain.ts"
import { TestDatabaseLive } from "../support/TestDatabase.ts"
import { holdHead } from "./groupSupport.ts"
import { declined, executed, insertAccount } from "./support.ts"

/** The encoder before the swap, verbatim: the reference every stored hash was made with. */
const referenceJson = (value: unknown): string => {
  if (value === null || typeof value === "string" || typeof value === "boolean") return JSON.stringify(value)
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new Error("canonical JSON: non-finite number")
    return JSON.stringify(value)
  }
  if (Array.isArray(value)) return `[${value.map(referenceJson).join(",")}]`
  if (typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${referenceJson(v)}`).join(",")}}`
  }
  throw new Error(`canonical JSON: unsupported value of type ${typeof value}`)
}

const referenceEncoding = (r: AuditRecord) =>
  referenceJson({
    accountId: r.accountId,
    action: r.action,
    actor: r.actor,
    amount: r.amount,
    auditNonce: r.auditNonce,
    chain: r.chain,
    chainId: r.chainId,
    declineId: r.declineId,
    declineReason: r.declineReason,
    delegationId: r.delegationId,
    id: r.id,
    index: r.index,
    operationId: r.operationId,
    prevHash: r.prevHash,
    provenance: r.provenance,
    status: r.status,
    timestamp: r.timestamp,
    token: r.token,
    txHash: r.txHash,
    ...(r.recipient === null ? {} : { recipient: r.recipient })
  })

describe("RFC 8785", () => {
  it("the specification's example (section 3.2.3) and number forms", () => {
    const input = JSON.parse(
      `{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],` +
        `"string": "\\u20ac$\\u000F\\u000aA'\\u0042\\u0022\\u005c\\\\\\"\\/", "literals": [null, true, false]}`
    )
    assert.strictEqual(
      canonicalJson(input),
      `{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\\u000f\\nA'B\\"\\\\\\\\\\"/"}`
    )
    assert.strictEqual(canonicalJson([1e21, 1e-7, -0, 5e-324, Number.MAX_VALUE]), "[1e+21,1e-7,0,5e-324,1.7976931348623157e+308]")
    assert.throws(() => canonicalJson({ a: Number.NaN }))
    assert.throws(() => canonicalJson({ a: Infinity }))
  })
})

const Live = AuditChain.layer.pipe(Layer.provideMerge(TestDatabaseLive({ maxConnections: 20 })))

layer(Live, { excludeTestServices: true })("stored entries under canonicalize", (it) => {
  it.effect("every stored entry hashes as stored, with exactly the reference encoding", () =>
    Effect.gen(function*() {
      const chain = yield* AuditChain
      const sql = yield* SqlClient.SqlClient
      const accounts = [yield* insertAccount(), yield* insertAccount()]
      const awkward = (account: string, tag: string) => [
        executed(account, `op_${tag}_1`, { actor: `a "quoted" \\ back\\slash\n\t\u0001 {x,y} NULL`, amount: 0.1 + 0.2 }),
        declined(account, `dec_${tag}_2`, { declineReason: "emoji 🦊 and \u2028 separator é \u007f", amount: 1e21, token: undefined }),
        executed(account, `op_${tag}_3`, { action: `"index":1,"prevHash":"0x00"`, amount: 1e-7, delegationId: undefined }),
        executed(account, `op_${tag}_4`, { status: "failed", declineReason: "null", txHash: undefined, amount: undefined }),
        executed(account, `op_${tag}_5`, { token: "NULL", recipient: "\"}", amount: -0.5, delegationId: "" }),
        executed(account, `op_${tag}_6`, { amount: Number.MAX_VALUE, recipient: "0x3333333333333333333333333333333333333333" }),
        executed(account, `op_${tag}_7`, { amount: 5e-324, actor: "\\\\\"\"", action: " padded ", chain: "ünïcödé" }),
        executed(account, `op_${tag}_8`, { amount: 123456789.123456789, actor: "\ud83d\ude00 \u00e9\u0301 \u200b" })
      ]
      // One by one on the first account.
      for (const input of awkward(accounts[0]!, "single")) yield* chain.append(input)
      // In one group-commit batch on the second (each queued behind a held head).
      const held = yield* holdHead(accounts[1]!, `op_batch_${accounts[1]}_held`)
      const fibers = yield* Effect.forEach(awkward(accounts[1]!, "batch"), (input) =>
        Effect.forkChild(chain.append(input), { startImmediately: true }))
      yield* held.release(true)
      yield* Fiber.joinAll(fibers)

      const rows = yield* sql`SELECT ${sql.literal(entryColumns)} FROM audit_entries ORDER BY account_id, chain_index`
      const stored = (yield* Schema.decodeUnknownEffect(Schema.Array(EntryRow))(rows)).map(fromRow)
      assert.isAtLeast(stored.length, 17)
      for (const e of stored) {
        assert.strictEqual(canonicalEncoding(e), referenceEncoding(e), `entry ${e.accountId}#${e.index}`)
        assert.strictEqual(hashRecord(e), e.hash, `entry ${e.accountId}#${e.index}`)
      }
      for (const account of accounts) {
        const verified = yield* chain.verify(account)
        assert.isTrue(verified.ok, `${account}: ${JSON.stringify(verified)}`)
      }
    }))
})
