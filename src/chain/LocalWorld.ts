/**
 * The local chains and the database that describes them are one world (issue 45): kept
 * together across restarts (`LOCAL_CHAIN_STATE=keep`, the default: the chains' state under
 * `DATA_DIR/chains`), or started afresh together (`LOCAL_CHAIN_STATE=fresh`, or a chain whose
 * state is not kept) — never a database describing a chain that is gone.
 */
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { Config, Context, Effect, Option } from "effect"
import { SqlClient } from "effect/sql"
import { createPublicClient, http } from "viem"
import { releaseDataDir } from "../db/EmbeddedPostgres.ts"
import type { LocalNetworkDescription } from "./LocalNetwork.ts"
import { isKept } from "./LocalState.ts"

/** `keep` (default): the local chains keep their state across restarts; `fresh`: they start afresh. */
export const LocalChainState = Config.Literals(["keep", "fresh"], "LOCAL_CHAIN_STATE").pipe(Config.withDefault("keep"))

const exists = (p: string) => fs.access(p).then(() => true, () => false)

/**
 * Before the embedded database and the local chains start: with `fresh`, or when any chain's
 * state is not kept, every chain starts afresh, and the embedded database (when it is the one
 * in use: `embeddedDb`) is moved aside to `DATA_DIR/postgres.previous` (the one before it is
 * deleted) so that a new one starts with the chains. Returns where the chains keep their state.
 */
export const prepareLocalWorld = (options: {
  readonly dataDir: string
  readonly chainIds: ReadonlyArray<number>
  readonly embeddedDb: boolean
}) =>
  Effect.gen(function*() {
    const mode = yield* LocalChainState
    const stateRoot = path.resolve(options.dataDir, "chains")
    const kept = mode === "keep" &&
      (yield* Effect.forEach(options.chainIds, (id) => isKept(path.join(stateRoot, String(id))))).every(Boolean)
    if (kept) return stateRoot
    yield* Effect.promise(() => fs.rm(stateRoot, { recursive: true, force: true }))
    const pgDir = path.resolve(options.dataDir, "postgres")
    if (options.embeddedDb && (yield* Effect.promise(() => exists(path.join(pgDir, "PG_VERSION"))))) {
      // A server an earlier run left running on it is stopped first (EmbeddedPostgres.ts).
      yield* Effect.orDie(releaseDataDir(pgDir))
      const previous = `${pgDir}.previous`
      yield* Effect.promise(async () => {
        await fs.rm(previous, { recursive: true, force: true })
        await fs.rename(pgDir, previous)
      })
      yield* Effect.logWarning(
        `local chains start afresh (${mode === "fresh" ? "LOCAL_CHAIN_STATE=fresh" : "their state was not kept"}): ` +
          `the embedded database described the chains that are gone, moved to ${previous}; a new one starts with them`
      )
    } else if (mode === "fresh") {
      yield* Effect.logInfo("local chains start afresh (LOCAL_CHAIN_STATE=fresh)")
    }
    return stateRoot
  })

/**
 * After both started: the database records each local chain's identity, the hash of its block 1
 * (anvil rewrites block 0 when it loads its state a second time), and a database that recorded
 * another one (or whose follower read blocks this chain does not have) describes a
 * chain that is gone: the start fails, naming what to do.
 */
export const checkLocalWorld = (networks: ReadonlyArray<LocalNetworkDescription>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    for (const net of networks) {
      const client = createPublicClient({ transport: http(net.rpcUrl) })
      const first = yield* Effect.promise(() => client.getBlock({ blockNumber: 1n }))
      const recorded = yield* sql<{ first_block_hash: string }>`
        SELECT first_block_hash FROM local_chain_identity WHERE chain_id = ${net.chainId}`
      let gone = recorded.length > 0 && recorded[0]!.first_block_hash !== first.hash
      if (recorded.length === 0) {
        // A database from before the identity was recorded: its follower's cursor must be on this chain.
        const cursor = yield* sql<{ block_number: string; block_hash: string }>`
          SELECT block_number::text, block_hash FROM chain_cursor WHERE chain_id = ${net.chainId}`
        if (cursor.length > 0) {
          const block = yield* Effect.promise(() =>
            client.getBlock({ blockNumber: BigInt(cursor[0]!.block_number) }).then((b) => b.hash, () => undefined)
          )
          gone = block !== cursor[0]!.block_hash
        }
      }
      if (gone) {
        return yield* Effect.die(
          new Error(
            `chain ${net.chainId}: the database describes a local chain that is gone (this one started afresh); ` +
              "use an empty database (DATABASE_URL), or LOCAL_CHAIN_STATE=keep with the chains' state under DATA_DIR/chains"
          )
        )
      }
      yield* sql`
        INSERT INTO local_chain_identity (chain_id, first_block_hash) VALUES (${net.chainId}, ${first.hash})
        ON CONFLICT (chain_id) DO NOTHING`
    }
  })

/** Where the local chains keep their state (none: configured networks, or fresh chains every start). */
export class LocalWorld extends Context.Service<LocalWorld, { readonly stateRoot: Option.Option<string> }>()(
  "app/chain/LocalWorld"
) {}
