import type { OperationDoc } from "./Reference.ts"

const session = "Any session."
const proxy = "Nothing; reads the upstream marketplace."

export const marketplaceDocs: Record<string, OperationDoc> = {
  "marketplace.listAgents": {
    summary: "List marketplace agents",
    description: "Agents of the upstream marketplace, by volume, one page at a time (`cursor`, `limit`).",
    caller: session,
    chain: proxy
  },
  "marketplace.evaluator": {
    summary: "The evaluator's status",
    description: "Whether an evaluator wallet is configured, and which.",
    caller: session,
    chain: "Nothing."
  },
  "marketplace.searchAgents": {
    summary: "Search agents",
    description: "Agents matching a free-text `query`, optionally on some chains (`chainIds`), the best `topK`.",
    caller: session,
    chain: proxy
  },
  "marketplace.getAgent": {
    summary: "Read one agent",
    description: "One agent by its wallet address (a name is never an identity: 400).",
    caller: session,
    chain: proxy
  },
  "marketplace.listJobs": {
    summary: "List the signer's jobs",
    description: "Jobs the signer created, with their state as the marketplace and the chain show it.",
    caller: session,
    chain: proxy
  },
  "marketplace.getJob": {
    summary: "Read one job",
    description: "One job by chain and id: its agent, budget, funding and state.",
    caller: session,
    chain: "Reads the job; changes nothing."
  },
  "marketplace.managedConnection": {
    summary: "The managed wallet connection",
    description: "Whether the signer has connected a managed (custodial) wallet of the marketplace, and its address.",
    caller: session,
    chain: "Nothing."
  },
  "marketplace.managedConnect": {
    summary: "Start connecting a managed wallet",
    description: "Starts the upstream's connect flow: answers where the person approves and a `requestId` to poll (a secret: never logged).",
    caller: session,
    chain: "Nothing."
  },
  "marketplace.managedConnectStatus": {
    summary: "Poll a managed wallet connection",
    description: "The state of a connect flow started with `POST /marketplace/managed/connect`.",
    caller: "The session that started it.",
    chain: "Nothing."
  },
  "marketplaceStream.stream": {
    summary: "Live agent stats (SSE)",
    description: "Server-sent events of agent statistics: the leaderboard, and the `wallets` asked for.",
    caller: "Anyone; no session.",
    chain: proxy
  }
}
