/**
 * Every operation's words, by operationId (`group.endpoint`; a top-level group's endpoints by name).
 * A new group adds its file here; `test/reference/examples.test.ts` fails for an operation without words.
 */
import { accountsDocs } from "./accounts.ts"
import { activityDocs } from "./activity.ts"
import { ap2Docs } from "./ap2.ts"
import { approvalsDocs } from "./approvals.ts"
import { authDocs } from "./auth.ts"
import { delegationsDocs } from "./delegations.ts"
import { devDocs } from "./dev.ts"
import { guardianDocs } from "./guardian.ts"
import { hiringDocs } from "./hiring.ts"
import examples from "./examples.json" with { type: "json" }
import { launchpadDocs } from "./launchpad.ts"
import { marketplaceDocs } from "./marketplace.ts"
import { mcpPath } from "./mcp.ts"
import { notificationsDocs } from "./notifications.ts"
import { panicDocs } from "./panic.ts"
import { paymentsDocs } from "./payments.ts"
import { permissionsDocs } from "./permissions.ts"
import { applyReference, type OperationDoc, type ReferenceExamples } from "./Reference.ts"
import { systemDocs } from "./system.ts"
import { useropsDocs } from "./userops.ts"

export const operationDocs: Readonly<Record<string, OperationDoc>> = {
  ...systemDocs,
  ...authDocs,
  ...accountsDocs,
  ...panicDocs,
  ...guardianDocs,
  ...delegationsDocs,
  ...useropsDocs,
  ...activityDocs,
  ...notificationsDocs,
  ...marketplaceDocs,
  ...hiringDocs,
  ...launchpadDocs,
  ...devDocs,
  ...permissionsDocs,
  ...ap2Docs,
  ...approvalsDocs,
  ...paymentsDocs
}

export const referenceExamples: ReferenceExamples = examples as ReferenceExamples

/** The transform `Api.ts` gives the OpenAPI generator; `/mcp` (a route beside the contract) is stated with it. */
export const withReference = (spec: Record<string, any>) => {
  const applied = applyReference(spec, operationDocs, referenceExamples)
  return {
    ...applied,
    paths: { ...applied.paths, "/mcp": mcpPath },
    tags: [...(applied.tags ?? []), { name: "MCP", description: "The MCP server for agents (docs/mcp.md)" }]
  }
}
