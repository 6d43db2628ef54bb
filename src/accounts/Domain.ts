import { Schema } from "effect"
import { Address, ChainId, Timestamp } from "../domain/Primitives.ts"

export const Account = Schema.Struct({
  id: Schema.String,
  label: Schema.String,
  address: Address,
  type: Schema.String,
  deploymentStatus: Schema.String,
  chainId: ChainId,
  signerAddress: Address,
  frozen: Schema.Boolean,
  index: Schema.Int,
  hidden: Schema.Boolean,
  purpose: Schema.String,
  createdAt: Timestamp,
  totalFiat: Schema.Finite
}).annotate({ identifier: "Account" })
export type Account = typeof Account.Type
