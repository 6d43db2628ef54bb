/**
 * ERC-8004 "Trustless Agents" as this service reads it (docs/onchain.md, "ERC-8004"): which agent
 * ids are bound to a wallet in the Identity Registry, an agent's registration (its URI and, when
 * the registration file is on chain as a `data:` URI, its name), and its reputation summary from
 * the Reputation Registry. Reads only; the registries are the vendored ones (contracts/erc8004/).
 *
 * An agent's address is its `agentWallet` (the EIP's "address where the agent receives payments":
 * the registrant's at registration, changed only with the new wallet's signature, cleared when the
 * agent id changes hands), never the NFT's owner: that is who pays a provider here.
 */
import { Data, Effect } from "effect"
import { type Address, getAddress, type Hex, type PublicClient } from "viem"
import type { Erc8004Registries } from "./Network.ts"

const identityAbi = [
  {
    type: "event",
    name: "MetadataSet",
    inputs: [
      { name: "agentId", type: "uint256", indexed: true },
      { name: "indexedMetadataKey", type: "string", indexed: true },
      { name: "metadataKey", type: "string", indexed: false },
      { name: "metadataValue", type: "bytes", indexed: false }
    ]
  },
  { type: "function", name: "getAgentWallet", stateMutability: "view", inputs: [{ name: "agentId", type: "uint256" }], outputs: [{ type: "address" }] },
  { type: "function", name: "tokenURI", stateMutability: "view", inputs: [{ name: "tokenId", type: "uint256" }], outputs: [{ type: "string" }] }
] as const

const reputationAbi = [
  { type: "function", name: "getClients", stateMutability: "view", inputs: [{ name: "agentId", type: "uint256" }], outputs: [{ type: "address[]" }] },
  {
    type: "function",
    name: "getSummary",
    stateMutability: "view",
    inputs: [
      { name: "agentId", type: "uint256" },
      { name: "clientAddresses", type: "address[]" },
      { name: "tag1", type: "string" },
      { name: "tag2", type: "string" }
    ],
    outputs: [{ name: "count", type: "uint64" }, { name: "summaryValue", type: "int128" }, { name: "summaryValueDecimals", type: "uint8" }]
  }
] as const

/** A registry that does not answer: the caller says which chain, as for any chain read. */
export class AgentRegistryError extends Data.TaggedError("AgentRegistryError")<{ readonly message: string }> {}

const read = <A>(what: string, f: () => Promise<A>) =>
  Effect.tryPromise({ try: f, catch: (cause) => new AgentRegistryError({ message: `ERC-8004 ${what}: ${String(cause).split("\n")[0]}` }) })

/** Most agent ids read for one wallet (a wallet that registered more is cut here, lowest ids first). */
const MAX_AGENTS_PER_WALLET = 20
/** Most clients a "from everyone" summary reads (the registry's loop is unbounded; an `eth_call` is not). */
export const MAX_SUMMARY_CLIENTS = 200
/** Longest agent URI read for a name (a `data:` URI carries the whole registration file). */
const MAX_URI = 16_384

/**
 * The agent ids whose `agentWallet` is `wallet` now, lowest first: every id the registry ever bound
 * to it (its `MetadataSet("agentWallet")` events) re-read with `getAgentWallet`, so a wallet that
 * was changed, unset or cleared by a transfer no longer counts.
 */
export const agentIdsOf = (client: PublicClient, registries: Erc8004Registries, wallet: Address) =>
  Effect.gen(function*() {
    const logs = yield* read("identity events", () =>
      client.getLogs({
        address: registries.identityRegistry,
        event: identityAbi[0],
        args: { indexedMetadataKey: "agentWallet" },
        fromBlock: 0n,
        toBlock: "latest"
      }))
    const target = wallet.toLowerCase()
    const ids = [...new Set(
      logs.filter((l) => (l.args.metadataValue ?? "0x").toLowerCase() === target).map((l) => l.args.agentId!)
    )].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)).slice(0, MAX_AGENTS_PER_WALLET)
    const current = yield* Effect.forEach(ids, (agentId) =>
      read("agent wallet", () =>
        client.readContract({ address: registries.identityRegistry, abi: identityAbi, functionName: "getAgentWallet", args: [agentId] })
      ).pipe(Effect.map((bound) => ({ agentId, bound: bound.toLowerCase() }))), { concurrency: 4 })
    return current.filter((c) => c.bound === target).map((c) => c.agentId)
  })

