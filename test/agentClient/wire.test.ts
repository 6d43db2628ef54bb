/**
 * `@das/agent-client` (packages/agent-client) declares the service's wire in types of its own (a
 * package never imports the service): here, the service's Schemas are checked to fit them (a
 * field renamed, retyped or dropped on either side fails the typecheck), and every endpoint the
 * client calls is checked to exist in the contract with that method.
 */
import { assert, describe, it } from "@effect/vitest"
import type * as Wire from "@das/agent-client"
import { OpenApi } from "effect/http-api"
import { Api } from "../../src/Api.ts"
import type { SessionResponse } from "../../src/auth/Api.ts"
import type { AuditProof } from "../../src/audit/Domain.ts"
import type { Delegation } from "../../src/delegations/Domain.ts"
import type { GrantChangeRequest, GrantChanges } from "../../src/domain/Approvals.ts"
import type { UserOpBuild, UserOpReceipt } from "../../src/domain/Operations.ts"
import type { X402Payment } from "../../src/payments/Domain.ts"
import type { PermissionApproval } from "../../src/permissions/Domain.ts"

/** Compiles only when the service's type `B` fits the package's `A`. */
type Fits<A, B extends A> = [A, B]
/** The package types addresses and hashes as viem's `0x${string}`; the service's Schemas check the pattern on a plain string. */
type Loose<T> = T extends `0x${string}` ? string
  : T extends ReadonlyArray<infer U> ? ReadonlyArray<Loose<U>>
  : T extends object ? { readonly [K in keyof T]: Loose<T[K]> }
  : T
export type Checked = [
  Fits<Loose<Wire.Session>, typeof SessionResponse.Type>,
  Fits<Loose<Wire.Delegation>, Delegation>,
  Fits<Loose<Wire.UserOpBuild>, UserOpBuild>,
  Fits<Loose<Wire.UserOpReceipt>, UserOpReceipt>,
  Fits<Loose<Wire.GrantChangeRequest>, GrantChangeRequest>,
  Fits<Loose<Wire.X402Payment>, X402Payment>,
  Fits<Loose<Wire.AuditProof>, AuditProof>,
  Fits<Loose<Wire.PermissionAsk>, PermissionApproval>,
  // What the agent sends: the package's request shape fits the service's.
  Fits<GrantChanges, Wire.GrantChanges>
]

/** Every call of AgentClient (src/AgentClient.ts), as the contract names its path. */
const CALLED: ReadonlyArray<readonly [string, string]> = [
  ["post", "/auth/nonce"],
  ["post", "/auth/session"],
  ["delete", "/auth/session"],
  ["get", "/delegations"],
  ["get", "/delegations/{delegationId}"],
  ["post", "/delegations/{delegationId}/actions"],
  ["post", "/userops"],
  ["get", "/userops/{userOpId}"],
  ["post", "/account/rules/build"],
  ["get", "/activity/{eventId}/proof"],
  ["post", "/approvals/changes"],
  ["get", "/approvals/changes"],
  ["get", "/approvals/changes/{changeId}"],
  ["get", "/payments/x402"],
  ["get", "/payments/x402/{paymentId}"],
  ["post", "/permissions/asks"],
  ["get", "/permissions/asks/{approvalId}"],
  ["post", "/payments/x402"]
]

describe("the agent client's wire", () => {
  it("every endpoint the client calls is in the contract with that method", () => {
    const paths = OpenApi.fromApi(Api).paths as Record<string, Record<string, unknown>>
    const missing = CALLED.filter(([method, path]) => paths[path]?.[method] === undefined).map(([m, p]) => `${m} ${p}`)
    assert.deepStrictEqual(missing, [])
  })
})
