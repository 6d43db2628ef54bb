/**
 * Anchoring on the local network: one transaction commits the Merkle root of the
 * heads that moved; `/activity/anchor` reports it; concurrent rounds anchor once.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Effect, Option } from "effect"
import { SqlClient } from "effect/sql"
import type { Hex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { Anchor } from "../../src/anchor/Anchor.ts"
import { ANCHOR_TAG, merkleProof, merkleRoot, verifyProof } from "../../src/anchor/Merkle.ts"
import { AuditChain } from "../../src/audit/AuditChain.ts"
import { Chain } from "../../src/chain/Chain.ts"
import { signIn } from "../../src/client/signIn.ts"
import { executed } from "../audit/support.ts"
import { client, TestServer, TestServerLive } from "../support/TestServer.ts"

const head = (n: number) => ({ accountId: `acc_${n}`, length: n, headHash: `0x${n.toString(16).padStart(64, "0")}` as Hex })

describe("Merkle tree", () => {
  it("a root over sorted leaves; every head has a proof; a changed head has none", () => {
    for (const size of [1, 2, 3, 5, 8, 13]) {
      const heads = Array.from({ length: size }, (_, i) => head(i + 1))
      const root = merkleRoot(heads)
      assert.strictEqual(merkleRoot([...heads].reverse()), root, "order of input does not matter")
      for (const h of heads) assert.isTrue(verifyProof(h, merkleProof(heads, h), root))
      assert.isFalse(verifyProof({ ...heads[0]!, length: 99 }, merkleProof(heads, heads[0]!), root))
    }
  })
})

layer(TestServerLive(), { excludeTestServices: true })("anchoring", (it) => {
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
      assert.deepStrictEqual(before, { available: true, unanchoredCount: 3 })

      // Two rounds at once (two processes, say): one anchors, the other finds the round taken or nothing moved.
      const rounds = yield* Effect.all([anchor.anchorNow, anchor.anchorNow], { concurrency: 2 })
      const records = rounds.filter(Option.isSome).map((r) => r.value)
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
      const proof = merkleProof(record.heads, { accountId: aliceAccount, length: aliceHead!.length, headHash: aliceHead!.head_hash as Hex })
      assert.isTrue(verifyProof({ accountId: aliceAccount, length: 3, headHash: aliceHead!.head_hash as Hex }, proof, record.merkleRoot))

      const after = yield* api.activity.anchor()
      assert.deepStrictEqual(after, { available: true, unanchoredCount: 0, anchoredHead: aliceHead!.head_hash })

      // Nothing moved: no new anchor. One more entry: one unanchored.
      assert.isTrue(Option.isNone(yield* anchor.anchorNow))
      yield* audit.append(executed(aliceAccount, `op_a_3_${aliceAccount}`))
      const moved = yield* api.activity.anchor()
      assert.strictEqual(moved.unanchoredCount, 1)
      assert.strictEqual(moved.anchoredHead, aliceHead!.head_hash)
    }))
})
