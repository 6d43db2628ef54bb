/**
 * Every migration, in order. A migration is never edited once landed: add a new one.
 */
import { Migrator } from "effect/sql"
import foundation from "./0001_foundation.ts"

export const migrations = Migrator.fromRecord({
  "0001_foundation": foundation
})
