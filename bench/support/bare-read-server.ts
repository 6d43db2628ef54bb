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
    const session = await pool.query(
      "SELECT signer_address FROM sessions WHERE token_hash = $1 AND revoked_at IS NULL AND expires_at > now()",
      [hash]
    )
    if (session.rowCount === 0) {
      res.writeHead(401, { "content-type": "application/json" }).end('{"error":{"code":"unauthorized"}}')
      return
    }
    const accounts = await pool.query("SELECT * FROM accounts WHERE signer_address = $1 ORDER BY idx", [
      session.rows[0].signer_address
    ])
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(accounts.rows))
  } catch (e) {
    res.writeHead(500).end(String(e))
  }
}).listen(port, "127.0.0.1", () => console.log("ready"))
