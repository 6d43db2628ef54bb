/**
 * Anchoring: on a schedule, one transaction commits the Merkle root of every
 * account's audit chain head that moved since its last anchor (Merkle.ts), and
 * records which heads it covered. `/activity/anchor` reports from these records.
 *
 * Who sends the transaction: `ANCHOR_PRIVATE_KEY` on a configured network; on the
 * local network an unlocked dev account (anvil assigns its nonces, so several
 * service processes on one chain never collide). Neither: anchoring is unavailable.
 * Several processes on one database anchor once per round (an advisory lock).
 */
import { Config, Context, Duration, Effect, Layer, Option, Redacted, Schedule, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { createWalletClient, type Hex, http } from "viem"
import { privateKeyToAccount } from "viem/accounts"
import { Chain, viemChainOf } from "../chain/Chain.ts"
import { LocalNetwork } from "../chain/LocalNetwork.ts"
import { Network } from "../chain/Network.ts"
import { type AnchoredHead, anchorCalldata, merkleRoot } from "./Merkle.ts"

/** anvil's dev account #5 (public key of the well-known test mnemonic): local anchoring only. */
export const LOCAL_ANCHOR_ACCOUNT: Hex = "0x9965507D1a55bcC2695C58ba16FB37d819B0A4dc"
const ADVISORY_KEY = 0x616e6368 // "anch"

export interface AnchorRecord {
  readonly id: string
  readonly merkleRoot: Hex
  readonly txHash: Hex
  readonly blockNumber: bigint
  readonly heads: ReadonlyArray<AnchoredHead>
}

export interface AnchorSummary {
  readonly available: boolean
  readonly unanchoredCount: number
  readonly anchoredHead: string | undefined
}

export class Anchor extends Context.Service<Anchor, {
  readonly available: boolean
  /** Anchors every head that moved; none when nothing moved or another process holds the round. */
  readonly anchorNow: Effect.Effect<Option.Option<AnchorRecord>>
  /** What is anchored of these accounts (`primary` names whose head is reported). */
  readonly summary: (accountIds: ReadonlyArray<string>, primary: string | undefined) => Effect.Effect<AnchorSummary>
}>()("das/anchor/Anchor") {}

const HeadRow = Schema.Struct({ account_id: Schema.String, length: Schema.Number, head_hash: Schema.String })

type Sender = (data: Hex) => Promise<Hex>

const makeSender = Effect.gen(function*() {
  const network = yield* Network
  const key = yield* Config.option(Config.Redacted("ANCHOR_PRIVATE_KEY"))
  const local = yield* Effect.serviceOption(LocalNetwork)
  const chain = viemChainOf(network)
  if (Option.isSome(key)) {
    const account = privateKeyToAccount(Redacted.value(key.value) as Hex)
    const wallet = createWalletClient({ account, chain, transport: http(network.rpcUrl) })
    return Option.some<Sender>((data) => wallet.sendTransaction({ to: account.address, data, value: 0n }))
  }
  if (Option.isSome(local)) {
    const wallet = createWalletClient({ chain, transport: http(network.rpcUrl) })
    return Option.some<Sender>((data) =>
      wallet.sendTransaction({ account: LOCAL_ANCHOR_ACCOUNT, to: LOCAL_ANCHOR_ACCOUNT, data, value: 0n })
    )
  }
  return Option.none<Sender>()
})

export const AnchorLive = Layer.effect(
  Anchor,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const chain = yield* Chain
    const network = yield* Network
    const sender = yield* makeSender

    const moved = () =>
      sql`SELECT h.account_id, h.length, h.head_hash FROM audit_heads h
          LEFT JOIN audit_anchor_state s ON s.account_id = h.account_id
          WHERE h.length > COALESCE(s.length, 0)
          ORDER BY h.account_id`.pipe(Effect.flatMap(Schema.decodeUnknownEffect(Schema.Array(HeadRow))))

    const anchorWith = (send: Sender) =>
      sql.withTransaction(Effect.gen(function*() {
        const [lock] = yield* sql<{ ok: boolean }>`SELECT pg_try_advisory_xact_lock(${ADVISORY_KEY}) AS ok`
        if (lock?.ok !== true) return Option.none<AnchorRecord>()
        const rows = yield* moved()
        if (rows.length === 0) return Option.none<AnchorRecord>()
        const heads = rows.map((r): AnchoredHead => ({ accountId: r.account_id, length: r.length, headHash: r.head_hash as Hex }))
        const root = merkleRoot(heads)
        const txHash = yield* Effect.tryPromise(() => send(anchorCalldata(root)))
        const receipt = yield* Effect.tryPromise(() =>
          chain.client.waitForTransactionReceipt({ hash: txHash, timeout: 30_000 })
        )
        if (receipt.status !== "success") return yield* Effect.fail(new Error(`anchor transaction ${txHash} reverted`))
        const id = `anc_${crypto.randomUUID()}`
        yield* sql`
          INSERT INTO audit_anchors (id, chain_id, merkle_root, tx_hash, block_number, head_count, anchored_at)
          VALUES (${id}, ${network.chainId}, ${root}, ${txHash}, ${receipt.blockNumber.toString()}, ${heads.length}, now())`
        for (const h of heads) {
          yield* sql`INSERT INTO audit_anchor_heads (anchor_id, account_id, length, head_hash)
                     VALUES (${id}, ${h.accountId}, ${h.length}, ${h.headHash})`
          yield* sql`
            INSERT INTO audit_anchor_state (account_id, anchor_id, length, head_hash)
            VALUES (${h.accountId}, ${id}, ${h.length}, ${h.headHash})
            ON CONFLICT (account_id) DO UPDATE
              SET anchor_id = EXCLUDED.anchor_id, length = EXCLUDED.length, head_hash = EXCLUDED.head_hash`
        }
        yield* Effect.logInfo(`anchored ${heads.length} audit chain head(s): root ${root} in ${txHash}`)
        return Option.some<AnchorRecord>({ id, merkleRoot: root, txHash, blockNumber: receipt.blockNumber, heads })
      }))

    const anchorNow = Option.isNone(sender)
      ? Effect.succeed(Option.none<AnchorRecord>())
      : anchorWith(sender.value).pipe(
        Effect.tapCause((cause) => Effect.logWarning("anchoring failed; the next round retries", cause)),
        Effect.orElseSucceed(() => Option.none<AnchorRecord>()),
        Effect.withSpan("Anchor.anchorNow")
      )

    const summary = Effect.fn("Anchor.summary")(function*(accountIds: ReadonlyArray<string>, primary: string | undefined) {
      if (accountIds.length === 0) return { available: Option.isSome(sender), unanchoredCount: 0, anchoredHead: undefined }
      const rows = yield* sql<{ account_id: string; length: number; anchored: number; anchored_head: string | null }>`
        SELECT h.account_id, h.length, COALESCE(s.length, 0) AS anchored, s.head_hash AS anchored_head
        FROM audit_heads h LEFT JOIN audit_anchor_state s ON s.account_id = h.account_id
        WHERE h.account_id IN ${sql.in(accountIds)}`.pipe(Effect.orDie)
      const unanchoredCount = rows.reduce((n, r) => n + (r.length - r.anchored), 0)
      const head = rows.find((r) => r.account_id === primary)?.anchored_head ?? undefined
      return { available: Option.isSome(sender), unanchoredCount, anchoredHead: head }
    })

    return Anchor.of({ available: Option.isSome(sender), anchorNow, summary })
  })
)

/** Runs `anchorNow` every `ANCHOR_INTERVAL` (default 60 s; `0 seconds` turns the schedule off). */
export const AnchorScheduleLive = Layer.effectDiscard(
  Effect.gen(function*() {
    const anchor = yield* Anchor
    const interval = yield* Config.Duration("ANCHOR_INTERVAL").pipe(Config.withDefault(Duration.seconds(60)))
    if (!anchor.available || Duration.toMillis(interval) === 0) return
    yield* anchor.anchorNow.pipe(Effect.repeat(Schedule.spaced(interval)), Effect.delay(interval), Effect.forkScoped)
  })
)
