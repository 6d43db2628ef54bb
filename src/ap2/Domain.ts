/**
 * The AP2 feature's wire types: the request that carries an open Payment Mandate, and the grant
 * build it becomes (the same object as `POST /delegations/build` answers, with the mandate named).
 */
import { Schema } from "effect"
import { DelegationBuild, GrantMandate } from "../delegations/Domain.ts"
import { Address, ChainId, Id, TextOfLength, Timestamp } from "../domain/Primitives.ts"

export const examplePayee = "0x70997970c51812dc3a010c7d01b50e0d17dc79c8"

/** An AP2 open Payment Mandate as an agent holds it (its disclosed claims), checked against AP2's schema in the service. */
const exampleMandate = {
  vct: "mandate.payment.open.1",
  constraints: [
    { type: "payment.amount_range", currency: "USD", max: 2500 },
    { type: "payment.budget", currency: "USD", max: 100 },
    { type: "payment.agent_recurrence", frequency: "WEEKLY", max_occurrences: 4 },
    { type: "payment.allowed_payees", allowed: [{ id: examplePayee, name: "Demo Merchant" }] },
    { type: "payment.reference", conditional_transaction_id: "FzLoxbbtgQGYZxoSM2NJYJtkFTSsdfUBoVEQ12k7JN8" }
  ],
  cnf: { jwk: { kty: "EC", crv: "P-256", x: "QpSyxPQHy38xckypDr54gZ3T42zj9iLtV4koyb5U27c", y: "37HLd7JJinxjJIn8J7HijssoeclbfhdW-gUL7feI9lw" } }
}

export const PaymentMandateBuildRequest = Schema.Struct({
  /** The open Payment Mandate's claims (`vct` `mandate.payment.open.1`), validated against AP2's published schema. */
  mandate: Schema.Json,
  /** Who redeems the grant: the agent holding the mandate. */
  delegateeAddress: Address,
  chainId: ChainId,
  accountId: Schema.optionalKey(Id),
  /** The stablecoin paying the mandate's currency (default: the first of that currency's known here). */
  token: Schema.optionalKey(TextOfLength(1, 64)),
  /** The grant's name (the owner's words, quoted in the summary); default "AP2 payment mandate". */
  name: Schema.optionalKey(TextOfLength(1, 80)),
  /** An earlier end than the mandate's own (never a later one). */
  expiresAt: Schema.optionalKey(Timestamp)
}).annotate({
  identifier: "PaymentMandateBuildRequest",
  examples: [{ mandate: exampleMandate, delegateeAddress: "0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc", chainId: 31337 }]
})
export type PaymentMandateBuildRequest = typeof PaymentMandateBuildRequest.Type

export const PaymentMandateBuild = Schema.Struct({
  ...DelegationBuild.fields,
  /** The mandate the grant holds: its hash (sha-256 of its RFC 8785 form), kept on the grant. */
  mandate: GrantMandate,
  /** Which constraint became which limit (the service's words, also in the summary). */
  mapped: Schema.Array(Schema.String)
}).annotate({ identifier: "PaymentMandateBuild" })
