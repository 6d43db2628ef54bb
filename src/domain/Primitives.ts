/**
 * Wire primitives of the contract: the patterns and formats from its Conventions
 * section, shared by every feature's Schemas.
 */
import { Effect, Schema } from "effect"

export const Address = Schema.String.check(
  Schema.isPattern(/^0x[0-9a-fA-F]{40}$/, { description: "0x followed by 40 hex characters" })
).annotate({ identifier: "Address" })
export type Address = typeof Address.Type

/** Hash, permission id, mandate id, transaction hash: 0x + 64 hex. */
export const Hash32 = Schema.String.check(
  Schema.isPattern(/^0x[0-9a-fA-F]{64}$/, { description: "0x followed by 64 hex characters" })
).annotate({ identifier: "Hash32" })
export type Hash32 = typeof Hash32.Type

export const Selector = Schema.String.check(
  Schema.isPattern(/^0x[0-9a-fA-F]{8}$/, { description: "0x followed by 8 hex characters" })
).annotate({ identifier: "Selector" })
export type Selector = typeof Selector.Type

/** Any 0x-prefixed byte string (call data, signatures, factory data). */
export const HexString = Schema.String.check(
  Schema.isPattern(/^0x([0-9a-fA-F]{2})*$/, { description: "0x-prefixed hex bytes" })
).annotate({ identifier: "HexString" })
export type HexString = typeof HexString.Type

/** Nonce, gas-limit and fee fields: unsigned decimal integers as strings. */
export const DecimalString = Schema.String.check(
  Schema.isPattern(/^(0|[1-9][0-9]*)$/, { description: "unsigned decimal integer as a string" })
).annotate({ identifier: "DecimalString" })
export type DecimalString = typeof DecimalString.Type

/** ISO 8601 UTC timestamp, e.g. 2026-01-01T00:00:00.000Z. */
export const Timestamp = Schema.String.check(
  Schema.isPattern(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]00:00)$/, {
    description: "ISO 8601 UTC timestamp"
  })
).annotate({ identifier: "Timestamp" })
export type Timestamp = typeof Timestamp.Type

export const ChainId = Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)).annotate({ identifier: "ChainId" })

/** Token and fiat amounts: finite JSON numbers. */
export const Amount = Schema.Finite
export const NonNegativeAmount = Schema.Finite.check(Schema.isGreaterThanOrEqualTo(0))

export const toTimestamp = (d: Date): Timestamp => d.toISOString()

/** An optional query parameter with a default (applied at decode, shown in OpenAPI). */
export const withDefault = <S extends Schema.Top & Schema.WithoutConstructorDefault>(
  schema: S,
  value: S["Encoded"]
) => schema.pipe(Schema.withDecodingDefaultKey(Effect.succeed(value)))

/** 1..100, default 25: `limit` of activity and the marketplace leaderboard. */
export const PageLimit = withDefault(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 100 })), 25)

/**
 * Characters PostgreSQL cannot store in a text column (NUL, `0x00`) or that are not
 * Unicode text at all (an unpaired UTF-16 surrogate, which would be stored as U+FFFD):
 * refused at decode (400), so no such string ever reaches a query.
 */
const storableText = /^(?:[^\u0000\uD800-\uDFFF]|[\uD800-\uDBFF][\uDC00-\uDFFF])*$/

export const isStorableText = Schema.isPattern(storableText, {
  description: "text without NUL characters or unpaired surrogates",
  message: "must not contain NUL characters or unpaired surrogates"
})

/** Every free-form string a client sends: NUL-free, well-formed Unicode. */
export const Text = Schema.String.check(isStorableText).annotate({ identifier: "Text" })
export type Text = typeof Text.Type

/** Free-form text of bounded length. */
export const TextOfLength = (minimum: number, maximum: number) => Text.check(Schema.isBetweenLength(minimum, maximum))

/** An opaque identifier a client sends back (path ids, filters, cursors): 1..128 storable characters. */
export const Id = TextOfLength(1, 128).annotate({ identifier: "Id" })
export type Id = typeof Id.Type
