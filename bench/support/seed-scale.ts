/**
 * Bulk data for the scale benchmark (`bench/scale.ts`): accounts, grants and audit entries
 * written with `INSERT … SELECT generate_series(…)` inside PostgreSQL (no row crosses the
 * wire), so 1M entries take tens of seconds, not hours.
 *
 * For a size N:
 * - N / 10 accounts of other signers (at least one), each with 10 grants (N in all) and
 *   10 audit entries (N in all: "N spread over N / 10 accounts");
 * - one account of `signer` (the benchmark's) with N audit entries ("N on one account"),
 *   10 grants of its own and 10 grants held by it (other accounts' grants to its address);
 * - each grant with one final and one released reservation (2N + 20 in all);
 * - each account's audit head matches its entries (length, last hash), so anchoring and
 *   proofs work on the seeded chains. The entries' hashes are sha256 of their position, not
 *   a real hash chain: nothing measured here re-walks the links.
 *
 * The rows are what the service writes (the columns its reads decode); the grants' policy and
 * leg are a fixed, valid shape (test/delegations/DelegationRepo.test.ts's).
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export interface SeedOptions {
  /** N: grants and spread audit entries; also the entries on the signer's own account. */
  readonly size: number
  /** The benchmark's signer (lowercase address): owner of the one big account. */
  readonly signer: string
  /** The big account's address (lowercase) and chain. */
  readonly address: string
  readonly chainId: number
  /** A token the chain serves (the grants' budget token). */
  readonly token: { readonly symbol: string; readonly address: string; readonly decimals: number }
  /** The big account's own grants (default 10). */
  readonly ownGrants?: number
}

export interface Seeded {
  /** The signer's account (N entries). */
  readonly bigAccountId: string
  /** Accounts of other signers. */
  readonly otherAccounts: number
  readonly entries: number
  readonly grants: number
  readonly reservations: number
}

/** Deterministic 0x-prefixed sha256 hex of a text expression (SQL). */
const hashOf = (expr: string) => `'0x' || encode(sha256(convert_to(${expr}, 'UTF8')), 'hex')`

