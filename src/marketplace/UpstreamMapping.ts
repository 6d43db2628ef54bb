/**
 * The ONE place where the public marketplace's (ACP) field names meet the
 * contract's `Agent`, `Offering`, `Job`, `JobEvent` and `AgentStat`.
 *
 * Upstream shapes are decoded leniently (both client generations' field names,
 * numbers sent as strings, `null` for absent) and then mapped. An item that the
 * mapping cannot vouch for — above all an agent without a valid `walletAddress`
 * — yields `Option.none()`: lists drop it, single reads answer 502. Nothing here
 * matches an agent by name.
 */
import { cleanOutsideText } from "../domain/OutsideText.ts"
import { Option, Schema } from "effect"
import type { Address } from "../domain/Primitives.ts"
import type { Agent, AgentStat, Deliverable, Job, JobEvent, JobStatus, Offering, VolumePoint } from "./Domain.ts"

const addressPattern = /^0x[0-9a-fA-F]{40}$/
const hashPattern = /^0x[0-9a-fA-F]{64}$/

export const isAddress = (s: unknown): s is Address => typeof s === "string" && addressPattern.test(s)
export const sameAddress = (a: string, b: string): boolean => a.toLowerCase() === b.toLowerCase()

// ---------------------------------------------------------------------------
// Upstream shapes (lenient)
// ---------------------------------------------------------------------------

const Num = Schema.Union([Schema.Finite, Schema.FiniteFromString])
const Id = Schema.Union([Schema.String, Schema.Finite])
const Time = Schema.Union([Schema.String, Schema.Finite])
const opt = <S extends Schema.Top>(s: S) => Schema.optionalKey(Schema.NullOr(s))

export const RawOffering = Schema.Struct({
  id: opt(Id),
  name: Schema.String,
  description: opt(Schema.String),
  slaMinutes: opt(Num),
  // newer client
  requirements: opt(Schema.Json),
  priceType: opt(Schema.String),
  priceValue: opt(Num),
  // older client
  requirement: opt(Schema.Json),
  price: opt(Num),
  priceV2: opt(Schema.Struct({ type: opt(Schema.String), value: opt(Num) })),
  requiredFunds: opt(Schema.Boolean)
})
export type RawOffering = typeof RawOffering.Type

export const RawMetrics = Schema.Struct({
  successfulJobCount: opt(Num),
  successRate: opt(Num),
  uniqueBuyerCount: opt(Num),
  // defined by us from the evidence (see docs/marketplace.md): totals and volume
  totalJobCount: opt(Num),
  grossAgenticAmount: opt(Num),
  totalVolumeUsd: opt(Num),
  revenue: opt(Num),
  totalRevenueUsd: opt(Num),
  volumeHistory: opt(Schema.Array(Schema.Struct({ timestamp: Time, value: Num })))
})

export const RawAgent = Schema.Struct({
  id: opt(Id),
  name: opt(Schema.String),
  description: opt(Schema.String),
  walletAddress: opt(Schema.String),
  // newer client
  imageUrl: opt(Schema.String),
  rating: opt(Num),
  chains: opt(Schema.Array(Schema.Struct({ chainId: Num, tokenAddress: opt(Schema.String) }))),
  offerings: opt(Schema.Array(Schema.Json)),
  // older client
  profilePic: opt(Schema.String),
  jobs: opt(Schema.Array(Schema.Json)),
  metrics: opt(RawMetrics)
})
export type RawAgent = typeof RawAgent.Type

export const RawMemo = Schema.Struct({
  id: opt(Id),
  memoType: opt(Id),
  type: opt(Id),
  content: opt(Schema.Json),
  nextPhase: opt(Id),
  createdAt: opt(Time),
  txHash: opt(Schema.String),
  senderAddress: opt(Schema.String)
})
export type RawMemo = typeof RawMemo.Type

