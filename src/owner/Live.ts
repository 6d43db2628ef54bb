/** The account rules and the owner's account over the one builder and hook registry (src/userops/Live.ts). */
import { Layer } from "effect"
import { OperationBuilderLive, RelayHooksLive } from "../userops/Live.ts"
import { OwnerAccount } from "./OwnerAccount.ts"
import { OwnerRepo } from "./OwnerRepo.ts"
import { AccountRules } from "./Rules.ts"

export const AccountRulesLive = AccountRules.layer.pipe(Layer.provide([OperationBuilderLive, RelayHooksLive]))

export const OwnerAccountLive = OwnerAccount.layer.pipe(
  Layer.provide([AccountRulesLive, OperationBuilderLive, RelayHooksLive, OwnerRepo.layer])
)
