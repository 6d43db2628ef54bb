/**
 * "Hire only a named agent" at hire build (docs/marketplace.md, "Hire only a named agent"): under
 * the owner's policy the provider must be an agent of the chain's ERC-8004 Identity Registry (its
 * `agentWallet` is the provider's wallet) and, with a floor, its reputation from the owner's
 * reviewers at or above it. What passes becomes the mandate's `AgentIdentityEnforcer` caveat, so
 * the chain checks the same again at every redemption (AgentIdentity.sol).
 */
import { Effect, Option } from "effect"
import { type Address, concat, type Hex, hexToBigInt, numberToHex, type PublicClient, size, slice, toHex } from "viem"
import { BadRequest, Conflict, ServiceUnavailable } from "../api/Errors.ts"
import {
  agentIdsOf,
  type AgentRegistryError,
  type Registration,
  registrationOf,
  reputationOf,
  type ReputationSummary,
  reputationText,
  reputationWad
} from "../chain/AgentRegistry.ts"
import type { NetworkDescription } from "../chain/Network.ts"
import { floorWad, type HirePolicy } from "./IdentityPolicy.ts"

const ZERO = "0x0000000000000000000000000000000000000000"

/** What the enforcer holds: the agent id bound to the provider and, when set, the floor and whose feedback counts. */
export interface NamedAgentTerms {
  readonly identityRegistry: Address
  readonly agentId: bigint
  readonly provider: Address
  readonly floor: { readonly reputationRegistry: Address; readonly minWad: bigint; readonly clients: ReadonlyArray<Address> } | undefined
}

/** identityRegistry(20) ‖ agentId(32) ‖ provider(20) ‖ reputationRegistry(20) ‖ minValue(32, int256) ‖ client(20) × n. */
export const encodeNamedAgentTerms = (t: NamedAgentTerms): Hex =>
  concat([
    t.identityRegistry,
    toHex(t.agentId, { size: 32 }),
    t.provider,
    t.floor?.reputationRegistry ?? ZERO,
    numberToHex(t.floor?.minWad ?? 0n, { size: 32, signed: true }),
    ...(t.floor?.clients ?? [])
  ]).toLowerCase() as Hex

/** The terms back from the signed caveat, or why they are not the enforcer's shape. */
export const decodeNamedAgentTerms = (terms: Hex): NamedAgentTerms | { readonly problem: string } => {
  const n = size(terms) - 124
  if (n < 0 || n % 20 !== 0) return { problem: "agent identity terms of the wrong length" }
  const addr = (at: number) => slice(terms, at, at + 20).toLowerCase() as Address
  const reputationRegistry = addr(72)
  const clients = Array.from({ length: n / 20 }, (_, i) => addr(124 + i * 20))
  if ((reputationRegistry === ZERO) !== (clients.length === 0)) return { problem: "a reputation floor without its clients" }
  const raw = hexToBigInt(slice(terms, 92, 124))
  const minWad = raw >= 2n ** 255n ? raw - 2n ** 256n : raw
  return {
    identityRegistry: addr(0),
    agentId: hexToBigInt(slice(terms, 20, 52)),
    provider: addr(52),
    floor: reputationRegistry === ZERO ? undefined : { reputationRegistry, minWad, clients }
  }
}

/** The floor in words (`80.5`), from its 18-decimal fixed point. */
export const wadText = (wad: bigint): string =>
  reputationText({ count: 0, value: wad, decimals: 18, clients: [] })

export interface NamedAgent {
  readonly agentId: bigint
  readonly registration: Registration
  /** From the owner's reviewers, when the policy sets a floor. */
  readonly reputation: ReputationSummary | undefined
  readonly terms: NamedAgentTerms
}

const unavailable = (chainId: number) => (e: AgentRegistryError) =>
  new ServiceUnavailable({ message: `Chain ${chainId} did not answer a registry read: ${e.message}`, details: { chainId } })

/**
 * Under a policy that requires it, the provider's agent (the lowest agent id bound to its wallet
 * that meets the floor), or a 409 naming why none does; none when the policy is off.
 */
export const requireNamedAgent = (
  client: PublicClient,
  network: NetworkDescription,
  policy: HirePolicy,
  wallet: Address
): Effect.Effect<Option.Option<NamedAgent>, BadRequest | Conflict | ServiceUnavailable> =>
  Effect.gen(function*() {
    if (!policy.requireRegistered) return Option.none()
    const registries = network.erc8004
    if (registries === undefined || network.delegation.caveatEnforcers["AgentIdentityEnforcer"] === undefined) {
      return yield* new BadRequest({
        message: `Your hire policy accepts only ERC-8004 registered agents, and chain ${network.chainId} has no ERC-8004 registries ` +
          `or no AgentIdentityEnforcer to hold that: hire on another chain, or change the policy.`,
        details: { chainId: network.chainId }
      })
    }
    const chainId = network.chainId
    const ids = yield* Effect.mapError(agentIdsOf(client, registries, wallet), unavailable(chainId))
    if (ids.length === 0) {
      return yield* new Conflict({
        message: `The agent ${wallet} is not registered in the ERC-8004 Identity Registry ${registries.identityRegistry} on chain ` +
          `${chainId} (no agent id has it as its agentWallet); your hire policy accepts only registered agents.`,
        details: { reason: "agent_not_registered", chainId, identityRegistry: registries.identityRegistry, agentWallet: wallet }
      })
    }
    const floor = policy.minReputation
    let chosen: { agentId: bigint; reputation: ReputationSummary | undefined } | undefined
    const seen: Array<{ agentId: string; count: number; reputation: string }> = []
    if (floor === undefined) {
      chosen = { agentId: ids[0]!, reputation: undefined }
    } else {
      const clients = policy.reputationClients as ReadonlyArray<Address>
      for (const agentId of ids) {
        const r = yield* Effect.mapError(reputationOf(client, registries, agentId, clients), unavailable(chainId))
        seen.push({ agentId: agentId.toString(), count: r.count, reputation: r.count === 0 ? "none" : reputationText(r) })
        if (r.count > 0 && reputationWad(r) >= floorWad(floor)) {
          chosen = { agentId, reputation: r }
          break
        }
      }
    }
    if (chosen === undefined) {
      const figures = seen.map((s) => `agent ${s.agentId}: ${s.count === 0 ? "no feedback" : `${s.reputation} from ${s.count} feedback`}`)
      return yield* new Conflict({
        message: `The agent ${wallet}'s reputation from the reviewers you named is below your floor of ${floor} ` +
          `(${figures.join("; ")}); your hire policy refuses it.`,
        details: { reason: "reputation_below_floor", chainId, floor, agents: seen, reputationClients: policy.reputationClients }
      })
    }
    const registration = yield* Effect.mapError(registrationOf(client, registries, chosen.agentId), unavailable(chainId))
    return Option.some({
      agentId: chosen.agentId,
      registration,
      reputation: chosen.reputation,
      terms: {
        identityRegistry: registries.identityRegistry.toLowerCase() as Address,
        agentId: chosen.agentId,
        provider: wallet.toLowerCase() as Address,
        floor: floor === undefined
          ? undefined
          : {
            reputationRegistry: registries.reputationRegistry.toLowerCase() as Address,
            minWad: floorWad(floor),
            clients: policy.reputationClients as ReadonlyArray<Address>
          }
      }
    })
  })
