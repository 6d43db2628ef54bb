/**
 * What hiring needs of the marketplace proxy, as a port: the marketplace (`marketplace/`) is a
 * peer feature, so hiring never imports it; the composition (`Server.ts`) provides this tag from
 * the proxy's own services (docs/contributing.md, "Folders and layers").
 */
import { Context, type Effect, type Option } from "effect"
import type { NotFound } from "../api/Errors.ts"
import type { UpstreamError } from "../api/Upstream.ts"
import type { Address } from "../domain/Primitives.ts"

/** An agent as hiring reads it: who is paid, its name for the summary, the chains it lists. */
export interface MarketAgent {
  readonly walletAddress: Address
  readonly name: string
  readonly chainIds: ReadonlyArray<number>
}

export class HiringMarket extends Context.Service<HiringMarket, {
  /** The agent with this wallet, through the upstream: an unknown wallet is a 404, never a name match. */
  agent(wallet: Address): Effect.Effect<MarketAgent, NotFound | UpstreamError>
  /** The shared evaluator fixed at job creation, if one is provisioned. */
  readonly evaluator: Effect.Effect<Option.Option<Address>>
  /** The managed (custodial) agent wallet the signer connected, if any. */
  managedWallet(signer: Address): Effect.Effect<Option.Option<Address>>
}>()("das/hiring/HiringMarket") {}
