import { notImplementedGroup } from "../api/NotImplemented.ts"

/** Placeholder until issue 4 lands: the relay answers 501. */
export const UserOpsHandlers = notImplementedGroup("userops", "issue 4")
