/**
 * The SDK's own MCP client against the test service, over both transports: Streamable HTTP at
 * `/mcp` with the agent's session, and stdio by spawning the entry (`scripts/mcp.ts`, what
 * `npm run mcp` runs) with the agent's key. Each client lives in the test's scope.
 */
import { assert } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js"
import { Effect } from "effect"
import * as path from "node:path"
import type { Hex } from "viem"

const root = path.resolve(import.meta.dirname, "../..")

const connected = (transport: StreamableHTTPClientTransport | StdioClientTransport) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const client = new Client({ name: "test-agent", version: "1.0.0" })
      await client.connect(transport)
      return client
    }),
    (client) => Effect.promise(() => client.close())
  )

/** The SDK's client over Streamable HTTP, with the agent's session token. */
export const httpClient = (baseUrl: string, token: string) =>
  connected(new StreamableHTTPClientTransport(new URL(`${baseUrl}/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } }))

/** The SDK's client spawning the stdio entry with the agent's key, against `baseUrl`. */
export const stdioClient = (baseUrl: string, agentKey: Hex, stderr: Array<string>) =>
  Effect.gen(function*() {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: ["--import", "tsx", "scripts/mcp.ts"],
      cwd: root,
      env: { PATH: process.env.PATH ?? "", AGENT_PRIVATE_KEY: agentKey, BASE_URL: baseUrl, DO_NOT_TRACK: "1" },
      stderr: "pipe"
    })
    transport.stderr?.on("data", (chunk: Buffer) => stderr.push(chunk.toString("utf8")))
    return yield* connected(transport)
  })

export interface Called {
  readonly isError: boolean
  readonly structured: Record<string, any>
  readonly text: string
}

/** Calls a tool; its structured content (the SDK's client has checked it against the output schema). */
export const call = (client: Client, name: string, args: Record<string, unknown>) =>
  Effect.promise(async (): Promise<Called> => {
    const result = (await client.callTool({ name, arguments: args })) as CallToolResult
    const text = result.content.map((c) => (c.type === "text" ? c.text : "")).join("")
    assert.isDefined(result.structuredContent, `${name}: no structured content: ${text}`)
    return { isError: result.isError === true, structured: result.structuredContent as Record<string, any>, text }
  })

/** A call that must succeed: its structured content. */
export const ok = (client: Client, name: string, args: Record<string, unknown>) =>
  Effect.map(call(client, name, args), (r) => {
    assert.isFalse(r.isError, `${name} refused: ${r.text}`)
    assert.isUndefined(r.structured["error"])
    return r.structured
  })

/** A call that must be refused: its error (code, message, declineReason, details). */
export const refusedCall = (client: Client, name: string, args: Record<string, unknown>) =>
  Effect.map(call(client, name, args), (r) => {
    assert.isTrue(r.isError, `${name} was not refused: ${r.text}`)
    return r.structured["error"] as { code: string; message: string; declineReason: string; details?: Record<string, unknown> }
  })
