/**
 * AP2's published JSON schemas (vendored unchanged in ./schemas, source and licence in its
 * README) compiled once with ajv (draft 2020-12), and the mandate's hash: sha-256 of its RFC 8785
 * (JCS) canonical form, the canonicalisation the field uses for a JSON object's digest.
 */
import { createHash } from "node:crypto"
import { Ajv2020 } from "ajv/dist/2020.js"
import canonicalize from "canonicalize"
import openPaymentMandate from "./schemas/open_payment_mandate.json" with { type: "json" }
import amount from "./schemas/types/amount.json" with { type: "json" }
import merchant from "./schemas/types/merchant.json" with { type: "json" }
import paymentInstrument from "./schemas/types/payment_instrument.json" with { type: "json" }
import pisp from "./schemas/types/pisp.json" with { type: "json" }
import type { OpenPaymentMandate } from "./Mapping.ts"

const ajv = new Ajv2020({ allErrors: true, strict: true })
// An annotation of AP2's selective disclosure (SD-JWT): it asserts nothing about the value.
ajv.addKeyword({ keyword: "x-selectively-disclosable-array", schemaType: "boolean" })
ajv.addSchema([amount, merchant, paymentInstrument, pisp])
const validate = ajv.compile<OpenPaymentMandate>(openPaymentMandate)

/** Most schema errors a 400 lists (a oneOf over eight constraint types reports many per item). */
const MAX_ISSUES = 20

export interface SchemaIssue {
  readonly path: string
  readonly message: string
}

/** The mandate if AP2's open Payment Mandate schema accepts it, else what it refuses. */
export const validateMandate = (value: unknown): { readonly ok: OpenPaymentMandate } | { readonly issues: ReadonlyArray<SchemaIssue> } => {
  if (validate(value)) return { ok: value }
  const issues = (validate.errors ?? []).map((e) => ({
    path: `mandate${e.instancePath.replace(/\/(\d+)/g, "[$1]").replace(/\//g, ".")}`,
    message: `${e.message ?? "is not valid"}${e.keyword === "const" || e.keyword === "enum" ? ` (${JSON.stringify(e.params).slice(0, 200)})` : ""}`
  }))
  return { issues: issues.slice(0, MAX_ISSUES) }
}

/** sha-256 of the mandate's RFC 8785 canonical JSON, as 0x-hex. */
export const mandateHash = (mandate: unknown): `0x${string}` => {
  const text = canonicalize(mandate)
  if (text === undefined) throw new Error("the mandate has no JSON form")
  return `0x${createHash("sha256").update(text, "utf8").digest("hex")}`
}
