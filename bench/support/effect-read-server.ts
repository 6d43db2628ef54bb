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
    const session = yield* sql<{ signer_address: string }>`SELECT signer_address FROM sessions
      WHERE token_hash = ${hash} AND revoked_at IS NULL AND expires_at > now()`
    if (session.length === 0) return HttpServerResponse.jsonUnsafe({ error: { code: "unauthorized" } }, { status: 401 })
    const accounts = yield* sql`SELECT * FROM accounts WHERE signer_address = ${session[0]!.signer_address} ORDER BY idx`
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
