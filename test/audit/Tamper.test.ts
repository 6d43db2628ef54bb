/**
 * The tamper matrix: every stored field of an entry changed directly in SQL, entries
 * deleted and reordered; each change is named by verification (the service's
 * `verify` and the `audit:verify` command).
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { execFile } from "node:child_process"
import * as path from "node:path"
import { AuditChain } from "../../src/audit/AuditChain.ts"
import { hashRecord } from "../../src/audit/Chain.ts"
import { databaseUrl, TestDatabaseLive, testDatabaseName } from "../support/TestDatabase.ts"
import { declined, executed, insertAccount } from "./support.ts"

const dbName = testDatabaseName()
const Live = AuditChain.layer.pipe(Layer.provideMerge(TestDatabaseLive({ name: dbName })))

/** A five-entry chain: executed, declined, executed (every field set), failed, executed. */
const buildChain = Effect.gen(function*() {
  const chain = yield* AuditChain
  const account = yield* insertAccount()
  const tag = crypto.randomUUID().slice(0, 8)
  const entries = [
    yield* chain.append(executed(account, `op_1_${tag}`)),
    yield* chain.append(declined(account, `dec_2_${tag}`)),
    yield* chain.append(executed(account, `op_3_${tag}`, { amount: 0.1, delegationId: "del_3", actor: "0x2222222222222222222222222222222222222222", recipient: "0x3333333333333333333333333333333333333333" })),
    yield* chain.append(executed(account, `op_4_${tag}`, { status: "failed", declineReason: "reverted" })),
    yield* chain.append(executed(account, `op_5_${tag}`))
  ]
  return { account, entries }
})

interface Case {
  readonly name: string
  /** SQL run against the chain; `$id(n)` is entry n's id, `$account` the chain's account. */
  readonly tamper: (ctx: { account: string; ids: ReadonlyArray<string>; other: string }) => string
  readonly brokenAt: number
  readonly kind?: string
}

const at = (n: number, set: string): Case["tamper"] => ({ ids }) => `UPDATE audit_entries SET ${set} WHERE id = '${ids[n - 1]}'`

const cases: ReadonlyArray<Case> = [
  { name: "id", tamper: at(3, "id = id || 'x'"), brokenAt: 3, kind: "hash" },
  { name: "account_id (moved to another account)", tamper: ({ ids, other }) => `UPDATE audit_entries SET account_id = '${other}' WHERE id = '${ids[2]}'`, brokenAt: 3, kind: "missing" },
  { name: "chain_index", tamper: at(3, "chain_index = 99"), brokenAt: 3, kind: "missing" },
  { name: "operation_id", tamper: at(3, "operation_id = operation_id || 'x'"), brokenAt: 3, kind: "hash" },
  { name: "decline_id", tamper: at(2, "decline_id = decline_id || 'x'"), brokenAt: 2, kind: "hash" },
  { name: "decline_id swapped for operation_id", tamper: at(2, "operation_id = decline_id, decline_id = NULL"), brokenAt: 2, kind: "hash" },
  { name: "occurred_at (one second)", tamper: at(3, "occurred_at = occurred_at + interval '1 second'"), brokenAt: 3, kind: "hash" },
  { name: "occurred_at (one microsecond)", tamper: at(3, "occurred_at = occurred_at + interval '1 microsecond'"), brokenAt: 3, kind: "hash" },
  { name: "actor", tamper: at(3, "actor = 'owner'"), brokenAt: 3, kind: "hash" },
  { name: "action", tamper: at(3, "action = 'swap'"), brokenAt: 3, kind: "hash" },
  { name: "amount", tamper: at(3, "amount = 0.10000000000000002"), brokenAt: 3, kind: "hash" },
  { name: "amount removed", tamper: at(3, "amount = NULL"), brokenAt: 3, kind: "hash" },
  { name: "token", tamper: at(3, "token = 'USDT'"), brokenAt: 3, kind: "hash" },
  { name: "token removed", tamper: at(3, "token = NULL"), brokenAt: 3, kind: "hash" },
  { name: "chain", tamper: at(3, "chain = 'base'"), brokenAt: 3, kind: "hash" },
  { name: "chain_id", tamper: at(3, "chain_id = 8453"), brokenAt: 3, kind: "hash" },
  { name: "status", tamper: at(4, "status = 'executed'"), brokenAt: 4, kind: "hash" },
  { name: "decline_reason", tamper: at(2, "decline_reason = 'per_action_exceeded'"), brokenAt: 2, kind: "hash" },
  { name: "decline_reason added", tamper: at(3, "decline_reason = 'cap_exceeded'"), brokenAt: 3, kind: "hash" },
  { name: "provenance", tamper: at(2, "provenance = 'onchain'"), brokenAt: 2, kind: "hash" },
  { name: "tx_hash", tamper: at(3, `tx_hash = '0x${"cd".repeat(32)}'`), brokenAt: 3, kind: "hash" },
  { name: "tx_hash added", tamper: at(2, `tx_hash = '0x${"cd".repeat(32)}'`), brokenAt: 2, kind: "hash" },
  { name: "audit_nonce", tamper: at(3, "audit_nonce = 7"), brokenAt: 3, kind: "hash" },
  { name: "audit_nonce added", tamper: at(2, "audit_nonce = 2"), brokenAt: 2, kind: "hash" },
  { name: "delegation_id", tamper: at(3, "delegation_id = 'del_other'"), brokenAt: 3, kind: "hash" },
  { name: "delegation_id removed", tamper: at(3, "delegation_id = NULL"), brokenAt: 3, kind: "hash" },
  { name: "recipient", tamper: at(3, "recipient = '0x4444444444444444444444444444444444444444'"), brokenAt: 3, kind: "hash" },
  { name: "recipient removed", tamper: at(3, "recipient = NULL"), brokenAt: 3, kind: "hash" },
  { name: "recipient added", tamper: at(5, "recipient = '0x4444444444444444444444444444444444444444'"), brokenAt: 5, kind: "hash" },
  { name: "prev_hash", tamper: at(3, `prev_hash = '0x${"00".repeat(31)}01'`), brokenAt: 3, kind: "link" },
  { name: "hash", tamper: at(3, `hash = '0x${"11".repeat(32)}'`), brokenAt: 3, kind: "hash" },
  { name: "a middle entry deleted", tamper: ({ ids }) => `DELETE FROM audit_entries WHERE id = '${ids[2]}'`, brokenAt: 3, kind: "missing" },
  { name: "the first entry deleted", tamper: ({ ids }) => `DELETE FROM audit_entries WHERE id = '${ids[0]}'`, brokenAt: 1, kind: "missing" },
  { name: "the last entry deleted", tamper: ({ ids }) => `DELETE FROM audit_entries WHERE id = '${ids[4]}'`, brokenAt: 5, kind: "head" },
  {
    name: "two entries reordered",
    tamper: ({ ids }) =>
      `UPDATE audit_entries SET chain_index = -1 WHERE id = '${ids[1]}';
       UPDATE audit_entries SET chain_index = 2 WHERE id = '${ids[2]}';
       UPDATE audit_entries SET chain_index = 3 WHERE id = '${ids[1]}'`,
    brokenAt: 2,
    kind: "link"
  },
  {
    name: "two entries' contents swapped (ids and positions kept)",
    tamper: ({ ids }) =>
      `UPDATE audit_entries a SET amount = b.amount, actor = b.actor FROM audit_entries b
       WHERE (a.id, b.id) IN (('${ids[0]}', '${ids[2]}'), ('${ids[2]}', '${ids[0]}'))`,
    brokenAt: 1,
    kind: "hash"
  },
  {
    name: "the head row moved back",
    tamper: ({ account }) => `UPDATE audit_heads SET length = 4 WHERE account_id = '${account}'`,
    brokenAt: 5,
    kind: "head"
  }
]

