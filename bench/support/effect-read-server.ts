/**
 * The framework floor for bench/http-read.ts: the same work as the bare baseline
 * (`bare-read-server.ts`) on the same stack the service uses (Effect 4 `HttpRouter` on
 * `NodeHttpServer`, `@effect/sql-pg`), but none of what the service adds: no HttpApi
 * (no Schema decoding or encoding), no middleware, no spans of its own, no log line.
 * It tells how much of the gap to bare Node is the stack itself.
 */
import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Logger, Redacted } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { SqlClient } from "effect/sql"
import { createHash } from "node:crypto"
import { createServer } from "node:http"

const route = HttpRouter.add(
  "GET",
  "/accounts",
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const request = yield* HttpServerRequest.HttpServerRequest
    const token = (request.headers.authorization ?? "").replace(/^Bearer /, "")
    const hash = createHash("sha256").update(token).digest()
    // One statement, as the service's GET /accounts does (the session and the accounts together).
    const rows = yield* sql<{ id: string | null }>`SELECT s.signer_address AS session_signer, a.* FROM sessions s
      LEFT JOIN accounts a ON a.signer_address = s.signer_address
      WHERE s.token_hash = ${hash} AND s.revoked_at IS NULL AND s.expires_at > now() ORDER BY a.idx, a.chain_id`
    if (rows.length === 0) return HttpServerResponse.jsonUnsafe({ error: { code: "unauthorized" } }, { status: 401 })
    const accounts = rows[0]!.id === null ? [] : rows
    return HttpServerResponse.jsonUnsafe(accounts)
  }).pipe(Effect.orDie)
)

HttpRouter.serve(route, { disableLogger: true }).pipe(
  Layer.provide(NodeHttpServer.layer(createServer, { port: Number(process.env.PORT), host: "127.0.0.1" })),
  Layer.provide(PgClient.layer({ url: Redacted.make(process.env.DATABASE_URL!), maxConnections: 10 })),
  Layer.provide(Logger.layer([])),
  Layer.launch,
  NodeRuntime.runMain
)
