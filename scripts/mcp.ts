/**
 * The agent's MCP server over stdio (src/mcp/Stdio.ts): an MCP client (an LLM runtime) spawns it
 * with the agent's key and the service's URL.
 *
 *   AGENT_PRIVATE_KEY=0x… BASE_URL=http://127.0.0.1:8080 npm run -s mcp
 *
 * stdout carries MCP only; a failure to start is written to stderr and exits 1.
 */
import { Cause, Effect, Exit } from "effect"
import { serveStdio } from "../src/mcp/Stdio.ts"

const exit = await Effect.runPromiseExit(serveStdio)
if (Exit.isFailure(exit)) {
  process.stderr.write(`mcp: ${Cause.pretty(exit.cause)}\n`)
  process.exit(1)
}
process.exit(0)
