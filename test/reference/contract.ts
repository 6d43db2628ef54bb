/** Each operation of the contract with its method, OpenAPI path and the schemas of its bodies, by operationId. */
import { Exit, Schema } from "effect"
import { HttpApi, OpenApi } from "effect/http-api"
import { Api } from "../../src/Api.ts"

export interface OperationShape {
  readonly id: string
  readonly method: string
  readonly path: string
  readonly payloads: ReadonlyArray<Schema.Top>
  /** Schemas of the answer, by status. */
  readonly answers: ReadonlyMap<number, ReadonlyArray<Schema.Top>>
  readonly stream: boolean
}

export const operations = (): ReadonlyMap<string, OperationShape> => {
  const out = new Map<string, OperationShape>()
  const spec = OpenApi.fromApi(Api)
  HttpApi.reflect(Api, {
    onGroup: () => {},
    onEndpoint: ({ group, endpoint, successes, errors }) => {
      const path = endpoint.path.replace(/:(\w+)/g, "{$1}")
      const id = group.topLevel ? endpoint.identifier : `${group.identifier}.${endpoint.identifier}`
      const payloads = [...endpoint.payload.values()].flatMap((p) => p.schemas as ReadonlyArray<Schema.Top>)
      const answers = new Map<number, ReadonlyArray<Schema.Top>>()
      for (const [status, schemas] of [...successes, ...errors]) answers.set(status, [...(answers.get(status) ?? []), ...schemas])
      const stream = (spec.paths as any)[path]?.[endpoint.method.toLowerCase()]?.responses?.["200"]?.content?.["text/event-stream"] !== undefined
      out.set(id, { id, method: endpoint.method.toLowerCase(), path, payloads, answers, stream })
    }
  })
  return out
}

/** Whether `value` (JSON as on the wire) is accepted by one of `schemas`; the first failure otherwise. */
export const decodesWith = (schemas: ReadonlyArray<Schema.Top>, value: unknown): string | undefined => {
  let failure = "no schema"
  for (const schema of schemas) {
    const exit = Schema.decodeUnknownExit(Schema.toCodecJson(schema) as any)(value)
    if (Exit.isSuccess(exit)) return undefined
    failure = String(exit.cause)
  }
  return failure
}