export const seedScale = (options: SeedOptions) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const n = options.size
    const accounts = Math.max(1, Math.floor(n / 10))
    const perAccount = Math.max(1, Math.floor(n / accounts))
    const big = "acc_scale_big"
    const run = (text: string, params: ReadonlyArray<unknown> = []) => sql.unsafe(text, params as Array<never>)
    const policy = {
      budgets: [{ token: { symbol: options.token.symbol, chainId: options.chainId, address: options.token.address }, amount: 100 }],
      perActionMax: { token: { symbol: options.token.symbol, chainId: options.chainId, address: options.token.address }, amount: 25 },
      maxActions: 5,
      recipientAllowlist: [],
      allowedActions: [],
      expiresAt: "2099-01-01T00:00:00.000Z",
      freezeGated: true
    }
    const leg = (delegatorSql: string, delegateeSql: string, permissionSql: string) =>
      `jsonb_build_array(jsonb_build_object(
         'permissionId', ${permissionSql},
         'token', jsonb_build_object('symbol', $3::text, 'address', $4::text, 'decimals', $5::int),
         'delegation', jsonb_build_object('delegate', ${delegateeSql}, 'delegator', ${delegatorSql},
           'authority', '0x${"ff".repeat(32)}', 'caveats', '[]'::jsonb, 'salt', '0x01', 'signature', '0x')))`
    const tokenParams = [options.token.symbol, options.token.address, options.token.decimals]

    // Accounts: the signer's big one, then the others (signer and address from their number).
    yield* run(
      `INSERT INTO accounts (id, signer_address, idx, label, address, chain_id, type, purpose, deployment_status, created_at)
       VALUES ($1, $2, 0, 'Primary', $3, $4, 'hybrid', 'primary', 'counterfactual', now() - interval '1 day')`,
      [big, options.signer, options.address, options.chainId]
    )
    yield* run(
      `INSERT INTO accounts (id, signer_address, idx, label, address, chain_id, type, purpose, deployment_status, created_at)
       SELECT 'acc_scale_' || g, '0xe' || lpad(to_hex(g), 39, '0'), 0, 'Primary', '0xa' || lpad(to_hex(g), 39, '0'),
              $1, 'hybrid', 'primary', 'counterfactual', now() - interval '1 day'
       FROM generate_series(1, $2::int) g`,
      [options.chainId, accounts]
    )

    // Audit entries: perAccount on every other account, n on the big one; heads to match.
    const entryInsert = (accountSql: string, series: string) =>
      `INSERT INTO audit_entries (id, account_id, chain_index, operation_id, occurred_at, actor, action, amount, token, chain,
                                  chain_id, status, provenance, tx_hash, audit_nonce, delegation_id, prev_hash, hash, recipient)
       SELECT 'evt_scale_' || ${accountSql} || '_' || i, ${accountSql}, i, 'op_scale_' || ${accountSql} || '_' || i,
              now() - interval '1 day' + i * interval '1 millisecond', 'owner', 'send', 1.5, 'USDC', 'Local devnet',
              $1, 'executed', 'onchain', '0x' || repeat('ab', 32), i, NULL,
              CASE WHEN i = 1 THEN '0x' || repeat('00', 32) ELSE ${hashOf(`${accountSql} || ':' || (i - 1)`)} END,
              ${hashOf(`${accountSql} || ':' || i`)}, NULL
       FROM ${series}`
    yield* run(
      entryInsert("'acc_scale_' || g", "generate_series(1, $2::int) g, generate_series(1, $3::int) i"),
      [options.chainId, accounts, perAccount]
    )
    yield* run(entryInsert(`'${big}'`, "generate_series(1, $2::int) i"), [options.chainId, n])
    yield* run(
      `INSERT INTO audit_heads (account_id, length, head_hash, executed_count)
       SELECT 'acc_scale_' || g, $2::int, ${hashOf(`'acc_scale_' || g || ':' || $2::int`)}, $2::int
       FROM generate_series(1, $1::int) g`,
      [accounts, perAccount]
    )
    yield* run(
      `INSERT INTO audit_heads (account_id, length, head_hash, executed_count)
       VALUES ($1, $2::int, ${hashOf(`$1 || ':' || $2::int`)}, $2::int)`,
      [big, n]
    )

    // Grants: 10 per other account (n in all), 10 of the big account's own, 10 held by it.
    const grantsPerAccount = Math.max(1, Math.floor(n / accounts))
    const grantInsert = (from: string, accountSql: string, signerSql: string, delegatorSql: string, delegateeSql: string) => [
      `INSERT INTO delegation_builds (id, op_build_id, signer_address, account_id, name, kind, delegatee_address, chain_id,
                                      policy_set, human_summary, legs, user_op_hash, created_at, expires_at)
       SELECT 'dbl_' || k, 'bld_' || k, ${signerSql}, ${accountSql}, 'Groceries', 'agent', ${delegateeSql}, $1,
              $2::jsonb, 'Up to 100 USDC', ${leg(delegatorSql, delegateeSql, hashOf("'perm:' || k"))},
              ${hashOf("'build:' || k")}, now() - interval '1 day', now() - interval '1 day' + interval '10 minutes'
       FROM ${from}`,
      `INSERT INTO delegations (id, build_id, signer_address, account_id, delegator_address, permission_id, name, kind, icon,
                                delegatee_address, chain_id, policy_set, human_summary, legs, status, enable_user_op_hash,
                                enable_tx_hash, created_at, activated_at)
       SELECT 'dlg_' || k, 'dbl_' || k, ${signerSql}, ${accountSql}, ${delegatorSql}, ${hashOf("'perm:' || k")}, 'Groceries',
              'agent', 'agent', ${delegateeSql}, $1, $2::jsonb, 'Up to 100 USDC',
              ${leg(delegatorSql, delegateeSql, hashOf("'perm:' || k"))},
              'active', ${hashOf("'build:' || k")}, '0x' || repeat('cd', 32),
              now() - interval '1 day' + n * interval '1 millisecond', now() - interval '1 day'
       FROM ${from}`
    ]
    const params = (extra: ReadonlyArray<unknown>) => [options.chainId, JSON.stringify(policy), ...tokenParams, ...extra]
    // Other accounts' grants: k numbers them; account g = (k - 1) / grantsPerAccount + 1.
    const others = "(SELECT k, k AS n, (k - 1) / $7::int + 1 AS g FROM generate_series(1, $6::int) k) s"
    for (const text of grantInsert(
      others,
      "'acc_scale_' || g",
      "'0xe' || lpad(to_hex(g), 39, '0')",
      "'0xa' || lpad(to_hex(g), 39, '0')",
      // Ten of them (the first account's) are held by the big account's address.
      "CASE WHEN g = 1 THEN $8::text ELSE '0xd' || lpad(to_hex(k), 39, '0') END"
    )) yield* run(text, params([accounts * grantsPerAccount, grantsPerAccount, options.address]))
    const ownGrants = options.ownGrants ?? 10
    const own = `(SELECT 'own_' || j AS k, j AS n FROM generate_series(1, ${ownGrants}) j) s`
    for (const text of grantInsert(own, `'${big}'`, "$6::text", "$7::text", "'0xc' || lpad(md5(k), 39, '0')")) {
      yield* run(text, params([options.signer, options.address]))
    }
    // Each grant's history: one final action and one released (2N reservations), so a grant's
    // ledger (every action, `GET /delegations`' spentToDate) is read among every grant's.
    yield* run(
      `INSERT INTO delegation_reservations (id, delegation_id, token_address, units, recipient, status, expires_at, created_at,
                                            settled_at, tx_hash)
       SELECT 'rsv_' || d.id || '_' || s, d.id, $1::text, 1000000, '0x' || repeat('ab', 20),
              CASE s WHEN 1 THEN 'final' ELSE 'released' END, now() - interval '1 day', now() - interval '1 day',
              now() - interval '1 day', CASE s WHEN 1 THEN '0x' || repeat('ef', 32) END
       FROM delegations d, generate_series(1, 2) s`,
      [options.token.address.toLowerCase()]
    )
    yield* run("ANALYZE")
    const grants = accounts * grantsPerAccount + ownGrants
    return { bigAccountId: big, otherAccounts: accounts, entries: accounts * perAccount + n, grants, reservations: 2 * grants } satisfies Seeded
  })
