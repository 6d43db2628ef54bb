/**
 * The contract's marketplace resources (spec: Agent, Offering, Job, JobEvent,
 * AgentStat) as Schemas. Upstream shapes never leave `UpstreamMapping.ts`; these
 * are what every marketplace service and handler speaks.
 */
import { Schema } from "effect"
import { Address, ChainId, Hash32, Timestamp } from "../domain/Primitives.ts"
import { AgentIdentity } from "./Identities.ts"

export const Offering = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  description: Schema.String,
  priceUsd: Schema.Finite,
  slaMinutes: Schema.Finite,
  requiresFunds: Schema.Boolean,
  /** Free-form, as the agent published it (a JSON schema, an object or a sentence). */
  requirementsSchema: Schema.NullOr(Schema.Json)
}).annotate({ identifier: "Offering" })
export type Offering = typeof Offering.Type

export const VolumePoint = Schema.Struct({ timestamp: Timestamp, value: Schema.Finite }).annotate({
  identifier: "VolumePoint"
})
export type VolumePoint = typeof VolumePoint.Type

export const Agent = Schema.Struct({
  /** The only safe identity of an agent. */
  walletAddress: Address,
  name: Schema.String,
  description: Schema.String,
  imageUrl: Schema.String,
  rating: Schema.Finite,
  offerings: Schema.Array(Offering),
  successRate: Schema.Finite,
  totalJobs: Schema.Int,
  totalVolumeUsd: Schema.Finite,
  totalRevenueUsd: Schema.Finite,
  uniqueWallets: Schema.Int,
  recentVolumeUsd: Schema.Array(VolumePoint),
  chainIds: Schema.Array(ChainId),
  /**
   * Beyond the contract, on `GET /marketplace/agents/{wallet}`: the agent's ERC-8004 identities on the served
   * chains (Identities.ts); absent when it has none there.
   */
  erc8004: Schema.optionalKey(Schema.Array(AgentIdentity))
}).annotate({ identifier: "Agent" })
export type Agent = typeof Agent.Type

export const JobEvent = Schema.Struct({
  label: Schema.String,
  /** `you` (the client, i.e. the caller), `agent` (the provider), `evaluator`, or `marketplace`. */
  actor: Schema.String,
  at: Timestamp,
  /** Null for an off-chain step (the upstream gave no transaction). */
  txHash: Schema.NullOr(Hash32)
}).annotate({ identifier: "JobEvent" })
export type JobEvent = typeof JobEvent.Type

export const Deliverable = Schema.Struct({
  title: Schema.String,
  lines: Schema.Array(Schema.String),
  readByEvaluator: Schema.Boolean
}).annotate({ identifier: "Deliverable" })
export type Deliverable = typeof Deliverable.Type

/** Contract status values: `requested` is the spec's sample; the rest follow the upstream lifecycle. */
export const JobStatus = Schema.Literals([
  "requested",
  "negotiating",
  "funded",
  "submitted",
  "completed",
  "rejected",
  "expired"
]).annotate({ identifier: "JobStatus" })
export type JobStatus = typeof JobStatus.Type

export const Job = Schema.Struct({
  jobId: Schema.String,
  chainId: ChainId,
  agentName: Schema.String,
  agentWallet: Address,
  offering: Schema.String,
  status: JobStatus,
  budgetUsd: Schema.Finite,
  createdAt: Timestamp,
  updatedAt: Timestamp,
  refunded: Schema.Boolean,
  /** Null until the agent has delivered. */
  deliverable: Schema.NullOr(Deliverable),
  events: Schema.Array(JobEvent)
}).annotate({ identifier: "Job" })
export type Job = typeof Job.Type

export const AgentStat = Schema.Struct({
  walletAddress: Schema.String,
  successRate: Schema.Finite,
  totalJobs: Schema.Finite,
  rating: Schema.Finite,
  pricePerJobUsd: Schema.Finite,
  totalVolumeUsd: Schema.Finite,
  asOf: Timestamp
}).annotate({ identifier: "AgentStat" })
export type AgentStat = typeof AgentStat.Type

/** One page of the leaderboard. `nextCursor` is `""` on the last page. */
export const AgentsPage = Schema.Struct({
  agents: Schema.Array(Agent),
  nextCursor: Schema.String,
  total: Schema.Int
}).annotate({ identifier: "AgentsPage" })
export type AgentsPage = typeof AgentsPage.Type

export const EvaluatorStatus = Schema.Struct({
  connected: Schema.Boolean,
  /** Absent when no shared evaluator is configured (an address, never null). */
  wallet: Schema.optionalKey(Address)
}).annotate({ identifier: "EvaluatorStatus" })
export type EvaluatorStatus = typeof EvaluatorStatus.Type

export const ManagedConnection = Schema.Struct({
  connected: Schema.Boolean,
  /** Absent while not connected (an address, never null). */
  walletAddress: Schema.optionalKey(Address)
}).annotate({ identifier: "ManagedConnection" })
export type ManagedConnection = typeof ManagedConnection.Type

export const ManagedConnectStart = Schema.Struct({
  /** Where the owner approves; `""` when already connected. */
  loginUrl: Schema.String,
  /** Poll `GET /marketplace/managed/connect/status` with it; `""` when already connected. */
  requestId: Schema.String,
  alreadyConnected: Schema.Boolean,
  /** Absent until connected. */
  walletAddress: Schema.optionalKey(Address)
}).annotate({ identifier: "ManagedConnectStart" })
export type ManagedConnectStart = typeof ManagedConnectStart.Type
