/**
 * The domain services behind the HTTP API, composed once. What they stand on
 * (SqlClient, AppConfig, AccountFactory, SignatureVerifier, ...) is provided
 * at the edge: `main.ts` for the real run, the test support for tests.
 */
import { Layer } from "effect"
import { Accounts } from "./accounts/Accounts.ts"
import { Sessions } from "./auth/Sessions.ts"
import { SponsorshipBudget } from "./builds/Sponsorship.ts"

/** `SponsorshipBudget`: the sponsorship budget's figures, for an operator (and a metrics endpoint). */
export const ServicesLive = Layer.mergeAll(Sessions.layer.pipe(Layer.provideMerge(Accounts.layer)), SponsorshipBudget.layer)