export const RawJob = Schema.Struct({
  id: opt(Id),
  onChainJobId: opt(Id),
  chainId: opt(Num),
  phase: opt(Id),
  jobStatus: opt(Schema.String),
  description: opt(Schema.String),
  offeringName: opt(Schema.String),
  providerName: opt(Schema.String),
  clientAddress: Schema.String,
  providerAddress: Schema.String,
  evaluatorAddress: opt(Schema.String),
  price: opt(Num),
  budget: opt(Num),
  memos: opt(Schema.Array(Schema.Json)),
  deliverable: opt(Schema.Json),
  refunded: opt(Schema.Boolean),
  txHash: opt(Schema.String),
  createdAt: Time,
  updatedAt: opt(Time)
})
export type RawJob = typeof RawJob.Type

/** Upstream bodies come either bare or wrapped as `{ data: … }` (older client: always wrapped). */
export const unwrapData = (body: Schema.Json): Schema.Json =>
  body !== null && typeof body === "object" && !Array.isArray(body) && "data" in body
    ? (body as { readonly data: Schema.Json }).data
    : body

/** `meta.pagination.total` (Strapi-style, as the launchpad and `/agents` listings answer). */
export const RawListMeta = Schema.Struct({
  meta: opt(Schema.Struct({ pagination: opt(Schema.Struct({ total: opt(Num) })) }))
})

export const RawAuthUrl = Schema.Struct({ authUrl: Schema.String, requestId: Schema.String })
/** Pending: no token and no wallet yet. Approved: a wallet address, or a session token to look it up with. */
export const RawAuthStatus = Schema.Struct({
  walletAddress: opt(Schema.String),
  token: opt(Schema.String),
  sessionToken: opt(Schema.String)
})
export const RawLiteAgent = Schema.Struct({ walletAddress: opt(Schema.String) })

// ---------------------------------------------------------------------------
// Mapping
// ---------------------------------------------------------------------------

const decodeOption = <S extends Schema.Codec<unknown, unknown>>(schema: S) => {
  const d = Schema.decodeUnknownOption(schema as unknown as Schema.Codec<S["Type"], unknown>)
  return (u: unknown): Option.Option<S["Type"]> => d(u)
}
const decodeRawOffering = decodeOption(RawOffering)
const decodeRawAgent = decodeOption(RawAgent)
const decodeRawJob = decodeOption(RawJob)
const decodeRawMemo = decodeOption(RawMemo)

const toIso = (t: string | number | null | undefined): Option.Option<string> => {
  if (t === null || t === undefined) return Option.none()
  const d = new Date(typeof t === "number" && t < 1e12 ? t * 1000 : t) // seconds or milliseconds
  // Years outside 0000..9999 (e.g. microseconds taken for milliseconds) print as `+052000-…`, which the
  // wire's Timestamp refuses: the whole answer would fail as a 500. Such a date is not one we can vouch for.
  const year = d.getUTCFullYear()
  return Number.isNaN(d.getTime()) || year < 0 || year > 9999 ? Option.none() : Option.some(d.toISOString())
}

const finiteOr = (fallback: number, ...xs: ReadonlyArray<number | null | undefined>): number => {
  for (const x of xs) if (typeof x === "number" && Number.isFinite(x)) return x
  return fallback
}

export const mapOffering = (raw: RawOffering): Offering => ({
  id: raw.id === null || raw.id === undefined ? raw.name : String(raw.id),
  name: raw.name,
  description: raw.description ?? "",
  priceUsd: finiteOr(0, raw.priceValue, raw.priceV2?.value, raw.price),
  slaMinutes: finiteOr(0, raw.slaMinutes),
  requiresFunds: raw.requiredFunds ?? false,
  requirementsSchema: raw.requirements ?? raw.requirement ?? null
})

