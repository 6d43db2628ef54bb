/** The account rules over the one builder and hook registry (src/userops/Live.ts). */
import { Layer } from "effect"
import { OperationBuilderLive, RelayHooksLive } from "../userops/Live.ts"
import { AccountRules } from "./Rules.ts"

export const AccountRulesLive = AccountRules.layer.pipe(Layer.provide([OperationBuilderLive, RelayHooksLive]))
