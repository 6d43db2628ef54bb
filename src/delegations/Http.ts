import { notImplementedGroup } from "../api/NotImplemented.ts"

/** Placeholder until issue 5 lands: the delegation endpoints answer 501. */
export const DelegationsHandlers = notImplementedGroup("delegations", "issue 5")
