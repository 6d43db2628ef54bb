/**
 * Verifying over HTTP alone (scripts/audit-verify-remote.ts): the verifier pages
 * `/activity` of a real server, rebuilds every hashed record from the response fields
 * and recomputes the hashes and links; an entry changed in SQL is named.
 */
import { execFile } from "node:child_process"
import { promisify } from "node:util"
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { AuditChain } from "../../src/audit/AuditChain.ts"
import { hashRecord } from "../../src/audit/Chain.ts"
import { verifyRemote } from "../../src/audit/RemoteVerify.ts"
import { recordOfEvent } from "../../src/audit/Wire.ts"
import { signIn } from "../../src/client/signIn.ts"
import { declined, executed } from "./support.ts"
import { client, TestServer, TestServerLive } from "../support/TestServer.ts"

const remoteCommand = (url: string, token: string, accountId: string) =>
  Effect.promise(() =>
    promisify(execFile)("node_modules/.bin/tsx", [
      "scripts/audit-verify-remote.ts", "--url", url, "--token", token, "--account", accountId
    ]).then(
      ({ stdout }) => ({ code: 0, stdout }),
      (e: { code?: number; stdout?: string }) => ({ code: e.code ?? -1, stdout: e.stdout ?? "" })
    )
  )

layer(TestServerLive(), { excludeTestServices: true })("verifying over HTTP", (it) => {
  it.effect("rebuilds every entry from the API, pages to the start, and names a tampered row", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const sql = yield* SqlClient.SqlClient
      const audit = yield* Effect.provide(AuditChain.useSync((a) => a), AuditChain.layer)
      const alice = yield* signIn(baseUrl, privateKeyToAccount(generatePrivateKey()))
      const account = alice.accounts[0]!.id
      yield* audit.append(executed(account, `op_1_${account}`))
      yield* audit.append(declined(account, `dcl_2_${account}`))
      yield* audit.append(executed(account, `op_3_${account}`, { recipient: "0x2222222222222222222222222222222222222222" }))
      yield* audit.append(executed(account, `op_4_${account}`, { amount: undefined, token: undefined, delegationId: undefined }))
      yield* audit.append(declined(account, `dcl_5_${account}`, { amount: 0.1 }))

      // Every hashed field is on the wire, prevHash always.
      const api = yield* client(alice.token)
      const one = yield* api.activity.get({ params: { eventId: (yield* audit.entries(account))[1]!.id } })
      assert.strictEqual(one.accountId, account)
      assert.strictEqual(one.index, 2)
      assert.strictEqual(one.declineId, `dcl_2_${account}`)
      assert.isUndefined(one.operationId)
      assert.isUndefined(one.hashedTimestamp)
      assert.strictEqual(hashRecord(recordOfEvent(one)), one.hash)

      // Pages of two: three requests, newest first, rebuilt oldest first.
      for (const accountId of [account, undefined]) {
        const run = yield* Effect.promise(() => verifyRemote({ url: baseUrl, token: alice.token, accountId, pageSize: 2 }))
        assert.isTrue(run.result.ok, JSON.stringify(run.result))
        assert.strictEqual(run.entries.length, 5)
        assert.deepStrictEqual(run.entries.map((e) => e.index), [1, 2, 3, 4, 5])
        assert.strictEqual(run.accountId, account)
      }

      // The command prints the same.
      const ok = yield* remoteCommand(baseUrl, alice.token, account)
      assert.strictEqual(ok.code, 0, ok.stdout)
      assert.include(ok.stdout, `${account}: ok, 5 entries, head `)

      // A changed amount is named at its position.
      yield* sql`UPDATE audit_entries SET amount = 1000 WHERE account_id = ${account} AND chain_index = 3`
      const tampered = yield* Effect.promise(() => verifyRemote({ url: baseUrl, token: alice.token, accountId: account }))
      assert.isFalse(tampered.result.ok)
      if (tampered.result.ok) return
      assert.strictEqual(tampered.result.broken.index, 3)
      assert.strictEqual(tampered.result.broken.kind, "hash")
      assert.match(tampered.result.broken.message, /entry #3 \(evt_.*\) stores hash 0x[0-9a-f]{64}, but its fields hash to/)
      const broken = yield* remoteCommand(baseUrl, alice.token, account)
      assert.strictEqual(broken.code, 1, broken.stdout)
      assert.include(broken.stdout, `${account}: BROKEN at entry #3 (hash)`)
      yield* sql`UPDATE audit_entries SET amount = 12.5 WHERE account_id = ${account} AND chain_index = 3`
      assert.isTrue((yield* Effect.promise(() => verifyRemote({ url: baseUrl, token: alice.token }))).result.ok)

      // A one-microsecond edit: the wire shows the exact hashed instant, so it is still seen.
      yield* sql`UPDATE audit_entries SET occurred_at = occurred_at + interval '1 microsecond'
                 WHERE account_id = ${account} AND chain_index = 2`
      const micro = yield* Effect.promise(() => verifyRemote({ url: baseUrl, token: alice.token, accountId: account }))
      assert.isFalse(micro.result.ok)
      if (!micro.result.ok) assert.strictEqual(micro.result.broken.index, 2)
      const shown = yield* api.activity.get({ params: { eventId: one.id } })
      assert.match(shown.hashedTimestamp ?? "", /\.\d{3}001Z$/)

      // A relinked entry (prev_hash) is named as a broken link.
      yield* sql`UPDATE audit_entries SET occurred_at = occurred_at - interval '1 microsecond'
                 WHERE account_id = ${account} AND chain_index = 2`
      yield* sql`UPDATE audit_entries SET prev_hash = ${`0x${"11".repeat(32)}`} WHERE account_id = ${account} AND chain_index = 4`
      const relinked = yield* Effect.promise(() => verifyRemote({ url: baseUrl, token: alice.token, accountId: account }))
      assert.isFalse(relinked.result.ok)
      if (!relinked.result.ok) {
        assert.strictEqual(relinked.result.broken.index, 4)
        assert.strictEqual(relinked.result.broken.kind, "link")
      }
    }), { timeout: 120_000 })
})
