import { notImplementedGroup } from "../api/NotImplemented.ts"

/** Placeholder until issue 3 lands: the activity endpoints answer 501. */
export const ActivityHandlers = notImplementedGroup("activity", "issue 3")
