/**
 * `POST /mcp`: the MCP tools (Tools.ts) over Streamable HTTP, on the agent's session
 * (`Authorization: Bearer <session token>`; without a valid one the edge's 401 envelope).
 *
 * Mounted as a router route beside the API (as the console is), so it passes the edge like every
 * request: request id, body limit, access line, 404/405 (GET and DELETE answer 405: the server
 * keeps no MCP session and opens no stream; the SDK's client expects exactly that from a stateless
 * server). Each request gets a server and a stateless `WebStandardStreamableHTTPServerTransport`
 * answering JSON, bound to the caller's token; the tools call the service's own HTTP API on
 * loopback with that token, so they pass the same checks as any client of the agent's. The
 * service never holds an agent's key: signing tools answer what to sign (docs/mcp.md).
 */
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js"
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServer, HttpServerRequest, HttpServerResponse } from "effect/http"
import { Unauthorized } from "../api/Errors.ts"
import { Sessions } from "../auth/Sessions.ts"
import { currentPeerKey, onBehalfHeaders } from "../platform/ClientAddress.ts"
import { makeAgent } from "./Agent.ts"
import { makeMcpServer, type Runner } from "./Tools.ts"

const bearerOf = (header: string | undefined) => (header === undefined ? null : /^bearer\s+(\S+)\s*$/i.exec(header))?.[1]

/** Where this process answers, as a loopback URL (a wildcard listen address is reached on 127.0.0.1). */
const loopbackUrl = (address: Parameters<typeof HttpServer.formatAddress>[0]): string => {
  if (address._tag === "UnixPathAddress") return "http://127.0.0.1"
  const url = new URL(HttpServer.formatAddress(address))
  if (url.hostname === "0.0.0.0" || url.hostname === "[::]") url.hostname = "127.0.0.1"
  return url.origin
}

export const McpRoutes = Layer.mergeAll(
  HttpRouter.use(Effect.fnUntraced(function*(router) {
    const sessions = yield* Sessions
    const baseUrl = loopbackUrl((yield* HttpServer.HttpServer).address)
    const context = yield* Effect.context<never>()
    const run: Runner = (effect) => Effect.runPromiseExitWith(context)(effect)

    yield* router.add(
      "POST",
      "/mcp",
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const token = bearerOf(request.headers.authorization)
        if (token === undefined) {
          return yield* new Unauthorized({ message: "The MCP endpoint needs the agent's session: Authorization: Bearer <session token>" })
        }
        const signer = yield* sessions.authenticate(token)
        // The tools' loopback calls count this agent from where it called, not 127.0.0.1: the
        // edge's per-peer limits and the sponsorship quota per address are its own (ClientAddress.ts).
        const peer = (yield* currentPeerKey) ?? "unknown"
        const behalf = onBehalfHeaders(`${peer} mcp:${signer.address.toLowerCase()}`)
        // Read within the edge's body limit; the transport parses it (a malformed message is its JSON-RPC error).
        const body = yield* request.text
        // No session id generator: stateless, a server per request.
        const server = makeMcpServer(makeAgent({ baseUrl, token, headers: behalf }), run)
        const transport = new WebStandardStreamableHTTPServerTransport({ enableJsonResponse: true })
        yield* Effect.promise(() => server.connect(transport))
        const headers = new Headers()
        for (const [k, v] of Object.entries(request.headers)) headers.set(k, v)
        const answer = yield* Effect.promise(() =>
          transport.handleRequest(new Request(`http://localhost${request.url}`, { method: "POST", headers, body }))
        ).pipe(Effect.ensuring(Effect.promise(() => server.close())))
        return HttpServerResponse.fromWeb(answer)
      })
    )
  }))
)