/** Upstream agent → contract Agent; none when the wallet address is missing or malformed. */
export const mapAgent = (u: unknown): Option.Option<Agent> =>
  Option.flatMap(decodeRawAgent(u), (raw) => {
    if (!isAddress(raw.walletAddress)) return Option.none()
    const m = raw.metrics ?? {}
    const offerings = (raw.offerings ?? raw.jobs ?? []).flatMap((o) =>
      Option.match(decodeRawOffering(o), { onNone: () => [], onSome: (r) => [mapOffering(r)] })
    )
    const recentVolumeUsd: Array<VolumePoint> = (m.volumeHistory ?? []).flatMap((p) =>
      Option.match(toIso(p.timestamp), { onNone: () => [], onSome: (timestamp) => [{ timestamp, value: p.value }] })
    )
    const chainIds = (raw.chains ?? []).map((c) => c.chainId).filter((c) => Number.isInteger(c) && c >= 1)
    return Option.some({
      walletAddress: raw.walletAddress,
      // The upstream's words: one line, nothing hidden, bounded (src/domain/OutsideText.ts); a summary quotes it after the limits.
      name: cleanOutsideText(raw.name ?? ""),
      description: raw.description ?? "",
      imageUrl: raw.imageUrl ?? raw.profilePic ?? "",
      rating: finiteOr(0, raw.rating),
      offerings,
      successRate: finiteOr(0, m.successRate),
      totalJobs: Math.trunc(finiteOr(0, m.totalJobCount, m.successfulJobCount)),
      totalVolumeUsd: finiteOr(0, m.grossAgenticAmount, m.totalVolumeUsd),
      totalRevenueUsd: finiteOr(0, m.revenue, m.totalRevenueUsd),
      uniqueWallets: Math.trunc(finiteOr(0, m.uniqueBuyerCount)),
      recentVolumeUsd,
      chainIds: [...new Set(chainIds)]
    })
  })

/** A list of upstream agents: the invalid ones (no wallet, wrong types) are dropped. */
export const mapAgents = (body: Schema.Json): ReadonlyArray<Agent> => {
  const list = unwrapData(body)
  if (!Array.isArray(list)) return []
  return list.flatMap((u) => Option.match(mapAgent(u), { onNone: () => [], onSome: (a) => [a] }))
}

/** Whether a body is a list at all (bare or `{data: [...]}`): anything else is a malformed answer. */
export const isAgentList = (body: Schema.Json): boolean => Array.isArray(unwrapData(body))

export const toAgentStat = (agent: Agent, asOf: string): AgentStat => ({
  walletAddress: agent.walletAddress,
  successRate: agent.successRate,
  totalJobs: agent.totalJobs,
  rating: agent.rating,
  pricePerJobUsd: agent.offerings.length === 0 ? 0 : Math.min(...agent.offerings.map((o) => o.priceUsd)),
  totalVolumeUsd: agent.totalVolumeUsd,
  asOf
})

/** Both phase vocabularies (older numeric/named phases, newer ERC-8183-style statuses). */
const statusOf = (v: string | number | null | undefined): Option.Option<JobStatus> => {
  if (v === null || v === undefined) return Option.none()
  switch (String(v).toUpperCase()) {
    case "0":
    case "REQUEST":
    case "OPEN":
      return Option.some("requested")
    case "1":
    case "NEGOTIATION":
      return Option.some("negotiating")
    case "2":
    case "TRANSACTION":
    case "FUNDED":
      return Option.some("funded")
    case "3":
    case "EVALUATION":
    case "SUBMITTED":
      return Option.some("submitted")
    case "4":
    case "COMPLETED":
      return Option.some("completed")
    case "5":
    case "REJECTED":
      return Option.some("rejected")
    case "6":
    case "EXPIRED":
      return Option.some("expired")
    default:
      return Option.none()
  }
}

const eventLabel: Record<JobStatus, string> = {
  requested: "Job requested",
  negotiating: "Terms agreed",
  funded: "Escrow funded",
  submitted: "Work delivered",
  completed: "Work accepted",
  rejected: "Work rejected",
  expired: "Job expired"
}

const text = (j: Schema.Json): string => (typeof j === "string" ? j : JSON.stringify(j, null, 2))
const linesOf = (j: Schema.Json): ReadonlyArray<string> => text(j).split(/\r?\n/).filter((l) => l.length > 0)

const mapDeliverable = (j: Schema.Json, offering: string, status: JobStatus): Deliverable => {
  const readByEvaluator = status === "completed" || status === "rejected"
  if (j !== null && typeof j === "object" && !Array.isArray(j)) {
    const o = j as { readonly [k: string]: Schema.Json }
    const title = typeof o.title === "string" ? o.title : offering || "Deliverable"
    const lines = Array.isArray(o.lines)
      ? o.lines.map(text)
      : o.content !== undefined ? linesOf(o.content) : o.value !== undefined ? linesOf(o.value) : linesOf(j)
    return { title, lines, readByEvaluator }
  }
  return { title: offering || "Deliverable", lines: linesOf(j), readByEvaluator }
}

