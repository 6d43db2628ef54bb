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
  action: Schema.optionalKey(Schema.NullOr(Schema.Struct({ label: Schema.String, target: Schema.String })))
}).annotate({ identifier: "Notification" })
export type Notification = typeof Notification.Type
