/**
 * The contract's identity, below every feature. The whole contract (`src/Api.ts`) is composed
 * at the top from the features' groups; a feature builds its handlers against `contractOf(its
 * group)` — the same identifier and the same envelope middleware — so its `Http.ts` never
 * imports the composed contract from above, and the layer it returns is exactly the one the
 * composed contract asks for (`HttpApiGroup.Service<"delegated-authority", group>`).
 *
 * What the top-level contract adds beyond this (its OpenAPI title and description) is
 * documentation only; anything that changes how requests are handled belongs here, so both agree.
 */
import { HttpApi, type HttpApiGroup } from "effect/http-api"
import { ErrorEnvelope } from "./Envelope.ts"

export const API_ID = "delegated-authority" as const

/** The contract's root: `src/Api.ts` adds every group to it, then the envelope middleware. */
export const contractRoot = HttpApi.make(API_ID)

/** One group as a contract of its own, for its handlers (`HttpApiBuilder.group(contractOf(G), "g", ...)`). */
export const contractOf = <const G extends HttpApiGroup.Constraint>(group: G) => contractRoot.add(group).middleware(ErrorEnvelope)
