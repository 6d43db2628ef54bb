/**
 * The API reference's teaching layer: each operation's summary, description (what it does,
 * who may call it, what it changes on chain) and an example request with the answer the
 * service gave, merged into the generated OpenAPI document (`/openapi.json`, `/docs`).
 *
 * Words live in one file per group (`./<group>.ts`); examples are recorded from a real run
 * on the local chain (`examples.json`, written by `npm run reference:record`) and sent again
 * by `test/reference/examples.test.ts` on every test run, so they cannot drift from the service.
 * How to document a new endpoint: docs/contributing.md, "The API reference".
 */

/** The words of one operation. */
export interface OperationDoc {
  /** One line, imperative ("Grant a delegation"). */
  readonly summary: string
  /** What it does, in a few sentences (Markdown). */
  readonly description: string
  /** Who may call it (which session, which role). */
  readonly caller: string
  /** What it changes on chain, or that it reads only. */
  readonly chain: string
}

/** One recorded exchange: the request as sent and the service's answer. */
export interface OperationExample {
  readonly request: {
    /** The session it was sent with: none, the owner's, the agent's (the delegate), a panic key's or a guardian's. */
    readonly as: "none" | "owner" | "agent" | "panic" | "guardian"
    readonly params?: Readonly<Record<string, string>>
    readonly query?: Readonly<Record<string, string>>
    readonly body?: unknown
  }
  readonly response: { readonly status: number; readonly body?: unknown }
}

export interface ReferenceExamples {
  /** The values the recorded run learned (ids, addresses), by name: the test binds them to its own run's. */
  readonly bindings: Readonly<Record<string, string>>
  readonly operations: Readonly<Record<string, OperationExample>>
}

type Json = Record<string, any>

const renderDescription = (doc: OperationDoc) =>
  `${doc.description}\n\n**Who may call:** ${doc.caller}\n\n**On chain:** ${doc.chain}`

const withExample = (content: Json | undefined, example: unknown): Json | undefined => {
  if (content === undefined) return content
  const out: Json = {}
  for (const [type, media] of Object.entries(content)) out[type] = { ...media, example }
  return out
}

/**
 * Merges the words and examples into `spec` (keyed by operationId, `group.endpoint`), and
 * states the bearer scheme in the form tools expect (`scheme: "bearer"`, lower case).
 */
export const applyReference = (
  spec: Json,
  docs: Readonly<Record<string, OperationDoc>>,
  examples: ReferenceExamples
): Json => {
  const paths: Json = {}
  for (const [path, item] of Object.entries<Json>(spec.paths ?? {})) {
    const next: Json = { ...item }
    for (const [method, op] of Object.entries<Json>(item)) {
      if (typeof op !== "object" || op === null || typeof op.operationId !== "string") continue
      const doc = docs[op.operationId]
      const example = examples.operations[op.operationId]
      const out: Json = { ...op }
      if (doc !== undefined) {
        out.summary = doc.summary
        out.description = renderDescription(doc)
      }
      if (example !== undefined) {
        const values: Record<string, string> = { ...example.request.params, ...example.request.query }
        if (Array.isArray(op.parameters)) {
          out.parameters = op.parameters.map((p: Json) => (p.name in values ? { ...p, example: values[p.name] } : p))
        }
        if (op.requestBody !== undefined && example.request.body !== undefined) {
          out.requestBody = { ...op.requestBody, content: withExample(op.requestBody.content, example.request.body) }
        }
        const status = String(example.response.status)
        const response = op.responses?.[status]
        if (response !== undefined && example.response.body !== undefined) {
          out.responses = { ...op.responses, [status]: { ...response, content: withExample(response.content, example.response.body) } }
        }
      }
      next[method] = out
    }
    paths[path] = next
  }
  const schemes: Json = { ...spec.components?.securitySchemes }
  if (schemes.bearer !== undefined) {
    schemes.bearer = {
      type: "http",
      scheme: "bearer",
      bearerFormat: "session token",
      description: "The `token` of `POST /auth/session` (Sign-In with Ethereum): `Authorization: Bearer <token>`."
    }
  }
  return { ...spec, paths, components: { ...spec.components, securitySchemes: schemes } }
}
