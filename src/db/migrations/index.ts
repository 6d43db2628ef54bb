/**
 * Every migration, in order. A migration is never edited once landed: add a new one.
 */
import { Migrator } from "effect/sql"
import foundation from "./0001_foundation.ts"
import audit from "./0002_audit.ts"
import marketplace from "./0030_marketplace.ts"

export const migrations = Migrator.fromRecord({
  "0001_foundation": foundation,
  "0002_audit": audit,
  "0030_marketplace": marketplace
})
