/**
 * The chains this service serves, one registry (issue 29). Every feature asks it for "the
 * network of chain N" — its description and its own chain reader, bundler, account stack
 * and paymaster — instead of assuming one network. An unknown or unconfigured chain id is a
 * 400 that lists the chains served. The first network is the primary one: where a request
 * names no chain (sign-in, an account-scoped build without `chainId`), it is meant.
 *
 * The per-chain services are plain values built once per network here; nothing else
 * constructs them (tests may still provide one chain's `Network`, `Chain`, ... tags).
 */
import { NodeHttpClient } from "@effect/platform-node"
import { Config, Context, Duration, Effect, Layer } from "effect"
import { BadRequest, ServiceUnavailable } from "../api/Errors.ts"
import { AccountStack, makeHybridDeleGator } from "./Accounts4337.ts"
import { Bundler, makeBundler } from "./Bundler.ts"
import { Chain, makeChain } from "./Chain.ts"
import { type ChainHealth, chainTimeouts, makeChainHealth, monitor, ProbeConfig } from "./ChainHealth.ts"
import { Network, type NetworkDescription } from "./Network.ts"
import { makePaymaster, Paymaster } from "./Paymaster.ts"

/** One served chain: its description and the services that talk to it. */
export interface ChainNetwork {
  readonly chainId: number
  readonly name: string
  readonly network: NetworkDescription
  readonly chain: Chain["Service"]
  readonly bundler: Bundler["Service"]
  readonly accounts: AccountStack["Service"]
  readonly paymaster: Paymaster["Service"]
}

/** What readiness reports of one chain: whether its RPC and its bundler answer the monitor's probes (`ChainHealth.ts`). */
export interface ChainStatus {
  readonly chainId: number
  readonly name: string
  readonly status: "ok" | "degraded"
  readonly rpc: "ok" | "down"
  readonly bundler: "ok" | "down"
}

export interface ChainsShape {
  /** Every served chain, the primary first. */
  readonly all: ReadonlyArray<ChainNetwork>
  readonly ids: ReadonlyArray<number>
  readonly primary: ChainNetwork
  /** The network of chain `chainId`; an unserved one is a 400 naming the chains served. */
  get(chainId: number): Effect.Effect<ChainNetwork, BadRequest>
  /** The network of a stored row's chain; one no longer served is a 503 (the record stays, the chain is out of reach). */
  serving(chainId: number): Effect.Effect<ChainNetwork, ServiceUnavailable>
  /** The same without the error, for stored rows and events (undefined: not served any more). */
  find(chainId: number): ChainNetwork | undefined
  /** The display name of a chain (served or not). */
  nameOf(chainId: number): string
  /**
   * Each chain's status (readiness): a chain whose RPC or bundler does not answer is `degraded`
   * (and its calls fail at once meanwhile), the others are unaffected.
   */
  readonly health: Effect.Effect<ReadonlyArray<ChainStatus>>
}

export class Chains extends Context.Service<Chains, ChainsShape>()("app/chain/Chains") {
  /** The registry over these networks (the first is the primary). */
  static readonly fromNetworks = (networks: ReadonlyArray<NetworkDescription>) =>
    Layer.effect(Chains, makeChains(networks)).pipe(Layer.provide(NodeHttpClient.layerUndici))

  /**
   * One network's services as the single-chain tags (`Network`, `Chain`, `Bundler`,
   * `AccountStack`, `Paymaster`), taken from the registry: for tests and scripts that talk to one chain.
   */
  static readonly single = (chainId?: number) =>
    Layer.effectContext(Effect.gen(function*() {
      const chains = yield* Chains
      const net = chainId === undefined ? chains.primary : yield* Effect.orDie(chains.get(chainId))
      return Context.make(Network, net.network).pipe(
        Context.add(Chain, net.chain),
        Context.add(Bundler, net.bundler),
        Context.add(AccountStack, net.accounts),
        Context.add(Paymaster, net.paymaster)
      )
    }))
}

/** Served chains as they appear in errors and `details.served`. */
export const servedList = (all: ReadonlyArray<Pick<ChainNetwork, "chainId" | "name">>) =>
  all.map((c) => ({ chainId: c.chainId, name: c.name }))

export const unknownChain = (chainId: number, all: ReadonlyArray<Pick<ChainNetwork, "chainId" | "name">>) =>
  new BadRequest({
    message: `Chain ${chainId} is not served here; served: ${all.map((c) => `${c.chainId} (${c.name})`).join(", ")}`,
    details: { chainId, served: servedList(all) }
  })

const makeChains = (networks: ReadonlyArray<NetworkDescription>) =>
  Effect.gen(function*() {
    if (networks.length === 0) return yield* Effect.die(new Error("Chains: no network to serve"))
    const retries = yield* Config.Int("BUNDLER_RETRIES").pipe(Config.withDefault(2))
    // One fee-data read answers the builds of this long (Chain.ts, `feeDataMaxAge`; docs/decisions.md).
    const feeDataMaxAge = yield* Config.Duration("CHAIN_FEE_DATA_MAX_AGE").pipe(Config.withDefault(Duration.seconds(1)))
    const probeConfig = yield* ProbeConfig
    const all: Array<ChainNetwork> = []
    const healthOf = new Map<number, ChainHealth>()
    for (const network of networks) {
      const timeouts = yield* chainTimeouts(network.chainId)
      const health = makeChainHealth(network.chainId)
      healthOf.set(network.chainId, health)
      all.push({
        chainId: network.chainId,
        name: network.name,
        network,
        chain: makeChain(network, { timeout: timeouts.rpc, health, feeDataMaxAge }),
        bundler: yield* makeBundler(network, { timeout: timeouts.bundler, retries, health }),
        accounts: makeHybridDeleGator({ chainId: network.chainId, entryPoint: network.entryPoint, environment: network.delegation }),
        paymaster: makePaymaster(network)
      })
      // The probes go around the fail-fast (they are how a chain found down is found back), one attempt each.
      const probeChain = makeChain(network, { timeout: probeConfig.timeout })
      const probeBundler = yield* makeBundler(network, { timeout: probeConfig.timeout, retries: 0 })
      yield* Effect.forkScoped(
        monitor(health, network.name, { rpc: probeChain.blockNumber, bundler: probeBundler.supportedEntryPoints }, probeConfig)
      )
    }
    const byId = new Map(all.map((c) => [c.chainId, c]))
    // What the monitor found (readiness is polled often; it reads the state and loads no chain).
    const health = Effect.sync(() =>
      all.map((c): ChainStatus => {
        const h = healthOf.get(c.chainId)!
        const rpc = h.isDown("rpc") ? "down" as const : "ok" as const
        const bundler = h.isDown("bundler") ? "down" as const : "ok" as const
        return { chainId: c.chainId, name: c.name, status: rpc === "ok" && bundler === "ok" ? "ok" : "degraded", rpc, bundler }
      })
    )
    const get = (chainId: number) => {
      const found = byId.get(chainId)
      return found === undefined ? Effect.fail(unknownChain(chainId, all)) : Effect.succeed(found)
    }
    return Chains.of({
      all,
      ids: all.map((c) => c.chainId),
      primary: all[0]!,
      get,
      serving: (chainId) => {
        const found = byId.get(chainId)
        return found === undefined
          ? Effect.fail(new ServiceUnavailable({ message: `Chain ${chainId} is no longer served by this deployment`, details: { chainId } }))
          : Effect.succeed(found)
      },
      find: (chainId) => byId.get(chainId),
      nameOf: (chainId) => byId.get(chainId)?.name ?? `Chain ${chainId}`,
      health
    })
  })
