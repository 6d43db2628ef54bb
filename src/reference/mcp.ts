/**
 * `POST /mcp` in the OpenAPI document: the MCP server for agents is a router route beside the
 * API (src/mcp/Http.ts), not an operation of the contract, so the reference states it here, with
 * its auth and its tools (docs/mcp.md). `test/reference/openapi.test.ts` checks that every tool
 * the server registers is named.
 */

/** The tools, in the order `tools/list` gives them, each with what it does. */
export const MCP_TOOLS: ReadonlyArray<readonly [string, string]> = [
  ["list_grants", "the grants the agent holds, with limits, spent, reserved, left and renewal"],
  ["get_grant", "one grant the agent holds"],
  ["act", "a transfer within a grant (over HTTP: the build to sign)"],
  ["submit_signed_action", "relay an action the agent signed, and its receipt"],
  ["pay_x402", "pay an x402 resource under a grant (over HTTP: the payment delegation to sign)"],
  ["request_more", "ask the owner to change a grant the agent holds"],
  ["get_request", "a change request as it stands"],
  ["request_permission", "ask an owner the agent works for for a new permission (ERC-7715)"],
  ["get_permission_request", "a new-permission request as it stands"],
  ["get_receipt", "an action's receipt and its audit entry's inclusion proof"]
]

/** The `/mcp` path item. */
export const mcpPath = {
  post: {
    operationId: "mcp",
    tags: ["MCP"],
    summary: "MCP server for agents (Streamable HTTP)",
    description:
      "The Model Context Protocol's Streamable HTTP transport, stateless: one JSON-RPC 2.0 message per `POST` (`initialize`, " +
      "`tools/list`, `tools/call`, ...), answered as JSON (`Accept: application/json, text/event-stream`). `GET` and `DELETE` " +
      "answer 405: no MCP session is kept and no stream opened. Each tool calls this API with the caller's session, so it " +
      "reaches only what the agent's own session reaches; the service never holds an agent's key (signing tools answer what " +
      "to sign). A refused call is a tool result with `isError` and `{ error: { code, message, declineReason, details } }`.\n\n" +
      "**Tools** (each with an input and an output schema in `tools/list`; docs/mcp.md):\n\n" +
      MCP_TOOLS.map(([name, does]) => `- \`${name}\`: ${does}`).join("\n") +
      "\n\nNo tool approves, widens or revokes anything: asking is a request the owner decides in the console or the wallet. " +
      "The same tools over stdio: `npm run mcp` with the agent's key.\n\n" +
      "**Who may call:** the agent's session (`Authorization: Bearer <token>` of `POST /auth/session`); without a valid one " +
      "the 401 envelope with `WWW-Authenticate: Bearer`.\n\n" +
      "**On chain:** as the tool called: reads change nothing; `submit_signed_action` relays the agent's signed operation; " +
      "`pay_x402` and `act` only reserve until the agent signs.",
    security: [{ bearer: [] }],
    requestBody: {
      required: true,
      content: {
        "application/json": {
          schema: { type: "object", description: "One JSON-RPC 2.0 message of the MCP protocol" },
          example: { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "list_grants", arguments: { status: "active" } } }
        }
      }
    },
    responses: {
      "200": {
        description: "The JSON-RPC 2.0 answer (a tool's refusal is a result with `isError`)",
        content: {
          "application/json": {
            schema: { type: "object" },
            example: {
              jsonrpc: "2.0",
              id: 1,
              result: {
                content: [{ type: "text", text: "{\"grants\":[]}" }],
                structuredContent: { grants: [] }
              }
            }
          }
        }
      },
      "401": { description: "No or a bad session: the error envelope (`unauthorized`)" },
      "405": { description: "`GET` or `DELETE`: no MCP session or stream here" },
      "413": { description: "A body over `HTTP_MAX_BODY_BYTES`" }
    }
  }
} as const
