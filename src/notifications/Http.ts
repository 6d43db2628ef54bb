import { notImplementedGroup } from "../api/NotImplemented.ts"

/** Placeholder until issue 3 lands: the notification endpoints answer 501. */
export const NotificationsHandlers = notImplementedGroup("notifications", "issue 3")
