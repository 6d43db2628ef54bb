/**
 * The floor for bench/relay.ts (issue 46, item 2): `POST /userops` with the relay's guarantees
 * written plainly on bare `node:http` + `pg`. Per request: hash the bearer and find the live
 * session; recompute the operation's ERC-4337 hash; INSERT the operation as `submitted` (its
 * commit waited for: persisted before forwarded) into a table shaped like `user_operations`
 * (`LIKE ... INCLUDING ALL`: its columns, defaults and indexes, no foreign keys); forward it
 * with `eth_sendUserOperation`; answer the hash. No build lookup, no policy, no validation, no
 * envelope, no tracing: what the service adds over this is its own cost.
 */
import { createHash, randomUUID } from "node:crypto"
import { createServer } from "node:http"
import pg from "pg"
import { type Address, keccak256, toBytes } from "viem"
import { formatUserOperationRequest, getUserOperationHash } from "viem/account-abstraction"
import { fromWire } from "../../src/builds/Wire.ts"
import type { UserOperation } from "../../src/domain/Operations.ts"

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 })
const port = Number(process.env.PORT)
const bundlerUrl = process.env.BUNDLER_URL!
const entryPoint = process.env.ENTRY_POINT! as Address
const chainId = Number(process.env.CHAIN_ID)

await pool.query("CREATE TABLE IF NOT EXISTS relay_floor_operations (LIKE user_operations INCLUDING ALL)")

const readBody = (req: import("node:http").IncomingMessage) =>
  new Promise<string>((resolve, reject) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")))
    req.on("error", reject)
  })

createServer(async (req, res) => {
  try {
    const token = (req.headers.authorization ?? "").replace(/^Bearer /, "")
    const hash = createHash("sha256").update(token).digest()
    const [body, session] = [
      await readBody(req),
      await pool.query("SELECT signer_address FROM sessions WHERE token_hash = $1 AND revoked_at IS NULL AND expires_at > now()", [hash])
    ]
    if (session.rowCount === 0) {
      res.writeHead(401, { "content-type": "application/json" }).end('{"error":{"code":"unauthorized"}}')
      return
    }
    const wire = JSON.parse(body) as UserOperation
    const op = fromWire(wire)
    const userOpHash = getUserOperationHash({ userOperation: op, chainId, entryPointAddress: entryPoint, entryPointVersion: "0.7" }).toLowerCase()
    await pool.query(
      `INSERT INTO relay_floor_operations (id, build_id, account_id, signer_address, intent_type, chain_id, sender, nonce,
                                           user_op_hash, signature_digest, user_op, status, outcome, send_attempts, send_lease_until, submitted_at)
       VALUES ($1, $2, $3, $4, 'account_freeze', $5, $6, $7, $8, $9, $10::jsonb, 'submitted', 'pending', 1, now() + interval '30 seconds', now())`,
      [
        `uop_${randomUUID()}`,
        `floor_${randomUUID()}`,
        `floor_account`,
        session.rows[0].signer_address,
        chainId,
        wire.sender.toLowerCase(),
        op.nonce.toString(),
        userOpHash,
        keccak256(toBytes(wire.signature.toLowerCase())),
        JSON.stringify({ ...wire, sender: wire.sender.toLowerCase() })
      ]
    )
    const sent = await fetch(bundlerUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_sendUserOperation", params: [formatUserOperationRequest(op), entryPoint] })
    })
    const answer = (await sent.json()) as { result?: string; error?: { message: string } }
    if (answer.result === undefined) {
      res.writeHead(502, { "content-type": "application/json" }).end(JSON.stringify({ error: answer.error?.message ?? "bundler" }))
      return
    }
    res.writeHead(202, { "content-type": "application/json" }).end(JSON.stringify({ userOpHash, status: "submitted" }))
  } catch (e) {
    res.writeHead(500).end(String(e))
  }
}).listen(port, "127.0.0.1", () => console.log("ready"))
