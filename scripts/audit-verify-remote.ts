/**
 * Verifies an account's audit chain from the HTTP API alone (docs/audit-log.md,
 * "Verifying over HTTP"): no database access, only the signer's session token.
 *
 *   npm run audit:verify-remote -- --url http://127.0.0.1:8080 --token $TOKEN [--account acc_…]
 *
 * Exit status: 0 the chain verifies, 1 it is broken (the first broken link is named),
 * 2 usage or transport error.
 */
import { verifyRemote } from "../src/audit/RemoteVerify.ts"

const args = process.argv.slice(2)
const usage = (): never => {
  console.error("usage: audit-verify-remote --url <base url> --token <session token> [--account <accountId>]")
  process.exit(2)
}
const options: { url?: string; token?: string; accountId?: string } = {}
for (let i = 0; i < args.length; i++) {
  const [flag, inline] = args[i]!.split(/=(.*)/s, 2)
  const value = inline ?? args[++i] ?? usage()
  if (flag === "--url") options.url = value
  else if (flag === "--token") options.token = value
  else if (flag === "--account") options.accountId = value
  else usage()
}
if (options.url === undefined || options.token === undefined) usage()

try {
  const { accountId, anchor, entries, result } = await verifyRemote({
    url: options.url!,
    token: options.token!,
    accountId: options.accountId
  })
  const name = accountId ?? "(no entries)"
  if (result.ok) {
    console.log(`${name}: ok, ${entries.length} entries, head ${result.headHash}`)
    if (anchor !== undefined) console.log(`${name}: the anchored head at length ${anchor.length} matches`)
    process.exit(0)
  }
  console.log(`${name}: BROKEN at entry #${result.broken.index} (${result.broken.kind}): ${result.broken.message}`)
  console.log(`${name}: the first ${result.length} entries verify`)
  process.exit(1)
} catch (error) {
  console.error(`audit-verify-remote: ${error instanceof Error ? error.message : String(error)}`)
  process.exit(2)
}
