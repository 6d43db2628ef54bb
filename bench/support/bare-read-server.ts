/**
 * The baseline for bench/http-read.ts: a bare `node:http` + `pg` handler doing the
 * same work as `GET /accounts` (hash the bearer, find the live session, read the
 * signer's accounts, answer JSON). No validation, no envelope, no tracing.
 */
import { createHash } from "node:crypto"
import { createServer } from "node:http"
import pg from "pg"

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 })
const port = Number(process.env.PORT)

createServer(async (req, res) => {
  try {
    const token = (req.headers.authorization ?? "").replace(/^Bearer /, "")
    const hash = createHash("sha256").update(token).digest()
    // One statement, as the service's GET /accounts does since issue 46 (the session and the
    // accounts together; no row: no live session).
    const rows = await pool.query(
      "SELECT s.signer_address AS session_signer, a.* FROM sessions s LEFT JOIN accounts a ON a.signer_address = s.signer_address " +
        "WHERE s.token_hash = $1 AND s.revoked_at IS NULL AND s.expires_at > now() ORDER BY a.idx, a.chain_id",
      [hash]
    )
    if (rows.rowCount === 0) {
      res.writeHead(401, { "content-type": "application/json" }).end('{"error":{"code":"unauthorized"}}')
      return
    }
    const accounts = rows.rows[0].id === null ? [] : rows.rows
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(accounts))
  } catch (e) {
    res.writeHead(500).end(String(e))
  }
}).listen(port, "127.0.0.1", () => console.log("ready"))
