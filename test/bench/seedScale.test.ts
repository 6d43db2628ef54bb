/**
 * The scale benchmark's seeding (bench/support/seed-scale.ts) at a small size, so it cannot
 * rot: it runs against the current schema, writes the rows it promises, and the service's own
 * code reads and extends them (grants and their ledgers decode through DelegationRepo, heads match their
 * entries, an append continues the seeded chain). The 1M run itself is `npx tsx bench/scale.ts`.
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { AuditChain } from "../../src/audit/AuditChain.ts"
import { DelegationRepo } from "../../src/delegations/DelegationRepo.ts"
import { seedScale } from "../../bench/support/seed-scale.ts"
import { TestDatabaseLive } from "../support/TestDatabase.ts"

const Live = Layer.mergeAll(DelegationRepo.layer, AuditChain.layer).pipe(Layer.provideMerge(TestDatabaseLive()))
const signer = `0x${"5".repeat(40)}`
const address = `0x${"6".repeat(40)}`
const token = { symbol: "USDC", address: `0x${"11".repeat(20)}`, decimals: 6 }

layer(Live, { excludeTestServices: true })("scale seeding", (it) => {
  it.effect("seeds 1k: accounts, grants and entries as promised, readable and appendable by the service's code", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const seeded = yield* seedScale({ size: 1000, signer, address, chainId: 31337, token })
      assert.deepStrictEqual(seeded, { bigAccountId: "acc_scale_big", otherAccounts: 100, entries: 2000, grants: 1010, reservations: 2020 })
      const [counts] = yield* sql<{ accounts: number; entries: number; grants: number; builds: number; heads: number }>`
        SELECT (SELECT count(*)::int FROM accounts) AS accounts, (SELECT count(*)::int FROM audit_entries) AS entries,
               (SELECT count(*)::int FROM delegations) AS grants, (SELECT count(*)::int FROM delegation_builds) AS builds,
               (SELECT count(*)::int FROM audit_heads) AS heads`
      assert.deepStrictEqual(counts, { accounts: 101, entries: 2000, grants: 1010, builds: 1010, heads: 101 })
      // Every head names its chain's last entry (what anchoring checks before it anchors).
      const [mismatched] = yield* sql<{ n: number }>`
        SELECT count(*)::int AS n FROM audit_heads h
        WHERE NOT EXISTS (SELECT 1 FROM audit_entries e
                          WHERE e.account_id = h.account_id AND e.chain_index = h.length AND e.hash = h.head_hash)
           OR h.length <> (SELECT count(*) FROM audit_entries e WHERE e.account_id = h.account_id)`
      assert.strictEqual(mismatched!.n, 0)

      const repo = yield* DelegationRepo
      const own = yield* repo.listOwned("acc_scale_big", signer)
      assert.strictEqual(own.length, 10)
      assert.strictEqual(own[0]!.policy_set.budgets[0]!.token.address, token.address)
      assert.strictEqual(own[0]!.legs[0]!.delegation.delegator, address)
      // Each grant's ledger: its one final action (its released one counts nowhere).
      assert.deepStrictEqual(yield* repo.ledger(own[0]!.id, {}, undefined), [
        { token_address: token.address, final_units: "1000000", open_units: "0", final_n: 1, open_n: 0 }
      ])
      const held = yield* repo.listHeld([address], 31337)
      assert.strictEqual(held.length, 10)
      assert.ok(held.every((d) => d.delegatee_address === address && d.account_id === "acc_scale_1"))

      const entry = yield* AuditChain.use((c) => c.append({
        accountId: "acc_scale_big",
        operationId: "op_after_seed",
        actor: "owner",
        action: "send",
        chain: "Local devnet",
        chainId: 31337,
        status: "executed"
      }))
      assert.strictEqual(entry.index, 1001)
      const [last] = yield* sql<{ hash: string }>`SELECT hash FROM audit_entries WHERE account_id = 'acc_scale_big' AND chain_index = 1000`
      assert.strictEqual(entry.prevHash, last!.hash)
    }))
})