export interface Registration {
  /** The agent URI as the registry holds it (outside text: the registrant's). */
  readonly uri: string
  /** `name` of the registration file, when it is on chain (a `data:` URI); outside text. */
  readonly name: string | undefined
}

/**
 * The registration file's `name`, read only from a `data:application/json` URI (base64 or
 * percent-encoded): this service fetches no URL an agent names (no request on an agent's behalf).
 */
export const registrationName = (uri: string): string | undefined => {
  if (uri.length > MAX_URI) return undefined
  const m = /^data:application\/json(;charset=[\w-]+)?(;base64)?,(.*)$/is.exec(uri)
  if (m === null) return undefined
  try {
    const text = m[2] === undefined ? decodeURIComponent(m[3]!) : Buffer.from(m[3]!, "base64").toString("utf8")
    const json: unknown = JSON.parse(text)
    if (typeof json !== "object" || json === null || !("name" in json)) return undefined
    return typeof json.name === "string" ? json.name : undefined
  } catch {
    return undefined
  }
}

export const registrationOf = (client: PublicClient, registries: Erc8004Registries, agentId: bigint) =>
  read("agent URI", () =>
    client.readContract({ address: registries.identityRegistry, abi: identityAbi, functionName: "tokenURI", args: [agentId] })
  ).pipe(Effect.map((uri): Registration => ({ uri, name: registrationName(uri) })))

export interface ReputationSummary {
  /** Feedback counted (revoked feedback left out). */
  readonly count: number
  /** The average, as the registry computes it (`summaryValue` at `decimals`). */
  readonly value: bigint
  readonly decimals: number
  /** The clients whose feedback was counted. */
  readonly clients: ReadonlyArray<Address>
}

/** The summary as a decimal string (`"87.5"`). */
export const reputationText = (s: ReputationSummary): string => {
  const negative = s.value < 0n
  const abs = negative ? -s.value : s.value
  const base = 10n ** BigInt(s.decimals)
  const frac = (abs % base).toString().padStart(s.decimals, "0").replace(/0+$/, "")
  return `${negative ? "-" : ""}${abs / base}${frac === "" ? "" : `.${frac}`}`
}

/** The summary scaled to 18 decimals, as `AgentIdentityEnforcer` compares it with the floor. */
export const reputationWad = (s: ReputationSummary): bigint => s.value * 10n ** BigInt(18 - s.decimals)

/**
 * The registry's `getSummary(agentId, clients, "", "")`: from the named clients, or, with none, from
 * every client that gave feedback (`getClients`, at most `MAX_SUMMARY_CLIENTS`): anyone may give
 * feedback, so that figure is shown, never used as a floor (docs/decisions.md).
 */
export const reputationOf = (
  client: PublicClient,
  registries: Erc8004Registries,
  agentId: bigint,
  clients?: ReadonlyArray<Address>
) =>
  Effect.gen(function*() {
    const from = clients ?? (yield* read("clients", () =>
      client.readContract({ address: registries.reputationRegistry, abi: reputationAbi, functionName: "getClients", args: [agentId] })
    )).slice(0, MAX_SUMMARY_CLIENTS)
    if (from.length === 0) return { count: 0, value: 0n, decimals: 0, clients: [] } satisfies ReputationSummary
    const [count, value, decimals] = yield* read("reputation summary", () =>
      client.readContract({
        address: registries.reputationRegistry,
        abi: reputationAbi,
        functionName: "getSummary",
        args: [agentId, from.map((a) => a as Hex), "", ""]
      }))
    return { count: Number(count), value, decimals, clients: from.map((a) => getAddress(a)) } satisfies ReputationSummary
  })
