/**
 * An owner's hire policy (docs/marketplace.md, "Hire only a named agent"): off by default (any
 * wallet may be hired, as before); on, a hire's provider must be an agent registered in the
 * chain's ERC-8004 Identity Registry, and with a floor, its reputation from the clients the owner
 * names must be at or above it. The wire shape, its validation and the store.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { BadRequest } from "../api/Errors.ts"
import { Address, Timestamp } from "../domain/Primitives.ts"

/** Most clients whose feedback a floor counts (each is a loop in the registry's `getSummary`, on chain). */
export const MAX_REPUTATION_CLIENTS = 20

/** A decimal as the Reputation Registry's values are (signed, at most 18 decimals). */
const ReputationFloor = Schema.String.check(
  Schema.isPattern(/^-?(0|[1-9][0-9]{0,19})(\.[0-9]{1,18})?$/, { description: "a decimal number, at most 18 decimals" })
)

export const HirePolicyInput = Schema.Struct({
  /** Hire only agents registered in the chain's ERC-8004 Identity Registry (their `agentWallet` is the provider). */
  requireRegistered: Schema.Boolean,
  /** The lowest reputation summary accepted (needs `requireRegistered` and `reputationClients`). */
  minReputation: Schema.optionalKey(ReputationFloor),
  /** Whose feedback counts toward the floor: the reviewers the owner trusts (1 to 20). */
  reputationClients: Schema.optionalKey(Schema.Array(Address))
}).annotate({ identifier: "HirePolicyInput" })
export type HirePolicyInput = typeof HirePolicyInput.Type

export const HirePolicy = Schema.Struct({
  requireRegistered: Schema.Boolean,
  minReputation: Schema.optionalKey(Schema.String),
  reputationClients: Schema.Array(Address),
  /** Absent: never set (the default policy: any wallet). */
  updatedAt: Schema.optionalKey(Timestamp)
}).annotate({ identifier: "HirePolicy" })
export type HirePolicy = typeof HirePolicy.Type

export const DEFAULT_POLICY: HirePolicy = { requireRegistered: false, reputationClients: [] }

/** The policy as stored, or a 400 naming every field that cannot be held. */
export const validatePolicy = (input: HirePolicyInput): Effect.Effect<HirePolicy, BadRequest> => {
  const problems: Array<string> = []
  const clients = (input.reputationClients ?? []).map((a) => a.toLowerCase())
  if (input.minReputation !== undefined && !input.requireRegistered) {
    problems.push("minReputation needs requireRegistered: true (a floor is read for a registered agent)")
  }
  if (input.minReputation !== undefined && clients.length === 0) {
    problems.push(
      "minReputation needs reputationClients: anyone may give an agent feedback, so a floor counts only the reviewers you name"
    )
  }
  if (input.minReputation === undefined && clients.length > 0) problems.push("reputationClients without minReputation mean nothing")
  if (clients.length > MAX_REPUTATION_CLIENTS) problems.push(`reputationClients: at most ${MAX_REPUTATION_CLIENTS}`)
  if (new Set(clients).size !== clients.length) problems.push("reputationClients names an address twice")
  if (clients.includes("0x0000000000000000000000000000000000000000")) problems.push("reputationClients names the zero address")
  if (problems.length > 0) {
    return Effect.fail(new BadRequest({ message: `The hire policy cannot be set: ${problems.join("; ")}.`, details: { problems } }))
  }
  return Effect.succeed({
    requireRegistered: input.requireRegistered,
    ...(input.minReputation === undefined ? {} : { minReputation: canonicalDecimal(input.minReputation) }),
    reputationClients: clients
  })
}

/** `"080.50"` → `"80.5"`, `"-0"` → `"0"`: one spelling per value. */
const canonicalDecimal = (s: string): string => {
  const negative = s.startsWith("-")
  const [whole, frac = ""] = (negative ? s.slice(1) : s).split(".")
  const w = whole!.replace(/^0+(?=\d)/, "")
  const f = frac.replace(/0+$/, "")
  const text = f === "" ? w : `${w}.${f}`
  return negative && /[1-9]/.test(text) ? `-${text}` : text
}

/** A decimal floor in 18-decimal fixed point (what the enforcer compares). */
export const floorWad = (s: string): bigint => {
  const negative = s.startsWith("-")
  const [whole, frac = ""] = (negative ? s.slice(1) : s).split(".")
  const wad = BigInt(whole!) * 10n ** 18n + BigInt(frac.padEnd(18, "0") || "0")
  return negative ? -wad : wad
}

export class HirePolicies extends Context.Service<HirePolicies, {
  get(signer: string): Effect.Effect<HirePolicy>
  set(signer: string, policy: HirePolicy): Effect.Effect<HirePolicy>
}>()("das/hiring/HirePolicies") {}

interface PolicyRow {
  readonly require_registered: boolean
  readonly min_reputation: string | null
  readonly reputation_clients: ReadonlyArray<string>
  readonly updated_at: Date
}

const fromRow = (r: PolicyRow): HirePolicy => ({
  requireRegistered: r.require_registered,
  ...(r.min_reputation === null ? {} : { minReputation: canonicalDecimal(String(r.min_reputation)) }),
  reputationClients: [...r.reputation_clients],
  updatedAt: new Date(r.updated_at).toISOString()
})

/** In PostgreSQL (`hire_identity_policies`, migration 0620), one row per signer. */
export const HirePoliciesSql = Layer.effect(
  HirePolicies,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const get = Effect.fn("HirePolicies.get")(function*(signer: string) {
      const rows = yield* sql<PolicyRow>`
        SELECT require_registered, min_reputation::text AS min_reputation, reputation_clients, updated_at
        FROM hire_identity_policies WHERE signer_address = ${signer.toLowerCase()}`.pipe(Effect.orDie)
      return Option.match(Option.fromNullishOr(rows[0]), { onNone: () => DEFAULT_POLICY, onSome: fromRow })
    })
    const set = Effect.fn("HirePolicies.set")(function*(signer: string, p: HirePolicy) {
      const rows = yield* sql<PolicyRow>`
        INSERT INTO hire_identity_policies (signer_address, require_registered, min_reputation, reputation_clients, updated_at)
        VALUES (${signer.toLowerCase()}, ${p.requireRegistered}, ${p.minReputation ?? null},
                ${JSON.stringify(p.reputationClients.map((c) => c.toLowerCase()))}::jsonb, now())
        ON CONFLICT (signer_address) DO UPDATE SET require_registered = EXCLUDED.require_registered,
          min_reputation = EXCLUDED.min_reputation, reputation_clients = EXCLUDED.reputation_clients, updated_at = now()
        RETURNING require_registered, min_reputation::text AS min_reputation, reputation_clients, updated_at`.pipe(Effect.orDie)
      return fromRow(rows[0]!)
    })
    return HirePolicies.of({ get, set })
  })
)
