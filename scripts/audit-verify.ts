/**
 * Walks audit chains and names the first broken link (docs/audit-log.md).
 *
 *   npm run audit:verify -- --account acc_…          # one account's chain
 *   npm run audit:verify -- --all                    # every chain
 *   npm run audit:verify -- --account acc_… --export # the stored entries as JSON lines, for
 *                                                    # re-verification with jq + sha256sum
 *
 * Reads DATABASE_URL, or starts the embedded PostgreSQL under DATA_DIR (default `.data`;
 * stop the service first, or point DATABASE_URL at the server it runs).
 * Exit status: 0 every chain verified, 1 a chain is broken, 2 usage error.
 */
import { Effect, Layer, Logger, References } from "effect"
import { SqlClient } from "effect/sql"
import { AuditChain } from "../src/audit/AuditChain.ts"
import { PgLive } from "../src/db/Database.ts"

const args = process.argv.slice(2)
const usage = () => {
  console.error("usage: audit-verify (--account <accountId>)... | --all  [--export]")
  process.exit(2)
}
const accounts: Array<string> = []
let all = false
let exportMode = false
for (let i = 0; i < args.length; i++) {
  const a = args[i]
  if (a === "--account") {
    const id = args[++i]
    if (id === undefined) usage()
    accounts.push(id!)
  } else if (a?.startsWith("--account=")) accounts.push(a.slice("--account=".length))
  else if (a === "--all") all = true
  else if (a === "--export") exportMode = true
  else usage()
}
if (accounts.length === 0 && !all) usage()

const program = Effect.gen(function*() {
  const chain = yield* AuditChain
  const sql = yield* SqlClient.SqlClient
  const ids = all
    ? (yield* sql<{ account_id: string }>`
        SELECT account_id FROM audit_heads UNION SELECT DISTINCT account_id FROM audit_entries ORDER BY 1`)
      .map((r) => r.account_id)
    : accounts
  if (exportMode) {
    for (const id of ids) {
      for (const entry of yield* chain.entries(id)) console.log(JSON.stringify(entry))
    }
    return 0
  }
  let broken = 0
  for (const id of ids) {
    const result = yield* chain.verify(id)
    if (result.ok) {
      console.log(`${id}: ok, ${result.length} entries, head ${result.headHash}`)
    } else {
      broken++
      console.log(`${id}: BROKEN at entry #${result.broken.index} (${result.broken.kind}): ${result.broken.message}`)
      console.log(`${id}: the first ${result.length} entries verify`)
    }
  }
  if (ids.length === 0) console.log("no audit chains found")
  return broken === 0 ? 0 : 1
})

const code = await Effect.runPromise(
  program.pipe(
    Effect.provide(AuditChain.layer.pipe(Layer.provideMerge(PgLive))),
    // Logs (the embedded database starting) go to stderr; stdout is the report.
    Effect.provideService(Logger.LogToStderr, true),
    Effect.provideService(References.MinimumLogLevel, "Warn"),
    Effect.scoped
  )
)
process.exit(code)
