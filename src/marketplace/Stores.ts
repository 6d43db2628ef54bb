/**
 * The marketplace's stores backed by the service's own data: the managed wallet
 * each signer connected (PostgreSQL, survives restarts) and the addresses whose
 * jobs a signer may read (the signer and its smart accounts). The hiring mandates are
 * hiring's (`hiring/Repository.ts`).
 */
import { Effect, Layer, Option, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { Accounts } from "../accounts/Accounts.ts"
import { ManagedWallets, MarketplaceCallers } from "./Marketplace.ts"

export const ManagedWalletsSql = Layer.effect(
  ManagedWallets,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const find = SqlSchema.findOneOption({
      Request: Schema.String,
      Result: Schema.Struct({ wallet_address: Schema.String }),
      execute: (signer) => sql`SELECT wallet_address FROM managed_wallets WHERE signer_address = ${signer}`
    })
    return ManagedWallets.of({
      get: Effect.fn("ManagedWallets.get")(function*(signer) {
        const row = yield* find(signer.toLowerCase()).pipe(Effect.orDie)
        return Option.map(row, (r) => r.wallet_address)
      }),
      set: Effect.fn("ManagedWallets.set")(function*(signer, wallet) {
        yield* sql`
          INSERT INTO managed_wallets (signer_address, wallet_address, connected_at)
          VALUES (${signer.toLowerCase()}, ${wallet.toLowerCase()}, now())
          ON CONFLICT (signer_address) DO UPDATE SET wallet_address = EXCLUDED.wallet_address, connected_at = now()`
          .pipe(Effect.orDie)
      })
    })
  })
)

export const MarketplaceCallersFromAccounts = Layer.effect(
  MarketplaceCallers,
  Effect.gen(function*() {
    const accounts = yield* Accounts
    return MarketplaceCallers.of({
      addressesOf: Effect.fn("MarketplaceCallers.addressesOf")(function*(signer) {
        const list = yield* accounts.list(signer)
        return [signer.toLowerCase(), ...list.map((a) => a.address.toLowerCase())]
      })
    })
  })
)
