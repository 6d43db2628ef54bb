/**
 * Anchoring: on a schedule, one transaction commits the Merkle root of every
 * account's audit chain head that changed since its last anchor (Merkle.ts), and
 * records which heads it covered. `/activity/anchor` reports from these records.
 * A head is anchored only if its chain extends the account's last anchored head
 * (Anchored.ts): a rewritten history is refused, logged as an error and reported.
 *
 * Several chains (issue 29): each account's heads are anchored on the account's own chain,
 * or, with `ANCHOR_CHAIN_ID`, every account's on that one chain. Each anchor chain runs its
 * own round (one transaction there), so a chain that is down delays only its own accounts.
 *
 * Who sends the transaction on a chain: its anchor key (`CHAIN_<id>_ANCHOR_PRIVATE_KEY`, or
 * `ANCHOR_PRIVATE_KEY` with the single-network keys); on a local network an unlocked dev
 * account (anvil assigns its nonces, so several service processes on one chain never collide).
 * Neither: that chain anchors nothing. Several processes on one database anchor once per
 * round and chain (an advisory lock).
 */
import { Config, Context, Duration, Effect, Layer, Option, Redacted, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { createWalletClient, type Hex, http } from "viem"
import { privateKeyToAccount } from "viem/accounts"
import { viemChainOf } from "../chain/Chain.ts"
import { type ChainNetwork, Chains } from "../chain/Chains.ts"
import { checkAnchored, checkAnchoredAt, type Rewrite } from "../audit/Anchored.ts"
import { makeLoopHealth } from "../platform/LoopHealth.ts"
import { type AnchoredHead, anchorCalldata, leafOf, merkleProofs, merkleRoot } from "../audit/Merkle.ts"
import type { Hex32 } from "../audit/Rfc6962.ts"
import { type NodeKey, neededNodes, nodesBetween, TILE, TILE_LEVEL, type Tree, treeOf, usableSize } from "../audit/StoredTree.ts"
import { makeTreeNodes, type NodeRow, nodeKey } from "../audit/TreeNodes.ts"
import { runLoop } from "../platform/Loop.ts"
import { registerAnchorMetrics } from "./AnchorMetrics.ts"

/** anvil's dev account #5 (public key of the well-known test mnemonic): local anchoring only. */
export const LOCAL_ANCHOR_ACCOUNT: Hex = "0x9965507D1a55bcC2695C58ba16FB37d819B0A4dc"
const ADVISORY_KEY = 0x616e6368 // "anch"

export interface AnchorRecord {
  readonly id: string
  /** The chain the anchor transaction is on. */
  readonly chainId: number
  readonly merkleRoot: Hex
  readonly txHash: Hex
  readonly blockNumber: bigint
  readonly heads: ReadonlyArray<AnchoredHead>
}

/** An account whose head was not anchored: its chain no longer extends its last anchored head. */
export interface AnchorRefusal extends Rewrite {
  readonly accountId: string
}

/** One round: what was anchored, one record per anchor chain (none when nothing changed or another process holds the round), what was refused. */
export interface AnchorRound {
  readonly anchored: ReadonlyArray<AnchorRecord>
  readonly refused: ReadonlyArray<AnchorRefusal>
}

export interface AnchorSummary {
  readonly available: boolean
  /** Entries not covered by an anchor: those after the last anchored length, and every entry a rewrite may have changed. */
  readonly unanchoredCount: number
  readonly anchoredHead: string | undefined
  /**
   * A rewrite of anchored history detected now (the primary account's first, else another's):
   * its chain no longer holds an anchored head. Its anchored head stays reported (it is what
   * the chain committed, and what a verifier compares with), never as if all were well.
   */
  readonly rewrite?: AnchorRefusal | undefined
  /** Each account's length that an anchor covers (0: none yet); absent when no account was asked. */
  readonly anchoredLengths?: ReadonlyArray<{ readonly accountId: string; readonly anchoredLength: number }> | undefined
  /** The latest anchor covering the primary account. */
  readonly latest?: {
    readonly length: number
    readonly merkleRoot: string
    readonly txHash: string
    readonly blockNumber: string
    readonly anchoredAt: string
  } | undefined
}

export class Anchor extends Context.Service<Anchor, {
  readonly available: boolean
  /** Anchors every head that changed and still extends its anchored history (one record per anchor chain). */
  readonly anchorNow: Effect.Effect<ReadonlyArray<AnchorRecord>>
  /** `anchorNow`, with the accounts it refused. */
  readonly anchorRound: Effect.Effect<AnchorRound>
  /** What is anchored of these accounts (`primary` names whose head is reported). */
  readonly summary: (accountIds: ReadonlyArray<string>, primary: string | undefined) => Effect.Effect<AnchorSummary>
}>()("das/anchor/Anchor") {}

const MovedRow = Schema.Struct({
  account_id: Schema.String,
  length: Schema.Number,
  head_hash: Schema.String,
  anchored_length: Schema.NullOr(Schema.Number),
  anchored_head: Schema.NullOr(Schema.String),
  anchored_root: Schema.NullOr(Schema.String)
})

type Sender = (data: Hex) => Promise<Hex>

/** Who sends anchors on `net` (see the module's comment). */
const senderOf = (net: ChainNetwork): Option.Option<Sender> => {
  const chain = viemChainOf(net.network)
  const key = net.network.anchorKey
  if (key !== undefined) {
    const account = privateKeyToAccount(Redacted.value(key))
    const wallet = createWalletClient({ account, chain, transport: http(net.network.rpcUrl) })
    return Option.some<Sender>((data) => wallet.sendTransaction({ to: account.address, data, value: 0n }))
  }
  if (net.network.devKey !== undefined) {
    const wallet = createWalletClient({ chain, transport: http(net.network.rpcUrl) })
    return Option.some<Sender>((data) =>
      wallet.sendTransaction({ account: LOCAL_ANCHOR_ACCOUNT, to: LOCAL_ANCHOR_ACCOUNT, data, value: 0n })
    )
  }
  return Option.none<Sender>()
}

export const AnchorLive = Layer.effect(
  Anchor,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const chains = yield* Chains
    const oneChain = yield* Config.option(Config.Int("ANCHOR_CHAIN_ID"))
    if (Option.isSome(oneChain)) yield* Effect.orDie(chains.get(oneChain.value))
    /** The anchor chains with a sender: one, or every served chain (each anchors its own accounts). */
    const anchorChains = (Option.isSome(oneChain) ? chains.all.filter((c) => c.chainId === oneChain.value) : chains.all)
      .flatMap((net) => Option.match(senderOf(net), { onNone: () => [], onSome: (send) => [{ net, send }] }))
    /** The accounts whose heads `chainId` anchors: every account when one chain anchors all. */
    const accountsOn = (chainId: number) =>
      Option.isSome(oneChain) ? sql`TRUE` : sql`h.account_id IN (SELECT id FROM accounts WHERE chain_id = ${chainId})`

    // Any head that differs from its last anchored state (longer, or the same length with
    // another hash), and heads anchored before entries roots existed (re-anchored once).
    const changed = (chainId: number) =>
      sql`SELECT h.account_id, h.length, h.head_hash, s.length AS anchored_length, s.head_hash AS anchored_head,
            s.entries_root AS anchored_root
          FROM audit_heads h LEFT JOIN audit_anchor_state s ON s.account_id = h.account_id
          WHERE (s.account_id IS NULL OR h.length <> s.length OR h.head_hash <> s.head_hash OR s.entries_root IS NULL)
            AND ${accountsOn(chainId)}
          ORDER BY h.account_id`.pipe(Effect.flatMap(Schema.decodeUnknownEffect(Schema.Array(MovedRow))))

    const hashesOf = (accountId: string, length: number) =>
      sql<{ hash: string }>`SELECT hash FROM audit_entries
        WHERE account_id = ${accountId} AND chain_index <= ${length} ORDER BY chain_index`.pipe(
        Effect.map((rows) => rows.map((r) => r.hash))
      )

    const nodes = makeTreeNodes(sql)

    /** What the pass reads of a moved account: its entries after `from` up to its length. */
    interface Plan {
      readonly row: typeof MovedRow.Type
      /** Leaves under this are covered by stored nodes (0: the entries are read whole). */
      readonly storedSize: number
      readonly from: number
    }

    /**
     * The stored size of a moved account the pass may build on: whole tiles stored and
     * anchored (with an entries root) at or below both its anchored length and its length.
     */
    const planOf = (r: typeof MovedRow.Type, stored: number, whole: boolean): Plan => {
      const a = r.anchored_length ?? 0
      const storedSize = whole || r.anchored_root === null || a === 0 ? 0 : usableSize(TILE_LEVEL, stored, Math.min(a, r.length))
      // The entry at the anchored length is read too: it must still carry the anchored hash.
      return { row: r, storedSize, from: a > 0 ? Math.min(storedSize, a - 1) : 0 }
    }

    /**
     * The entry hashes of several accounts, each from its plan's `from` to its length, in
     * chain order: one statement for the lot (a pass over 10,000 moved heads was 10,000
     * sequential reads), and only what a pass adds for an account with stored tiles.
     */
    const hashesOfMany = (plans: ReadonlyArray<Plan>) =>
      sql<{ account_id: string; chain_index: number; hash: string }>`
        SELECT e.account_id, e.chain_index, e.hash FROM audit_entries e
        JOIN (VALUES ${sql.csv(plans.map((p) => sql`(${p.row.account_id}, ${p.from}::integer, ${p.row.length}::integer)`))})
          AS w (account_id, lo, hi) ON e.account_id = w.account_id AND e.chain_index > w.lo AND e.chain_index <= w.hi
        ORDER BY e.account_id, e.chain_index`.pipe(
        Effect.map((found) => {
          const byAccount = new Map<string, Array<string>>(plans.map((p) => [p.row.account_id, []]))
          for (const e of found) byAccount.get(e.account_id)!.push(e.hash)
          return byAccount
        })
      )

    /** The tree of a plan's account over the hashes read and the stored nodes found. */
    const treeOfPlan = (p: Plan, hashes: ReadonlyArray<string>, stored: Map<string, Hex32> | undefined) =>
      treeOf({
        tileLevel: TILE_LEVEL,
        storedSize: p.storedSize,
        stored: (k) => stored?.get(nodeKey(k)),
        entry: (i) => (i >= p.from ? hashes[i - p.from] : undefined)
      })

    /** What a pass computes of a moved account's tree: the anchored root (a check), the new root, the new nodes. */
    const tileEnd = (length: number) => Math.floor(length / TILE) * TILE
    const computeOf = (p: Plan) => (t: Tree) => {
      if (p.storedSize > 0) t.root(p.row.anchored_length!)
      t.root(p.row.length)
      for (const k of nodesBetween(TILE_LEVEL, p.storedSize, tileEnd(p.row.length))) t.node(k)
    }

    type Prepared =
      | { readonly _tag: "refused"; readonly refusal: AnchorRefusal }
      | { readonly _tag: "head"; readonly head: AnchoredHead; readonly nodes: ReadonlyArray<NodeRow>; readonly rebuild: boolean }
      | { readonly _tag: "whole" }

    /**
     * The head to anchor for a changed account, or why it is refused; "whole": its stored
     * nodes are missing or do not give its anchored root, so it is read again whole.
     */
    const prepare = (p: Plan, hashes: ReadonlyArray<string>, stored: Map<string, Hex32> | undefined): Prepared => {
      const r = p.row
      const refuse = (rewrite: Rewrite) => ({ _tag: "refused" as const, refusal: { accountId: r.account_id, ...rewrite } })
      const read = p.from + hashes.length
      if (read !== r.length || hashes.at(-1) !== r.head_hash) {
        return refuse({
          from: read + 1,
          anchoredLength: r.length,
          anchoredHead: r.head_hash,
          current: hashes.at(-1),
          message: `the head row says ${r.length} entries ending in ${r.head_hash}; ` +
            `the entries are ${read} ending in ${hashes.at(-1) ?? "nothing"}`
        })
      }
      if (r.anchored_length !== null && r.anchored_head !== null) {
        const rewrite = checkAnchoredAt(read, (position) => (position > p.from ? hashes[position - p.from - 1] : undefined), [
          { length: r.anchored_length, headHash: r.anchored_head }
        ])
        if (rewrite !== undefined) return refuse(rewrite)
      }
      const tree = treeOfPlan(p, hashes, stored)
      const entriesRoot = tree.root(r.length)
      if (p.storedSize > 0 && (tree.missing.length > 0 || tree.root(r.anchored_length!) !== r.anchored_root)) return { _tag: "whole" }
      const head: AnchoredHead = { accountId: r.account_id, length: r.length, headHash: r.head_hash as Hex, entriesRoot }
      const newNodes = nodesBetween(TILE_LEVEL, p.storedSize, tileEnd(r.length))
        .map((k: NodeKey): NodeRow => ({ account_id: r.account_id, level: k.level, idx: k.index, hash: tree.node(k) }))
      return { _tag: "head", head, nodes: newNodes, rebuild: false }
    }

    /** Prepares a batch of moved accounts: stored sizes, entries, the stored nodes they need (three statements). */
    const prepareMany = (rows: ReadonlyArray<typeof MovedRow.Type>) =>
      Effect.gen(function*() {
        const sizes = yield* nodes.storedSizes(rows.map((r) => r.account_id))
        const plans = rows.map((r) => planOf(r, sizes.get(r.account_id) ?? 0, false))
        const hashes = yield* hashesOfMany(plans)
        const requests = plans.flatMap((p) =>
          p.storedSize === 0 ? [] : neededNodes(
            { tileLevel: TILE_LEVEL, storedSize: p.storedSize, entry: (i) => (i >= p.from ? hashes.get(p.row.account_id)![i - p.from] : undefined) },
            computeOf(p)
          ).map((key) => ({ accountId: p.row.account_id, key }))
        )
        const stored = requests.length === 0 ? new Map<string, Map<string, Hex32>>() : yield* nodes.read(requests)
        const prepared: Array<Prepared> = []
        for (const p of plans) {
          const first = prepare(p, hashes.get(p.row.account_id)!, stored.get(p.row.account_id))
          if (first._tag !== "whole") {
            prepared.push(first)
            continue
          }
          // The stored nodes are a copy of what the entries give: when they disagree with the
          // anchored root, the entries are read whole (as every pass did before) and the nodes rebuilt.
          yield* Effect.logError(`stored tree nodes of ${p.row.account_id} do not give its anchored entries root; rebuilt from its entries`)
          const whole = planOf(p.row, 0, true)
          const all = (yield* hashesOfMany([whole])).get(p.row.account_id)!
          const again = prepare(whole, all, undefined)
          prepared.push(again._tag === "head" ? { ...again, rebuild: true } : again)
        }
        return prepared
      })

    /** Accounts per statement: entries of at most this many accounts are held in memory at once. */
    const BATCH = 500

    const none = (refused: ReadonlyArray<AnchorRefusal> = []): AnchorRound => ({ anchored: [], refused })

    /**
     * Heads anchored before their proofs were stored (migration 0410): one anchor of this
     * chain per round gets them, if its heads still give its root (else they are left to the
     * proof endpoint's recomputation, which the verifier then refuses, as before).
     */
    const fillHeadProofs = (chainId: number) =>
      Effect.gen(function*() {
        const [old] = yield* sql<{ anchor_id: string; merkle_root: string }>`
          SELECT ah.anchor_id, a.merkle_root FROM audit_anchor_heads ah JOIN audit_anchors a ON a.id = ah.anchor_id
          WHERE ah.head_proof IS NULL AND ah.entries_root IS NOT NULL AND a.chain_id = ${chainId} LIMIT 1`
        if (old === undefined) return
        const heads = (yield* sql<{ account_id: string; length: number; head_hash: string; entries_root: string | null }>`
          SELECT account_id, length, head_hash, entries_root FROM audit_anchor_heads WHERE anchor_id = ${old.anchor_id}`)
          .map((h): AnchoredHead => ({
            accountId: h.account_id,
            length: h.length,
            headHash: h.head_hash as Hex,
            entriesRoot: (h.entries_root ?? undefined) as Hex | undefined
          }))
        if (merkleRoot(heads) !== old.merkle_root) {
          return yield* Effect.logError(`the stored heads of anchor ${old.anchor_id} no longer give its root; their proofs are not stored`)
        }
        const proofs = merkleProofs(heads)
        for (let i = 0; i < heads.length; i += BATCH * 10) {
          const values = heads.slice(i, i + BATCH * 10).map((h) => sql`(${h.accountId}, ${proofs.get(leafOf(h))!.join(",")})`)
          yield* sql`
            UPDATE audit_anchor_heads ah SET head_proof = w.head_proof
            FROM (VALUES ${sql.csv(values)}) AS w (account_id, head_proof)
            WHERE ah.anchor_id = ${old.anchor_id} AND ah.account_id = w.account_id`
        }
      })

    const anchorWith = (net: ChainNetwork, send: Sender) =>
      sql.withTransaction(Effect.gen(function*() {
        const [lock] = yield* sql<{ ok: boolean }>`SELECT pg_try_advisory_xact_lock(${ADVISORY_KEY}, ${net.chainId}) AS ok`
        if (lock?.ok !== true) return none()
        yield* fillHeadProofs(net.chainId)
        const rows = yield* changed(net.chainId)
        const prepared: Array<Prepared> = []
        for (let i = 0; i < rows.length; i += BATCH) prepared.push(...(yield* prepareMany(rows.slice(i, i + BATCH))))
        const refused = prepared.flatMap((p) => (p._tag === "refused" ? [p.refusal] : []))
        for (const r of refused) {
          yield* Effect.logError(`audit chain of ${r.accountId} NOT anchored, its anchored history was rewritten: ${r.message}`)
        }
        const anchoring = prepared.flatMap((p) => (p._tag === "head" ? [p] : []))
        const heads = anchoring.map((p) => p.head)
        if (heads.length === 0) return none(refused)
        const root = merkleRoot(heads)
        const proofs = merkleProofs(heads)
        const txHash = yield* Effect.tryPromise(() => send(anchorCalldata(root)))
        const receipt = yield* Effect.tryPromise(() =>
          net.chain.client.waitForTransactionReceipt({ hash: txHash, timeout: 30_000 })
        )
        if (receipt.status !== "success") return yield* Effect.fail(new Error(`anchor transaction ${txHash} reverted`))
        const id = `anc_${crypto.randomUUID()}`
        yield* sql`
          INSERT INTO audit_anchors (id, chain_id, merkle_root, tx_hash, block_number, head_count, anchored_at)
          VALUES (${id}, ${net.chainId}, ${root}, ${txHash}, ${receipt.blockNumber.toString()}, ${heads.length}, now())`
        // Two statements per batch of heads, not two per head.
        for (let i = 0; i < heads.length; i += BATCH * 10) {
          const values = heads.slice(i, i + BATCH * 10).map((h) => ({
            anchor_id: id,
            account_id: h.accountId,
            length: h.length,
            head_hash: h.headHash,
            entries_root: h.entriesRoot ?? null
          }))
          const withProofs = values.map((v, j) => ({ ...v, head_proof: proofs.get(leafOf(heads[i + j]!))!.join(",") }))
          yield* sql`INSERT INTO audit_anchor_heads ${sql.insert(withProofs as [typeof withProofs[number], ...Array<typeof withProofs[number]>])}`
          yield* sql`
            INSERT INTO audit_anchor_state ${sql.insert(values as [typeof values[number], ...Array<typeof values[number]>])}
            ON CONFLICT (account_id) DO UPDATE
              SET anchor_id = EXCLUDED.anchor_id, length = EXCLUDED.length, head_hash = EXCLUDED.head_hash,
                  entries_root = EXCLUDED.entries_root`
        }
        // The nodes under what was just anchored: written once, read by every later pass and proof.
        for (const p of anchoring) if (p.rebuild) yield* nodes.forget(p.head.accountId)
        yield* nodes.write(anchoring.flatMap((p) => p.nodes))
        yield* Effect.logInfo(`anchored ${heads.length} audit chain head(s) on ${net.name}: root ${root} in ${txHash}`)
        const record: AnchorRecord = { id, chainId: net.chainId, merkleRoot: root, txHash, blockNumber: receipt.blockNumber, heads }
        return { anchored: [record], refused }
      }))

    // Each anchor chain on its own: one that is down (or slow) leaves the others' rounds alone. A failed
    // round is logged (a database outage once, and once when it ends); the next round retries.
    const healthOf = new Map(anchorChains.map(({ net }) => [net.chainId, makeLoopHealth(`anchoring on ${net.name}`)]))
    const anchorRound = Effect.forEach(anchorChains, ({ net, send }) =>
      healthOf.get(net.chainId)!.pass(anchorWith(net, send), none(), `anchoring on ${net.name} failed; the next round retries`),
      { concurrency: "unbounded" }).pipe(
      Effect.map((rounds): AnchorRound => ({ anchored: rounds.flatMap((r) => r.anchored), refused: rounds.flatMap((r) => r.refused) })),
      Effect.withSpan("Anchor.anchorNow")
    )
    const available = anchorChains.length > 0

    const summary = Effect.fn("Anchor.summary")(function*(accountIds: ReadonlyArray<string>, primary: string | undefined) {
      if (accountIds.length === 0) return { available, unanchoredCount: 0, anchoredHead: undefined }
      const rows = yield* sql<{
        account_id: string
        length: number
        anchored: number
        anchored_head: string | null
        hash_at_anchor: string | null
        merkle_root: string | null
        tx_hash: string | null
        block_number: string | null
        anchored_at: string | null
      }>`
        SELECT h.account_id, h.length, COALESCE(s.length, 0) AS anchored, s.head_hash AS anchored_head,
          e.hash AS hash_at_anchor, a.merkle_root, a.tx_hash, a.block_number::text AS block_number,
          to_char(a.anchored_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS anchored_at
        FROM audit_heads h LEFT JOIN audit_anchor_state s ON s.account_id = h.account_id
          LEFT JOIN audit_anchors a ON a.id = s.anchor_id
          LEFT JOIN audit_entries e ON e.account_id = h.account_id AND e.chain_index = s.length
        WHERE h.account_id IN ${sql.in(accountIds)}`.pipe(Effect.orDie)
      // The entry at the last anchored length no longer carries the anchored hash: history was
      // rewritten. Named exactly against every anchor of the account (rare: only then).
      const rewrites = yield* Effect.forEach(
        rows.filter((r) => r.anchored_head !== null && r.hash_at_anchor !== r.anchored_head),
        (r) => rewriteOf(r.account_id, r.length)
      ).pipe(Effect.map((found) => found.flatMap((x) => (x === undefined ? [] : [x]))))
      const rewriteOfAccount = new Map(rewrites.map((w) => [w.accountId, w]))
      // Unanchored: what follows the anchored length, and on a rewritten chain everything from the first
      // entry that may have been rewritten. (A rewritten chain can be shorter than its anchor: never negative.)
      const unanchoredCount = rows.reduce((n, r) => {
        const w = rewriteOfAccount.get(r.account_id)
        return n + Math.max(0, r.length - (w === undefined ? r.anchored : w.from - 1))
      }, 0)
      const rewrite = (primary === undefined ? undefined : rewriteOfAccount.get(primary)) ?? rewrites[0]
      const p = rows.find((r) => r.account_id === primary)
      const latest = p === undefined || p.anchored_head === null || p.merkle_root === null || p.tx_hash === null ||
          p.block_number === null || p.anchored_at === null
        ? undefined
        : { length: p.anchored, merkleRoot: p.merkle_root, txHash: p.tx_hash, blockNumber: p.block_number, anchoredAt: p.anchored_at }
      // Each account's proven prefix: on a rewritten chain only what precedes the rewrite still proves.
      const anchoredLengths = rows.map((r) => {
        const w = rewriteOfAccount.get(r.account_id)
        return { accountId: r.account_id, anchoredLength: w === undefined ? r.anchored : Math.min(r.anchored, w.from - 1) }
      }).sort((a, b) => (a.accountId < b.accountId ? -1 : a.accountId > b.accountId ? 1 : 0))
      return {
        available,
        unanchoredCount,
        anchoredHead: p?.anchored_head ?? undefined,
        latest,
        anchoredLengths,
        ...(rewrite === undefined ? {} : { rewrite })
      }
    })

    /** How an account's chain departs from its anchored heads (undefined: it does not). */
    const rewriteOf = (accountId: string, length: number) =>
      Effect.gen(function*() {
        const points = yield* sql<{ length: number; head_hash: string }>`
          SELECT length, head_hash FROM audit_anchor_heads WHERE account_id = ${accountId} ORDER BY length`
        const hashes = yield* hashesOf(accountId, Math.max(length, ...points.map((p) => p.length)))
        const found = checkAnchored(hashes, points.map((p) => ({ length: p.length, headHash: p.head_hash })))
        return found === undefined ? undefined : ({ accountId, ...found } satisfies AnchorRefusal)
      }).pipe(Effect.orDie)

    return Anchor.of({
      available,
      anchorNow: Effect.map(anchorRound, (r) => r.anchored),
      anchorRound,
      summary
    })
  })
)

/** Runs `anchorNow` every `ANCHOR_INTERVAL` (default 60 s; `0 seconds` turns the schedule off). */
export const AnchorScheduleLive = Layer.effectDiscard(
  Effect.gen(function*() {
    const anchor = yield* Anchor
    yield* registerAnchorMetrics
    const interval = yield* Config.Duration("ANCHOR_INTERVAL").pipe(Config.withDefault(Duration.seconds(60)))
    if (!anchor.available || Duration.toMillis(interval) === 0) return
    yield* runLoop({
      name: "anchor",
      interval,
      initialDelay: interval,
      pass: Effect.map(anchor.anchorNow, (anchored) => (anchored.length > 0 ? "worked" : "idle"))
    })
  })
)
