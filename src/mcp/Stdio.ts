/**
 * The MCP tools over stdio, for a local agent that holds its own key: it signs in to the service
 * with SIWE (`AGENT_PRIVATE_KEY`), then every tool calls the service's HTTP API at `BASE_URL`
 * with that session, signing actions and payments in this process. stdout is the MCP channel:
 * nothing else is written there. `npm run mcp` (scripts/mcp.ts); docs/mcp.md.
 *
 * The handshake is answered as soon as the tools' definitions are loaded: what the tools run
 * (the typed client, the x402 and delegation libraries) is loaded and the agent signed in right
 * after, in the background, and the first tool call waits for it. Loading it all first made a
 * client's `initialize` wait for every library (tens of seconds on a loaded machine, past the
 * SDK client's 60 s request timeout).
 */
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js"
import { Config, Effect, Redacted } from "effect"
import type { Agent } from "./Agent.ts"
import { makeMcpServer } from "./Tools.ts"

export const StdioConfig = Config.all({
  /** The agent's key (0x + 64 hex): it signs in, and signs its actions and payments here. */
  agentKey: Config.Redacted("AGENT_PRIVATE_KEY"),
  baseUrl: Config.String("BASE_URL").pipe(Config.withDefault("http://127.0.0.1:8080"))
})

/** The agent's operations, by name (each forwards to the agent once it is signed in). */
const OPERATIONS = [
  "listGrants",
  "getGrant",
  "act",
  "submitSigned",
  "requestMore",
  "getRequest",
  "requestPermission",
  "getPermissionRequest",
  "getReceipt",
  "payX402"
] as const satisfies
  ReadonlyArray<keyof Agent>

/** Signs in, then serves the tools on stdin/stdout until stdin closes. */
export const serveStdio = Effect.gen(function*() {
  const config = yield* StdioConfig
  const baseUrl = config.baseUrl.replace(/\/+$/, "")
  const key = Redacted.value(config.agentKey).trim()
  if (!/^0x[0-9a-fA-F]{64}$/.test(key)) return yield* Effect.fail(new Error("AGENT_PRIVATE_KEY must be 0x followed by 64 hex digits"))

  // The agent: loaded and signed in once; a failed attempt is tried again by the next call.
  let ready: Promise<Agent> | undefined
  const agentNow = () =>
    ready ??= (async () => {
      const [{ privateKeyToAccount }, { signIn }, { makeAgent }] = await Promise.all([
        import("viem/accounts"),
        import("../client/signIn.ts"),
        import("./Agent.ts")
      ])
      const signer = privateKeyToAccount(key as `0x${string}`)
      const renew = Effect.map(signIn(baseUrl, signer), (s) => s.token)
      return makeAgent({ baseUrl, token: await Effect.runPromise(renew), signer, renew })
    })().catch((e: unknown) => {
      ready = undefined
      throw e
    })
  const agent = Object.fromEntries(OPERATIONS.map((name) => [
    name,
    (args: never) => Effect.flatMap(Effect.tryPromise({ try: agentNow, catch: (e) => e }), (a) => (a[name] as (x: never) => Effect.Effect<object, unknown>)(args))
  ])) as unknown as Agent

  const server = makeMcpServer(agent, (effect) => Effect.runPromiseExit(effect))
  const transport = new StdioServerTransport()
  yield* Effect.promise(() => server.connect(transport))
  // Signed in now, not at the first call; a failure is said on stderr (the calls report it too).
  agentNow().catch((e: unknown) => process.stderr.write(`mcp: signing in to ${baseUrl} failed: ${String(e)}\n`))
  // Served until the client closes stdin (the transport's close).
  yield* Effect.callback<void>((resume) => {
    transport.onclose = () => resume(Effect.void)
    process.stdin.once("end", () => resume(Effect.void))
  })
  yield* Effect.promise(() => server.close())
})
