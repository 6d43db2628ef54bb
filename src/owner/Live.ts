/** The account rules and the owner's account over the one builder and hook registry (src/userops/Live.ts). */
import { Layer } from "effect"
import { AuditLive } from "../audit/Recorder.ts"
import { OperationBuilderLive, RelayHooksLive } from "../userops/Live.ts"
import { GuardianLane } from "./Guardians.ts"
import { OwnerAccount } from "./OwnerAccount.ts"
import { OwnerRepo } from "./OwnerRepo.ts"
import { PanicKeys } from "./PanicKeys.ts"
import { AccountRules } from "./Rules.ts"

export const AccountRulesLive = AccountRules.layer.pipe(Layer.provide([OperationBuilderLive, RelayHooksLive]))

/** One instance (its relay hooks are registered once): the owner's handlers and the panic key's share it. */
export const PanicKeysLive = PanicKeys.layer.pipe(
  Layer.provide([AccountRulesLive, OperationBuilderLive, RelayHooksLive, OwnerRepo.layer, AuditLive])
)

export const OwnerAccountLive = OwnerAccount.layer.pipe(
  Layer.provide([AccountRulesLive, OperationBuilderLive, RelayHooksLive, OwnerRepo.layer, PanicKeysLive])
)

export const GuardianLaneLive = GuardianLane.layer.pipe(Layer.provide([OperationBuilderLive, RelayHooksLive, OwnerRepo.layer, AuditLive]))