const runSql = (statements: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    for (const s of statements.split(";").map((x) => x.trim()).filter((x) => x !== "")) yield* sql.unsafe(s)
  }).pipe(Effect.orDie)

const verifyCommand = (account: string) =>
  Effect.callback<{ code: number; stdout: string }>((resume) => {
    execFile(
      path.resolve(import.meta.dirname, "../../node_modules/.bin/tsx"),
      [path.resolve(import.meta.dirname, "../../scripts/audit-verify.ts"), "--account", account],
      { env: { ...process.env, DATABASE_URL: databaseUrl(dbName) } },
      (error, stdout) => resume(Effect.succeed({ code: error === null ? 0 : Number(error.code ?? 1), stdout }))
    )
  })

layer(Live, { excludeTestServices: true })("tamper matrix", (it) => {
  it.effect("an untouched chain verifies", () =>
    Effect.gen(function*() {
      const chain = yield* AuditChain
      const { account, entries } = yield* buildChain
      const verdict = yield* chain.verify(account)
      assert.deepStrictEqual(verdict, { ok: true, length: 5, headHash: entries[4]!.hash })
    }))

  for (const c of cases) {
    it.effect(`detects: ${c.name}`, () =>
      Effect.gen(function*() {
        const chain = yield* AuditChain
        const { account, entries } = yield* buildChain
        const other = yield* insertAccount()
        yield* runSql(c.tamper({ account, ids: entries.map((e) => e.id), other }))
        const verdict = yield* chain.verify(account)
        assert.isFalse(verdict.ok, `${c.name} went unnoticed`)
        if (!verdict.ok) {
          assert.strictEqual(verdict.broken.index, c.brokenAt, verdict.broken.message)
          if (c.kind !== undefined) assert.strictEqual(verdict.broken.kind, c.kind, verdict.broken.message)
          if (c.kind !== "head") assert.strictEqual(verdict.length, c.brokenAt - 1)
        }
      }))
  }

  it.effect("re-hashing a rewritten entry only moves the break to the next link", () =>
    Effect.gen(function*() {
      const chain = yield* AuditChain
      const { account, entries } = yield* buildChain
      const forged = { ...entries[2]!, amount: 1_000_000 }
      yield* runSql(
        `UPDATE audit_entries SET amount = 1000000, hash = '${hashRecord(forged)}' WHERE id = '${forged.id}'`
      )
      const verdict = yield* chain.verify(account)
      assert.isFalse(verdict.ok)
      if (!verdict.ok) {
        assert.strictEqual(verdict.broken.index, 4)
        assert.strictEqual(verdict.broken.kind, "link")
      }
    }))

  describe("the audit:verify command", () => {
    it.effect("reports an intact chain with exit status 0 and a tampered one with 1, naming the entry", () =>
      Effect.gen(function*() {
        const { account, entries } = yield* buildChain
        const intact = yield* verifyCommand(account)
        assert.strictEqual(intact.code, 0, intact.stdout)
        assert.include(intact.stdout, `${account}: ok, 5 entries, head ${entries[4]!.hash}`)

        yield* runSql(`UPDATE audit_entries SET amount = 13 WHERE id = '${entries[2]!.id}'`)
        const tampered = yield* verifyCommand(account)
        assert.strictEqual(tampered.code, 1, tampered.stdout)
        assert.include(tampered.stdout, `BROKEN at entry #3`)
        assert.include(tampered.stdout, entries[2]!.id)
      }), { timeout: 60_000 })
  })
})
