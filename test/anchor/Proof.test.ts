/**
 * Per-entry inclusion proofs end to end: entries appended, anchored on the local chain,
 * `GET /activity/{eventId}/proof` fetched over HTTP and verified against the chain by the
 * verifier's core (and its command); a tampered proof fails; an unanchored entry is a 409.
 */
import { execFile } from "node:child_process"
import { promisify } from "node:util"
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { Anchor } from "../../src/anchor/Anchor.ts"
import { verifyProofOnChain } from "../../src/anchor/ProofVerify.ts"
import { SqlClient } from "effect/sql"
import { AuditChain } from "../../src/audit/AuditChain.ts"
import { inclusionProof } from "../../src/audit/Rfc6962.ts"
import { TILE, TILE_LEVEL } from "../../src/audit/StoredTree.ts"
import type { AuditProof } from "../../src/audit/Domain.ts"
import { Network } from "../../src/chain/Network.ts"
import { signIn } from "../../src/client/signIn.ts"
import { declined, executed } from "../audit/support.ts"
import { client, TestServer, TestServerLive } from "../support/TestServer.ts"

const getRaw = (url: string, token: string) =>
  Effect.promise(async () => {
    const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } })
    return { status: res.status, body: await res.json() as { error?: { code: string; message: string } } }
  })

const flipHex = (hex: string) => `${hex.slice(0, -1)}${hex.endsWith("0") ? "1" : "0"}`

