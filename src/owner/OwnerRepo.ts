/**
 * Every statement of the owner feature (migration 0290), as named functions with decoded
 * rows; no rules. The chain holds the account's signers, guardians and settings; these
 * tables hold what it cannot (labels, the signed delegation to the Recovery contract).
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"

export const StoredDelegation = Schema.Struct({
  delegate: Schema.String,
  delegator: Schema.String,
  authority: Schema.String,
  caveats: Schema.Array(Schema.Struct({ enforcer: Schema.String, terms: Schema.String, args: Schema.String })),
  salt: Schema.String,
  signature: Schema.String
})
export type StoredDelegation = typeof StoredDelegation.Type

export const RecoveryDelegationRow = Schema.Struct({
  hash: Schema.String,
  account_id: Schema.String,
  chain_id: Schema.Number,
  delegation: StoredDelegation,
  signature: Schema.NullOr(Schema.String),
  installed_at: Schema.NullOr(Schema.Date),
  created_at: Schema.Date
})
export type RecoveryDelegationRow = typeof RecoveryDelegationRow.Type

const LabelRow = Schema.Struct({ device: Schema.String, label: Schema.String })
const GuardianLabelRow = Schema.Struct({ guardian: Schema.String, label: Schema.String })

const decodeAll = <S extends Schema.Top>(schema: S) => <E, R>(effect: Effect.Effect<ReadonlyArray<unknown>, E, R>) =>
  effect.pipe(Effect.flatMap(Schema.decodeUnknownEffect(Schema.Array(schema))), Effect.orDie)

export class OwnerRepo extends Context.Service<OwnerRepo, {
  upsertLabel(accountId: string, device: string, kind: "passkey" | "eoa", label: string): Effect.Effect<void>
  labelsOf(accountId: string): Effect.Effect<ReadonlyArray<typeof LabelRow.Type>>

  insertRecoveryDelegation(d: { hash: string; accountId: string; chainId: number; delegation: StoredDelegation }): Effect.Effect<void>
  findRecoveryDelegation(hash: string): Effect.Effect<RecoveryDelegationRow | undefined>
  /** The account's delegations to the Recovery contract, newest first. */
  recoveryDelegationsOf(accountId: string): Effect.Effect<ReadonlyArray<RecoveryDelegationRow>>
  setSignature(hash: string, signature: string): Effect.Effect<void>
  markInstalled(hash: string, txHash: string): Effect.Effect<void>

  upsertGuardianLabels(accountId: string, guardians: ReadonlyArray<{ readonly address: string; readonly label: string }>): Effect.Effect<void>
  guardianLabels(accountId: string): Effect.Effect<ReadonlyArray<typeof GuardianLabelRow.Type>>
}>()("das/owner/OwnerRepo") {
  static readonly layer = Layer.effect(OwnerRepo, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const delegations = decodeAll(RecoveryDelegationRow)
    return OwnerRepo.of({
      upsertLabel: (accountId, device, kind, label) =>
        sql`INSERT INTO owner_device_labels (account_id, device, kind, label)
            VALUES (${accountId}, ${device.toLowerCase()}, ${kind}, ${label})
            ON CONFLICT (account_id, device) DO UPDATE SET label = EXCLUDED.label`.pipe(Effect.asVoid, Effect.orDie),
      labelsOf: (accountId) =>
        decodeAll(LabelRow)(sql`SELECT device, label FROM owner_device_labels WHERE account_id = ${accountId}`),

      insertRecoveryDelegation: (d) =>
        sql`INSERT INTO owner_recovery_delegations (hash, account_id, chain_id, delegation)
            VALUES (${d.hash.toLowerCase()}, ${d.accountId}, ${d.chainId}, ${JSON.stringify(d.delegation)}::jsonb)
            ON CONFLICT (hash) DO NOTHING`.pipe(Effect.asVoid, Effect.orDie),
      findRecoveryDelegation: (hash) =>
        delegations(sql`SELECT hash, account_id, chain_id, delegation, signature, installed_at, created_at
                        FROM owner_recovery_delegations WHERE hash = ${hash.toLowerCase()}`).pipe(Effect.map((rows) => rows[0])),
      recoveryDelegationsOf: (accountId) =>
        delegations(sql`SELECT hash, account_id, chain_id, delegation, signature, installed_at, created_at
                        FROM owner_recovery_delegations WHERE account_id = ${accountId}
                        ORDER BY created_at DESC, hash`),
      setSignature: (hash, signature) =>
        sql`UPDATE owner_recovery_delegations SET signature = ${signature}, signed_at = now() WHERE hash = ${hash.toLowerCase()}`.pipe(
          Effect.asVoid,
          Effect.orDie
        ),
      markInstalled: (hash, txHash) =>
        sql`UPDATE owner_recovery_delegations
            SET installed_at = COALESCE(installed_at, now()), install_tx_hash = COALESCE(install_tx_hash, ${txHash})
            WHERE hash = ${hash.toLowerCase()}`.pipe(Effect.asVoid, Effect.orDie),

      upsertGuardianLabels: (accountId, guardians) =>
        Effect.forEach(guardians, (g) =>
          sql`INSERT INTO owner_guardian_labels (account_id, guardian, label) VALUES (${accountId}, ${g.address.toLowerCase()}, ${g.label})
              ON CONFLICT (account_id, guardian) DO UPDATE SET label = EXCLUDED.label`, { discard: true }).pipe(Effect.orDie),
      guardianLabels: (accountId) =>
        decodeAll(GuardianLabelRow)(sql`SELECT guardian, label FROM owner_guardian_labels WHERE account_id = ${accountId}`)
    })
  }))
}
