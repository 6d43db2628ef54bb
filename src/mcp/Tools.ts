/**
 * The MCP server's tools: one definition for both transports (Streamable HTTP at `/mcp`,
 * `Http.ts`; stdio, `Stdio.ts`). Each tool has an input and an output schema (Schemas.ts) and
 * calls the agent's operations (Agent.ts). A refused call is a tool result with `isError` and
 * structured content `{ error: { code, message, declineReason, details } }`.
 *
 * What the tools can do is what the agent's own session can: read its grants, act and pay within
 * them, ask the owner for more, read receipts. No tool approves, widens or revokes anything; a
 * request for more changes nothing until the owner accepts it in the console or the wallet.
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js"
import { Cause, type Effect, Exit } from "effect"
import type { Agent } from "./Agent.ts"
import { inputs, outputs } from "./Schemas.ts"
import { toolError } from "./Views.ts"

/** Runs a tool's effect to its exit (the caller's runtime: logs and spans where the service runs it). */
export type Runner = <A>(effect: Effect.Effect<A, unknown>) => Promise<Exit.Exit<A, unknown>>

export const SERVER_INFO = { name: "delegated-authority-agent", version: "0.1.0" } as const

/** The tools' names, in the order `tools/list` gives them. */
export const TOOL_NAMES = [
  "list_grants",
  "get_grant",
  "act",
  "submit_signed_action",
  "pay_x402",
  "request_more",
  "get_request",
  "request_permission",
  "get_permission_request",
  "get_receipt"
] as const

const resultOf = (exit: Exit.Exit<object, unknown>): CallToolResult => {
  if (Exit.isSuccess(exit)) {
    const structured = exit.value as Record<string, unknown>
    return { content: [{ type: "text", text: JSON.stringify(structured) }], structuredContent: structured }
  }
  const error = toolError(Cause.squash(exit.cause))
  return {
    isError: true,
    content: [{ type: "text", text: `${error.declineReason}: ${error.message}` }],
    structuredContent: { error }
  }
}

const readOnly = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false } as const
const spends = { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true } as const

/** A new MCP server whose tools act as `agent` (one per stdio process; one per request over HTTP). */
export const makeMcpServer = (agent: Agent, run: Runner): McpServer => {
  const server = new McpServer(SERVER_INFO, {
    instructions: "Tools of an agent that holds grants (scoped, revocable authority over its owner's smart account). " +
      "Read your limits with list_grants before acting; every action and payment is checked against the grant by the service and the chain. " +
      "You cannot widen a grant or grant yourself anything: ask with request_more (a grant you hold) or request_permission (a new one) and the owner decides."
  })
  // Each handler only forwards to the agent; the SDK has checked the arguments against the input schema.
  const call = (f: (args: never) => Effect.Effect<object, unknown>) => async (args: unknown) => resultOf(await run(f(args as never)))

  server.registerTool("list_grants", {
    title: "My grants",
    description: "The grants this agent holds: limits (budgets, per-action maximum, count, recipients, expiry) and per budget what is spent, reserved, left and when it renews.",
    inputSchema: inputs.listGrants,
    outputSchema: outputs.listGrants,
    annotations: readOnly
  }, call(agent.listGrants))

  server.registerTool("get_grant", {
    title: "One grant",
    description: "One grant this agent holds, with its limits and what is left. Another's grant is not found.",
    inputSchema: inputs.getGrant,
    outputSchema: outputs.getGrant,
    annotations: readOnly
  }, call(agent.getGrant))

  server.registerTool("act", {
    title: "Act within a grant",
    description: "Transfer `amount` of a budget token to `recipient` under the grant. The service checks every limit and reserves the amount; " +
      "where this server holds the agent's key (stdio) the operation is signed, relayed and its receipt returned; otherwise the answer is the build to sign and submit with submit_signed_action. " +
      "Refused calls name the rule (declineReason).",
    inputSchema: inputs.act,
    outputSchema: outputs.act,
    annotations: spends
  }, call(agent.act))

  server.registerTool("submit_signed_action", {
    title: "Submit a signed action",
    description: "Relay an action the agent signed (the `act` build's userOp with its signature) and wait for its receipt. The relay checks the grant again.",
    inputSchema: inputs.submitSigned,
    outputSchema: outputs.submitSigned,
    annotations: spends
  }, call(agent.submitSigned))

  server.registerTool("pay_x402", {
    title: "Pay an x402 resource under a grant",
    description: "Fetch a paid resource, paying its HTTP 402 from the grant (x402, ERC-7710) up to `maxUnits`. With the agent's key (stdio) the whole exchange is done and the resource returned; " +
      "over HTTP the server fetches nothing: pass the 402's offer and get the payment delegation to sign. The service checks and reserves the payment like an action.",
    inputSchema: inputs.payX402,
    outputSchema: outputs.payX402,
    annotations: spends
  }, call(agent.payX402))

  server.registerTool("request_more", {
    title: "Ask the owner for more",
    description: "Ask the grant's owner to change the grant (new budget totals, per-action maximum, count, expiry, recipients) with a reason. " +
      "Nothing changes until the owner accepts in the console or the wallet; the answer is the pending request.",
    inputSchema: inputs.requestMore,
    outputSchema: outputs.requestMore,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false }
  }, call(agent.requestMore))

  server.registerTool("get_request", {
    title: "A request for more",
    description: "A change request this agent made: pending, accepted (with the new grant's id), declined or expired.",
    inputSchema: inputs.getRequest,
    outputSchema: outputs.getRequest,
    annotations: readOnly
  }, call(agent.getRequest))

  server.registerTool("request_permission", {
    title: "Ask an owner for a new permission",
    description: "Ask an owner this agent works for (an account that granted it before: list_grants' `payer`) for a NEW permission (ERC-7715): " +
      "a token, an amount per period or in total, an expiry, and why. Nothing is granted: the owner signs it in the wallet or rejects it; " +
      "the answer is the pending request with the summary the owner reads.",
    inputSchema: inputs.requestPermission,
    outputSchema: outputs.requestPermission,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false }
  }, call(agent.requestPermission))

  server.registerTool("get_permission_request", {
    title: "A request for a new permission",
    description: "A permission request this agent made: pending, granted (with the new grant's id and its permission context), rejected, expired or failed.",
    inputSchema: inputs.getPermissionRequest,
    outputSchema: outputs.getPermissionRequest,
    annotations: readOnly
  }, call(agent.getPermissionRequest))

  server.registerTool("get_receipt", {
    title: "An action's receipt and inclusion proof",
    description: "An action's receipt (status, transaction, block) and, once an anchor covers its audit entry, the entry's inclusion proof (verify with `npm run audit:verify-proof`).",
    inputSchema: inputs.getReceipt,
    outputSchema: outputs.getReceipt,
    annotations: readOnly
  }, call(agent.getReceipt))

  return server
}
