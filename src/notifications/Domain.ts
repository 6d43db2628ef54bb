import { Schema } from "effect"
import { Timestamp } from "../domain/Primitives.ts"

export const Notification = Schema.Struct({
  id: Schema.String,
  tone: Schema.String,
  title: Schema.String,
  body: Schema.String,
  createdAt: Timestamp,
  read: Schema.Boolean,
  timeLabel: Schema.optionalKey(Schema.NullOr(Schema.String)),
  relatedType: Schema.optionalKey(Schema.NullOr(Schema.String)),
  relatedId: Schema.optionalKey(Schema.NullOr(Schema.String)),
  action: Schema.optionalKey(Schema.NullOr(Schema.Struct({ label: Schema.String, target: Schema.String }))),
  /** The chain it is about (its account's); null for a signer-wide one (a depeg). */
  chainId: Schema.optionalKey(Schema.NullOr(Schema.Number))
}).annotate({ identifier: "Notification" })
export type Notification = typeof Notification.Type
