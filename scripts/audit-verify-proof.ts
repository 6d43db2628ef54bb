/**
 * Verifies an audit entry's inclusion proof against the chain (docs/audit-log.md,
 * "Proving an entry"): the entry's hash from its fields, its RFC 6962 path to the
 * account's entries root, the anchored head's path to the anchor root, and the anchor
 * transaction read over JSON-RPC (tag + root, mined, successful).
 *
 *   npm run audit:verify-proof -- --rpc <url> proof.json
 *   npm run audit:verify-proof -- --rpc <url> --url <base url> --token <session token> --event evt_…
 *
 * Exit status: 0 proven, 1 the proof fails (the failing step is named), 2 usage or transport error.
 */
import { readFileSync } from "node:fs"
import { Schema } from "effect"
import { verifyProofOnChain } from "../src/anchor/ProofVerify.ts"
import { AuditProof } from "../src/audit/Domain.ts"

const args = process.argv.slice(2)
const usage = (): never => {
  console.error(
    "usage: audit-verify-proof --rpc <url> (<proof.json> | --url <base url> --token <session token> --event <eventId>)"
  )
  process.exit(2)
}
const opts: Record<string, string> = {}
let file: string | undefined
for (let i = 0; i < args.length; i++) {
  const a = args[i]!
  if (!a.startsWith("--")) {
    file = a
    continue
  }
  const [flag, inline] = a.split(/=(.*)/s, 2)
  if (!["--rpc", "--url", "--token", "--event"].includes(flag!)) usage()
  opts[flag!.slice(2)] = inline ?? args[++i] ?? usage()
}
if (opts.rpc === undefined) usage()
if (file === undefined && (opts.url === undefined || opts.token === undefined || opts.event === undefined)) usage()

try {
  const raw: unknown = file !== undefined
    ? JSON.parse(readFileSync(file, "utf8"))
    : await (async () => {
      const url = `${opts.url!.replace(/\/+$/, "")}/activity/${encodeURIComponent(opts.event!)}/proof`
      const res = await fetch(url, { headers: { authorization: `Bearer ${opts.token}` } })
      const text = await res.text()
      if (!res.ok) throw new Error(`GET ${url}: HTTP ${res.status} ${text}`)
      return JSON.parse(text)
    })()
  const proof = Schema.decodeUnknownSync(AuditProof)(raw)
  const result = await verifyProofOnChain(proof, opts.rpc!)
  for (const line of result.checks) console.log(`ok: ${line}`)
  if (result.ok) {
    console.log(`PROVEN: entry ${proof.event.id} is under anchor ${proof.anchor.txHash}`)
    process.exit(0)
  }
  console.log(`FAILED: ${result.failure}`)
  process.exit(1)
} catch (error) {
  console.error(`audit-verify-proof: ${error instanceof Error ? error.message : String(error)}`)
  process.exit(2)
}
