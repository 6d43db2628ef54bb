/**
 * The domain services behind the HTTP API, composed once. What they stand on
 * (SqlClient, AppConfig, AccountFactory, SignatureVerifier, ...) is provided
 * at the edge: `main.ts` for the real run, the test support for tests.
 */
import { Layer } from "effect"
import { Accounts } from "./accounts/Accounts.ts"
import { Sessions } from "./auth/Sessions.ts"
import { SponsorshipBudget } from "./builds/Sponsorship.ts"
import { EntryNotifierLive } from "./notifications/EntryNotifier.ts"

/**
 * `SponsorshipBudget`: the sponsorship budget's figures, for an operator (and a metrics endpoint).
 * `EntryNotifier`: the port through which the audit log (below the features) raises each
 * entry's notification (the notifications feature's).
 */
export const ServicesLive = Layer.mergeAll(
  Sessions.layer.pipe(Layer.provideMerge(Accounts.layer)),
  SponsorshipBudget.layer,
  EntryNotifierLive
)
