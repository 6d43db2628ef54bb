/**
 * The domain services behind the HTTP API, composed once. What they stand on
 * (SqlClient, AppConfig, AccountFactory, SignatureVerifier, ...) is provided
 * at the edge: `main.ts` for the real run, the test support for tests.
 */
import { Layer } from "effect"
import { Accounts } from "./accounts/Accounts.ts"
import { Sessions } from "./auth/Sessions.ts"

export const ServicesLive = Sessions.layer.pipe(Layer.provideMerge(Accounts.layer))
