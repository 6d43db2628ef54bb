/**
 * The ERC-8004 identity beside a marketplace agent (docs/marketplace.md, "Hire only a named
 * agent"): on every served chain with the registries, the agent ids bound to the agent's wallet,
 * each with its registration name (the agent's own words: quoted and bounded, OutsideText.ts)
 * and its reputation summary from every client that gave feedback (anyone may: it is shown, and
 * labelled so; an owner's floor counts only the reviewers the owner names).
 */
import { Context, Effect, Layer, Schema } from "effect"
import type { Address as ViemAddress } from "viem"
import { agentIdsOf, registrationOf, reputationOf, reputationText } from "../chain/AgentRegistry.ts"
import { Chains } from "../chain/Chains.ts"
import { quoteOutsideText } from "../domain/OutsideText.ts"
import { Address, ChainId, DecimalString } from "../domain/Primitives.ts"

/** Longest agent URI shown (it is the registrant's text, and a `data:` URI holds a whole file). */
const URI_SHOWN = 120

export const AgentIdentity = Schema.Struct({
  chainId: ChainId,
  identityRegistry: Address,
  agentId: DecimalString,
  /** The registration file's `name` (on-chain `data:` URIs only), quoted and bounded: the agent's words. */
  registrationName: Schema.optionalKey(Schema.String),
  /** The agent URI, quoted and bounded (not fetched). */
  agentUri: Schema.String,
  reputation: Schema.Struct({
    /** Feedback counted (revoked left out). */
    count: Schema.Int,
    /** The registry's average, as a decimal; `"0"` with no feedback. */
    value: Schema.String,
    /** Whose feedback: every client that gave any (unfiltered: anyone may give feedback). */
    from: Schema.Literal("all_clients")
  })
}).annotate({ identifier: "AgentIdentity" })
export type AgentIdentity = typeof AgentIdentity.Type

export class AgentIdentities extends Context.Service<AgentIdentities, {
  /** The wallet's ERC-8004 agents on every served chain with the registries (a chain that did not answer is left out, logged). */
  of(wallet: Address): Effect.Effect<ReadonlyArray<AgentIdentity>>
}>()("das/marketplace/AgentIdentities") {
  static readonly layer = Layer.effect(
    AgentIdentities,
    Effect.gen(function*() {
      const chains = yield* Chains
      const of = Effect.fn("AgentIdentities.of")(function*(wallet: Address) {
        const perChain = yield* Effect.forEach(chains.all.filter((c) => c.network.erc8004 !== undefined), (net) => {
          const registries = net.network.erc8004!
          const client = net.chain.client
          return agentIdsOf(client, registries, wallet as ViemAddress).pipe(
            Effect.flatMap((ids) =>
              Effect.forEach(ids, (agentId) =>
                Effect.all([registrationOf(client, registries, agentId), reputationOf(client, registries, agentId)]).pipe(
                  Effect.map(([registration, reputation]): AgentIdentity => ({
                    chainId: net.chainId,
                    identityRegistry: registries.identityRegistry,
                    agentId: agentId.toString(),
                    ...(registration.name === undefined ? {} : { registrationName: quoteOutsideText(registration.name) }),
                    agentUri: quoteOutsideText(registration.uri, URI_SHOWN),
                    reputation: { count: reputation.count, value: reputationText(reputation), from: "all_clients" }
                  }))
                ))
            ),
            Effect.catch((e) =>
              Effect.as(Effect.logWarning(`ERC-8004 identity of ${wallet} on chain ${net.chainId} not read: ${e.message}`), [])
            )
          )
        }, { concurrency: 2 })
        return perChain.flat()
      })
      return AgentIdentities.of({ of })
    })
  )
  /** No chain served (the proxy alone): no identity shown. */
  static readonly layerNone = Layer.succeed(AgentIdentities, AgentIdentities.of({ of: () => Effect.succeed([]) }))
}
