/**
 * The MCP tools over stdio, for a local agent that holds its own key: it signs in to the service
 * with SIWE (`AGENT_PRIVATE_KEY`), then every tool calls the service's HTTP API at `BASE_URL`
 * with that session, signing actions and payments in this process. stdout is the MCP channel:
 * nothing else is written there. `npm run mcp` (scripts/mcp.ts); docs/mcp.md.
 */
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js"
import { Config, Effect, Redacted } from "effect"
import { privateKeyToAccount } from "viem/accounts"
import { signIn } from "../client/signIn.ts"
import { makeAgent } from "./Agent.ts"
import { makeMcpServer } from "./Tools.ts"

export const StdioConfig = Config.all({
  /** The agent's key (0x + 64 hex): it signs in, and signs its actions and payments here. */
  agentKey: Config.Redacted("AGENT_PRIVATE_KEY"),
  baseUrl: Config.String("BASE_URL").pipe(Config.withDefault("http://127.0.0.1:8080"))
})

/** Signs in, then serves the tools on stdin/stdout until stdin closes. */
export const serveStdio = Effect.gen(function*() {
  const config = yield* StdioConfig
  const baseUrl = config.baseUrl.replace(/\/+$/, "")
  const key = Redacted.value(config.agentKey).trim()
  if (!/^0x[0-9a-fA-F]{64}$/.test(key)) return yield* Effect.fail(new Error("AGENT_PRIVATE_KEY must be 0x followed by 64 hex digits"))
  const signer = privateKeyToAccount(key as `0x${string}`)
  const session = yield* signIn(baseUrl, signer)
  const server = makeMcpServer(makeAgent({ baseUrl, token: session.token, signer }), (effect) => Effect.runPromiseExit(effect))
  const transport = new StdioServerTransport()
  yield* Effect.promise(() => server.connect(transport))
  // Served until the client closes stdin (the transport's close).
  yield* Effect.callback<void>((resume) => {
    transport.onclose = () => resume(Effect.void)
    process.stdin.once("end", () => resume(Effect.void))
  })
  yield* Effect.promise(() => server.close())
})