/** A job as the caller sees it, plus who the upstream says the client is (for the ownership check). */
export interface OwnedJob {
  readonly clientAddress: Address
  readonly job: Job
}

/** Upstream job → contract Job; none when addresses, status or dates cannot be read. */
export const mapJob = (u: unknown, chainIdHint?: number): Option.Option<OwnedJob> =>
  Option.flatMap(decodeRawJob(u), (raw): Option.Option<OwnedJob> => {
    const jobId = raw.onChainJobId ?? raw.id
    const chainId = raw.chainId ?? chainIdHint
    const status = Option.orElse(statusOf(raw.jobStatus), () => statusOf(raw.phase))
    const createdAt = toIso(raw.createdAt)
    if (
      jobId === null || jobId === undefined || chainId === undefined || !Number.isInteger(chainId) || chainId < 1 ||
      !isAddress(raw.clientAddress) || !isAddress(raw.providerAddress) || Option.isNone(status) ||
      Option.isNone(createdAt)
    ) return Option.none()
    const client = raw.clientAddress
    const provider = raw.providerAddress
    const evaluator = raw.evaluatorAddress ?? undefined
    const actorOf = (sender: string | null | undefined): string =>
      sender == null
        ? "marketplace"
        : sameAddress(sender, client)
        ? "you"
        : sameAddress(sender, provider)
        ? "agent"
        : evaluator !== undefined && sameAddress(sender, evaluator)
        ? "evaluator"
        : "marketplace"
    const memos = (raw.memos ?? []).flatMap((m) =>
      Option.match(decodeRawMemo(m), { onNone: () => [], onSome: (r) => [r] })
    )
    const memoEvents: Array<JobEvent> = memos.flatMap((m) => {
      const at = toIso(m.createdAt)
      if (Option.isNone(at)) return []
      const phase = statusOf(m.nextPhase)
      const kind = m.memoType ?? m.type
      const label = Option.isSome(phase)
        ? eventLabel[phase.value]
        : kind !== null && kind !== undefined ? `Message (${String(kind).toLowerCase()})` : "Message"
      return [{
        label,
        actor: actorOf(m.senderAddress),
        at: at.value,
        txHash: typeof m.txHash === "string" && hashPattern.test(m.txHash) ? m.txHash : null
      }]
    })
    const created: JobEvent = {
      label: "Job created",
      actor: "you",
      at: createdAt.value,
      txHash: typeof raw.txHash === "string" && hashPattern.test(raw.txHash) ? raw.txHash : null
    }
    const events = [created, ...memoEvents].sort((a, b) => a.at.localeCompare(b.at))
    const offering = raw.offeringName ?? raw.description ?? ""
    // The deliverable: an explicit field, else the memo that moved the job into evaluation.
    const deliveredMemo = memos.find((m) => Option.getOrUndefined(statusOf(m.nextPhase)) === "submitted")
    const deliverableJson = raw.deliverable ?? deliveredMemo?.content ?? null
    const updatedAt = Option.getOrElse(toIso(raw.updatedAt), () => events[events.length - 1]!.at)
    return Option.some({
      clientAddress: client,
      job: {
        jobId: String(jobId),
        chainId,
        agentName: raw.providerName ?? "",
        agentWallet: provider,
        offering,
        status: status.value,
        budgetUsd: finiteOr(0, raw.budget, raw.price),
        createdAt: createdAt.value,
        updatedAt,
        refunded: raw.refunded ?? false,
        deliverable: deliverableJson === null ? null : mapDeliverable(deliverableJson, offering, status.value),
        events
      }
    })
  })

export const mapJobs = (body: Schema.Json): ReadonlyArray<OwnedJob> => {
  const list = unwrapData(body)
  if (!Array.isArray(list)) return []
  return list.flatMap((u) => Option.match(mapJob(u), { onNone: () => [], onSome: (j) => [j] }))
}
