/**
 * Anchoring on the local network: one transaction commits the Merkle root of the
 * heads that moved; `/activity/anchor` reports it; concurrent rounds anchor once.
 */
import { execFile } from "node:child_process"
import { promisify } from "node:util"
import { assert, describe, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { Hex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { Anchor } from "../../src/anchor/Anchor.ts"
import { ANCHOR_TAG, leafOf, merkleProof, merkleProofs, merkleRoot, verifyProof } from "../../src/audit/Merkle.ts"
import { root as entriesRoot } from "../../src/audit/Rfc6962.ts"
import { AuditChain } from "../../src/audit/AuditChain.ts"
import { hashRecord, verifyChain } from "../../src/audit/Chain.ts"
import { verifyRemote } from "../../src/audit/RemoteVerify.ts"
import { Chain } from "../../src/chain/Chain.ts"
import { signIn } from "../../src/client/signIn.ts"
import { executed } from "../audit/support.ts"
import { databaseUrl, testDatabaseName } from "../support/TestDatabase.ts"
import { client, TestServer, TestServerLive } from "../support/TestServer.ts"

const head = (n: number) => ({ accountId: `acc_${n}`, length: n, headHash: `0x${n.toString(16).padStart(64, "0")}` as Hex })

describe("Merkle tree", () => {
  it("a root over sorted leaves; every head has a proof; a changed head has none", () => {
    for (const size of [1, 2, 3, 5, 8, 13, 64, 65, 100]) {
      const heads = Array.from({ length: size }, (_, i) => head(i + 1))
      const root = merkleRoot(heads)
      // The pass writes every head's proof at once: each is the one `merkleProof` derives alone.
      const all = merkleProofs(heads)
      assert.strictEqual(all.size, size)
      for (const h of heads) assert.deepStrictEqual(all.get(leafOf(h)), merkleProof(heads, h))
      assert.strictEqual(merkleRoot([...heads].reverse()), root, "order of input does not matter")
      for (const h of heads) assert.isTrue(verifyProof(h, merkleProof(heads, h), root))
      assert.isFalse(verifyProof({ ...heads[0]!, length: 99 }, merkleProof(heads, heads[0]!), root))
    }
  })
})

const database = testDatabaseName()

/** `npm run audit:verify` against this file's database: exit status and output. */
const auditVerify = (accountId: string) =>
  Effect.promise(() =>
    promisify(execFile)("node_modules/.bin/tsx", ["scripts/audit-verify.ts", "--account", accountId], {
      env: { ...process.env, DATABASE_URL: databaseUrl(database) }
    }).then(
      ({ stdout }) => ({ code: 0, stdout }),
      (e: { code?: number; stdout?: string }) => ({ code: e.code ?? -1, stdout: e.stdout ?? "" })
    )
  )

layer(TestServerLive({ database: { name: database } }), { excludeTestServices: true })("anchoring", (it) => {
  it.effect("commits the moved heads on chain and /activity/anchor reports them", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const anchor = yield* Anchor
      const chain = yield* Chain
      const sql = yield* SqlClient.SqlClient
      const audit = yield* Effect.provide(AuditChain.useSync((a) => a), AuditChain.layer)
      assert.isTrue(anchor.available)

      const alice = yield* signIn(baseUrl, privateKeyToAccount(generatePrivateKey()))
      const bob = yield* signIn(baseUrl, privateKeyToAccount(generatePrivateKey()))
      const aliceAccount = alice.accounts[0]!.id
      const bobAccount = bob.accounts[0]!.id
      for (let i = 0; i < 3; i++) yield* audit.append(executed(aliceAccount, `op_a_${i}_${aliceAccount}`))
      yield* audit.append(executed(bobAccount, `op_b_0_${bobAccount}`))

      const api = yield* client(alice.token)
      const before = yield* api.activity.anchor()
      assert.deepStrictEqual(before, { available: true, unanchoredCount: 3, accounts: [{ accountId: aliceAccount, anchoredLength: 0 }] })

      // Two rounds at once (two processes, say): one anchors, the other finds the round taken or nothing moved.
      const rounds = yield* Effect.all([anchor.anchorNow, anchor.anchorNow], { concurrency: 2 })
      const records = rounds.flat()
      assert.strictEqual(records.length, 1)
      const record = records[0]!
      const mine = record.heads.filter((h) => h.accountId === aliceAccount || h.accountId === bobAccount)
      assert.strictEqual(mine.length, 2)

      // The transaction on chain carries the tag and the root of exactly the recorded heads.
      const tx = yield* Effect.promise(() => chain.client.getTransaction({ hash: record.txHash }))
      assert.strictEqual(tx.input, `${ANCHOR_TAG}${record.merkleRoot.slice(2)}`)
      assert.strictEqual(merkleRoot(record.heads), record.merkleRoot)
      const [aliceHead] = yield* sql<{ head_hash: string; length: number }>`
        SELECT head_hash, length FROM audit_heads WHERE account_id = ${aliceAccount}`
      // Alice's leaf: her head and the RFC 6962 root of her three entry hashes.
      const aliceLeaf = {
        accountId: aliceAccount,
        length: 3,
        headHash: aliceHead!.head_hash as Hex,
        entriesRoot: entriesRoot((yield* audit.entries(aliceAccount)).map((e) => e.hash))
      }
      assert.deepStrictEqual(record.heads.find((h) => h.accountId === aliceAccount), aliceLeaf)
      const proof = merkleProof(record.heads, aliceLeaf)
      assert.isTrue(verifyProof(aliceLeaf, proof, record.merkleRoot))
      assert.isFalse(verifyProof({ ...aliceLeaf, entriesRoot: undefined }, proof, record.merkleRoot))

      const after = yield* api.activity.anchor()
      const { anchoredAt, ...rest } = after
      assert.deepStrictEqual(rest, {
        available: true,
        unanchoredCount: 0,
        anchoredHead: aliceHead!.head_hash,
        anchoredLength: 3,
        merkleRoot: record.merkleRoot,
        txHash: record.txHash,
        blockNumber: record.blockNumber.toString(),
        // Each of Alice's accounts and the length the anchor covers: her three entries have proofs.
        accounts: [{ accountId: aliceAccount, anchoredLength: 3 }]
      })
      assert.match(anchoredAt ?? "", /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)

      // Nothing moved: no new anchor. One more entry: one unanchored.
      assert.strictEqual((yield* anchor.anchorNow).length, 0)
      yield* audit.append(executed(aliceAccount, `op_a_3_${aliceAccount}`))
      const moved = yield* api.activity.anchor()
      assert.strictEqual(moved.unanchoredCount, 1)
      assert.strictEqual(moved.anchoredHead, aliceHead!.head_hash)
      assert.deepStrictEqual(moved.accounts, [{ accountId: aliceAccount, anchoredLength: 3 }], "the fourth entry has no proof yet")
    }))

  it.effect("a history rewritten after its anchor is named by verify and refused by the anchorer", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const anchor = yield* Anchor
      const sql = yield* SqlClient.SqlClient
      const audit = yield* Effect.provide(AuditChain.useSync((a) => a), AuditChain.layer)
      const carol = yield* signIn(baseUrl, privateKeyToAccount(generatePrivateKey()))
      const account = carol.accounts[0]!.id
      yield* audit.append(executed(account, `op_c_1_${account}`))
      assert.isAbove((yield* anchor.anchorNow).length, 0)
      yield* audit.append(executed(account, `op_c_2_${account}`, { amount: 10 }))
      yield* audit.append(executed(account, `op_c_3_${account}`))
      const anchored = yield* anchor.anchorNow
      assert.isAbove(anchored.length, 0)
      const before = yield* audit.entries(account)
      const anchoredHead = before[2]!.hash

      // The attack: #2's amount 10 → 1000, #2 and #3 re-hashed, the head moved, all at length 3.
      const e2 = { ...before[1]!, amount: 1000 }
      const h2 = hashRecord(e2)
      const h3 = hashRecord({ ...before[2]!, prevHash: h2 })
      yield* sql`UPDATE audit_entries SET amount = 1000, hash = ${h2} WHERE id = ${e2.id}`
      yield* sql`UPDATE audit_entries SET prev_hash = ${h2}, hash = ${h3} WHERE id = ${before[2]!.id}`
      yield* sql`UPDATE audit_heads SET head_hash = ${h3} WHERE account_id = ${account}`
      const rewritten = yield* audit.entries(account)
      const [head] = yield* sql<{ length: number; head_hash: string; executed_count: number }>`
        SELECT length, head_hash, executed_count FROM audit_heads WHERE account_id = ${account}`
      const walk = verifyChain(account, rewritten, { length: head!.length, headHash: head!.head_hash, executedCount: head!.executed_count })
      assert.isTrue(walk.ok, "the walk alone cannot see it")

      // Verification compares with every anchored head and names the rewrite.
      const verified = yield* audit.verify(account)
      assert.isFalse(verified.ok)
      if (verified.ok) return
      assert.strictEqual(verified.broken.kind, "rewrite")
      assert.strictEqual(verified.broken.index, 2)
      assert.strictEqual(
        verified.broken.message,
          `an entry in #2..#3 was rewritten after it was anchored (the anchor at length 1 still matches): ` +
          `anchored at length 3 with head ${anchoredHead}, the chain now has ${h3} at #3`
      )
      assert.strictEqual(verified.length, 1)
      // Over HTTP alone, the default account's chain is compared with its anchored head too.
      const remote = yield* Effect.promise(() => verifyRemote({ url: baseUrl, token: carol.token }))
      assert.isFalse(remote.result.ok)
      if (!remote.result.ok) {
        assert.strictEqual(remote.result.broken.message, `anchored at length 3 with head ${anchoredHead}, the chain now has ${h3} at #3`)
      }
      const command = yield* auditVerify(account)
      assert.strictEqual(command.code, 1, command.stdout)
      assert.include(command.stdout, `${account}: BROKEN at entry #2 (rewrite): an entry in #2..#3 was rewritten`)

      // /activity/anchor reports the rewrite (a field of its own) and counts the entries no anchor covers
      // any more (#2 and #3), no longer "0 unanchored" under the old head as if all were well.
      const api = yield* client(carol.token)
      const status = yield* api.activity.anchor()
      assert.deepStrictEqual(status.rewrite, {
        accountId: account,
        from: 2,
        anchoredLength: 3,
        anchoredHead,
        current: h3,
        message: verified.broken.message
      })
      assert.strictEqual(status.unanchoredCount, 2)
      assert.deepStrictEqual(status.accounts, [{ accountId: account, anchoredLength: 1 }], "only #1, before the rewrite, still has a proof")

      // The anchorer picks the changed head up, and refuses it.
      const [stateBefore] = yield* sql<{ head_hash: string; anchor_id: string }>`
        SELECT head_hash, anchor_id FROM audit_anchor_state WHERE account_id = ${account}`
      const round = yield* anchor.anchorRound
      const refusal = round.refused.find((r) => r.accountId === account)
      assert.isDefined(refusal)
      assert.strictEqual(refusal!.anchoredHead, anchoredHead)
      assert.strictEqual(refusal!.current, h3)
      assert.match(refusal!.message, /anchored at length 3 with head 0x[0-9a-f]{64}, the chain now has 0x[0-9a-f]{64} at #3/)
      assert.isFalse(round.anchored.some((r) => r.heads.some((h) => h.accountId === account)))
      const [stateAfter] = yield* sql<{ head_hash: string; anchor_id: string }>`
        SELECT head_hash, anchor_id FROM audit_anchor_state WHERE account_id = ${account}`
      assert.deepStrictEqual(stateAfter, stateBefore)
      assert.strictEqual(stateAfter!.head_hash, anchoredHead)

      // Appending on top of the rewrite does not launder it: still refused, still named.
      yield* audit.append(executed(account, `op_c_4_${account}`))
      assert.isTrue((yield* anchor.anchorRound).refused.some((r) => r.accountId === account))
      const later = yield* api.activity.anchor()
      assert.strictEqual(later.rewrite?.from, 2)
      assert.strictEqual(later.unanchoredCount, 3)
      const again = yield* audit.verify(account)
      assert.isTrue(!again.ok && again.broken.kind === "rewrite")
    }), { timeout: 120_000 })
})