layer(TestServerLive(), { excludeTestServices: true })("inclusion proofs", (it) => {
  it.effect("an anchored entry is proven against the chain; a tampered proof is not", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const anchor = yield* Anchor
      const network = yield* Network
      const audit = yield* Effect.provide(AuditChain.useSync((a) => a), AuditChain.layer)
      const dave = yield* signIn(baseUrl, privateKeyToAccount(generatePrivateKey()))
      const account = dave.accounts[0]!.id
      for (let i = 1; i <= 5; i++) {
        yield* audit.append(i % 2 === 0 ? declined(account, `dcl_${i}_${account}`) : executed(account, `op_${i}_${account}`))
      }
      const entries = yield* audit.entries(account)

      // Not anchored yet: 409 conflict.
      const early = yield* getRaw(`${baseUrl}/activity/${entries[1]!.id}/proof`, dave.token)
      assert.strictEqual(early.status, 409)
      assert.strictEqual(early.body.error?.code, "conflict")
      assert.match(early.body.error?.message ?? "", /entry #2 of .* is not anchored yet/)

      assert.isAbove((yield* anchor.anchorNow).length, 0)
      yield* audit.append(executed(account, `op_6_${account}`))
      const sixth = (yield* audit.entries(account))[5]!
      assert.strictEqual((yield* getRaw(`${baseUrl}/activity/${sixth.id}/proof`, dave.token)).status, 409)

      const api = yield* client(dave.token)
      const proofs: Array<AuditProof> = []
      for (const e of entries) {
        const proof = yield* api.activity.proof({ params: { eventId: e.id } })
        assert.strictEqual(proof.treeSize, 5)
        assert.strictEqual(proof.leafIndex, e.index - 1)
        assert.isAtMost(proof.auditPath.length, 3)
        const result = yield* Effect.promise(() => verifyProofOnChain(proof, network.rpcUrl))
        assert.isTrue(result.ok, JSON.stringify(result))
        proofs.push(proof)
      }

      // Every tampering fails, each at its step.
      const p = proofs[1]!
      const tampered: Array<[string, AuditProof, RegExp]> = [
        ["amount", { ...p, event: { ...p.event, amount: 1 } }, /fields hash to/],
        ["audit path", { ...p, auditPath: [flipHex(p.auditPath[0]!), ...p.auditPath.slice(1)] }, /audit path does not lead/],
        ["leaf index", { ...p, leafIndex: 2, event: p.event }, /leaf index 2/],
        // A path of a tree of 5 can fit a tree of 6 (RFC 6962 binds the size through the root): the
        // anchored leaf binds the length, so the claimed size fails there.
        ["tree size", { ...p, treeSize: 6, anchoredHead: { ...p.anchoredHead, length: 6 } }, /anchored head's proof/],
        ["tree size alone", { ...p, treeSize: 4 }, /tree size 4 is not the anchored length 5/],
        ["entries root", { ...p, entriesRoot: flipHex(p.entriesRoot), anchoredHead: { ...p.anchoredHead, entriesRoot: flipHex(p.entriesRoot) } }, /audit path does not lead/],
        ["anchor proof", { ...p, anchor: { ...p.anchor, proof: [...p.anchor.proof, p.anchor.merkleRoot] } }, /anchor root/],
        ["anchor root", { ...p, anchor: { ...p.anchor, merkleRoot: flipHex(p.anchor.merkleRoot) } }, /anchor root/],
        ["transaction", { ...p, anchor: { ...p.anchor, txHash: flipHex(p.anchor.txHash) } }, /is not on chain/],
        ["block", { ...p, anchor: { ...p.anchor, blockNumber: "1" } }, /is in block/],
        ["chain", { ...p, anchor: { ...p.anchor, chainId: 1 } }, /the RPC serves chain/]
      ]
      for (const [name, proof, failure] of tampered) {
        const result = yield* Effect.promise(() => verifyProofOnChain(proof, network.rpcUrl))
        assert.isFalse(result.ok, name)
        if (!result.ok) assert.match(result.failure, failure, name)
      }
      // A proof of one anchor with another (valid) anchor's transaction fails on the input.
      assert.isAbove((yield* anchor.anchorNow).length, 0)
      const later = yield* api.activity.proof({ params: { eventId: entries[1]!.id } })
      assert.strictEqual(later.treeSize, 6)
      assert.isTrue((yield* Effect.promise(() => verifyProofOnChain(later, network.rpcUrl))).ok)
      const mixed = yield* Effect.promise(() => verifyProofOnChain({ ...p, anchor: { ...p.anchor, txHash: later.anchor.txHash } }, network.rpcUrl))
      assert.isFalse(mixed.ok)
      if (!mixed.ok) assert.match(mixed.failure, /carries 0x/)

      // Scoped like `get`: another signer's event does not exist.
      const erin = yield* signIn(baseUrl, privateKeyToAccount(generatePrivateKey()))
      const foreign = yield* getRaw(`${baseUrl}/activity/${entries[0]!.id}/proof`, erin.token)
      assert.strictEqual(foreign.status, 404)

      // The command, over HTTP and the RPC.
      const run = yield* Effect.promise(() =>
        promisify(execFile)("node_modules/.bin/tsx", [
          "scripts/audit-verify-proof.ts", "--rpc", network.rpcUrl, "--url", baseUrl, "--token", dave.token, "--event", entries[2]!.id
        ])
      )
      assert.match(run.stdout, /PROVEN: entry evt_/)
    }), { timeout: 120_000 })

  it.effect("a long account's proofs come from stored subtrees, equal the full recomputation, and survive tampering", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const anchor = yield* Anchor
      const network = yield* Network
      const sql = yield* SqlClient.SqlClient
      const audit = yield* Effect.provide(AuditChain.useSync((a) => a), AuditChain.layer)
      const fay = yield* signIn(baseUrl, privateKeyToAccount(generatePrivateKey()))
      const account = fay.accounts[0]!.id
      const api = yield* client(fay.token)
      const append = (from: number, to: number) =>
        Effect.forEach(Array.from({ length: to - from + 1 }, (_, i) => from + i), (i) =>
          audit.append(executed(account, `op_long_${i}_${account}`)), { discard: true })

      // 2 tiles and 9 entries: the first pass stores the nodes of the two whole tiles.
      yield* append(1, 2 * TILE + 9)
      // Two rounds at once, on two connections: one holds the round and writes the nodes, the other anchors nothing.
      const rounds = yield* Effect.all([anchor.anchorNow, anchor.anchorNow], { concurrency: 2 })
      assert.strictEqual(rounds.flat().filter((r) => r.heads.some((h) => h.accountId === account)).length, 1)
      const stored = yield* sql<{ level: number; idx: number }>`
        SELECT level, idx FROM audit_tree_nodes WHERE account_id = ${account} ORDER BY level, idx`
      assert.deepStrictEqual(stored.map((r) => [r.level, r.idx]), [[TILE_LEVEL, 0], [TILE_LEVEL, 1], [TILE_LEVEL + 1, 0]])

      // A second pass reads only what follows the stored tiles: one more tile and a bit, each
      // proof of every size still the full recomputation's, and proven on chain.
      yield* append(2 * TILE + 10, 3 * TILE + 3)
      assert.isAbove((yield* anchor.anchorNow).length, 0)
      const entries = yield* audit.entries(account)
      const hashes = entries.map((e) => e.hash)
      assert.strictEqual(hashes.length, 3 * TILE + 3)
      const stored2 = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM audit_tree_nodes WHERE account_id = ${account}`
      assert.strictEqual(stored2[0]!.n, 4)
      for (const index of [1, 2, TILE, TILE + 1, 2 * TILE, 2 * TILE + 9, 3 * TILE, 3 * TILE + 3]) {
        const proof = yield* api.activity.proof({ params: { eventId: entries[index - 1]!.id } })
        assert.strictEqual(proof.treeSize, 3 * TILE + 3)
        assert.deepStrictEqual(proof.auditPath, inclusionProof(index - 1, hashes), `entry #${index}`)
        const result = yield* Effect.promise(() => verifyProofOnChain(proof, network.rpcUrl))
        assert.isTrue(result.ok, JSON.stringify(result))
      }
      const [row] = yield* sql<{ head_proof: string | null }>`
        SELECT head_proof FROM audit_anchor_heads ah JOIN audit_anchor_state s ON s.anchor_id = ah.anchor_id AND s.account_id = ah.account_id
        WHERE ah.account_id = ${account}`
      assert.isNotNull(row!.head_proof, "the pass stored the head's proof in its anchor")

      // A tampered stored node: the proof does not use it; it recomputes from the entries (the same answer).
      const target = entries[10]!
      const honest = yield* api.activity.proof({ params: { eventId: target.id } })
      yield* sql`UPDATE audit_tree_nodes SET hash = ${`0x${"ab".repeat(32)}`} WHERE account_id = ${account} AND level = ${TILE_LEVEL} AND idx = 1`
      yield* sql`UPDATE audit_anchor_heads SET head_proof = ${`0x${"cd".repeat(32)}`} WHERE account_id = ${account}`
      const recomputed = yield* api.activity.proof({ params: { eventId: target.id } })
      assert.deepStrictEqual(recomputed, honest)
      assert.isTrue((yield* Effect.promise(() => verifyProofOnChain(recomputed, network.rpcUrl))).ok)
      // A pass checks the nodes it builds on (the peaks) against the anchored root: a tampered
      // peak is found, and the account's nodes are rebuilt from its entries.
      yield* sql`UPDATE audit_tree_nodes SET hash = ${`0x${"ab".repeat(32)}`} WHERE account_id = ${account} AND level = ${TILE_LEVEL + 1} AND idx = 0`
      yield* append(3 * TILE + 4, 3 * TILE + 4)
      assert.isAbove((yield* anchor.anchorNow).length, 0)
      const rebuilt = yield* sql<{ hash: string }>`SELECT hash FROM audit_tree_nodes WHERE account_id = ${account}`
      assert.strictEqual(rebuilt.length, 4)
      assert.isFalse(rebuilt.some((r) => r.hash === `0x${"ab".repeat(32)}`))
      const after = yield* api.activity.proof({ params: { eventId: target.id } })
      assert.deepStrictEqual(after.auditPath, inclusionProof(10, [...hashes, (yield* audit.entries(account))[3 * TILE + 3]!.hash]))
      assert.isTrue((yield* Effect.promise(() => verifyProofOnChain(after, network.rpcUrl))).ok)

      // An upgraded database (no stored nodes, no head proofs): the same proof, recomputed; the
      // next round stores the head proofs of that anchor again, equal to what the pass wrote.
      const headProofs = yield* sql<{ anchor_id: string; account_id: string; head_proof: string }>`
        SELECT anchor_id, account_id, head_proof FROM audit_anchor_heads WHERE head_proof IS NOT NULL ORDER BY anchor_id, account_id`
      yield* sql`DELETE FROM audit_tree_nodes WHERE account_id = ${account}`
      yield* sql`UPDATE audit_anchor_heads SET head_proof = NULL`
      assert.deepStrictEqual(yield* api.activity.proof({ params: { eventId: target.id } }), after)
      for (let i = 0; i < 10; i++) yield* anchor.anchorRound
      const refilled = yield* sql<{ anchor_id: string; account_id: string; head_proof: string }>`
        SELECT anchor_id, account_id, head_proof FROM audit_anchor_heads WHERE head_proof IS NOT NULL ORDER BY anchor_id, account_id`
      // (This account's rows were tampered with above: refilled, they are the honest proofs, checked by the proof below.)
      assert.strictEqual(refilled.length, headProofs.length)
      assert.deepStrictEqual(refilled.filter((r) => r.account_id !== account), headProofs.filter((r) => r.account_id !== account))
      assert.notInclude(refilled.map((r) => r.head_proof).join(), "cdcdcd")

      // A tampered entry row (its hash column, in a stored tile): its own proof is refused
      // (it no longer leads to the anchored root), and a proof of an entry after the anchored length is a 409.
      const victim = entries[300]!
      yield* sql`UPDATE audit_entries SET hash = ${`0x${"ef".repeat(32)}`} WHERE id = ${victim.id}`
      const refused = yield* getRaw(`${baseUrl}/activity/${victim.id}/proof`, fay.token)
      assert.strictEqual(refused.status, 409)
      assert.match(refused.body.error?.message ?? "", /no longer matches its anchor/)
      yield* sql`UPDATE audit_entries SET hash = ${victim.hash} WHERE id = ${victim.id}`
      yield* append(3 * TILE + 5, 3 * TILE + 5)
      const unanchored = (yield* audit.entries(account)).at(-1)!
      assert.strictEqual((yield* getRaw(`${baseUrl}/activity/${unanchored.id}/proof`, fay.token)).status, 409)
    }), { timeout: 240_000 })
})
