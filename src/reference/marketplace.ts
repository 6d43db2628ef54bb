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
    description:
      "Jobs whose client is the signer or one of its accounts, from the upstream marketplace's index, newest first. Jobs of " +
      "an ACP contract the upstream does not index (the local network's) are read one at a time from the chain: " +
      "`GET /marketplace/jobs/{chainId}/{jobId}`.",
    caller: session,
    chain: proxy
  },
  "marketplace.getJob": {
    summary: "Read one job",
    description:
      "One job by chain and id: its agent, budget, funding and state. On a chain whose ACP contract this service's local " +
      "network deployed it is read from the contract's events (each step with its transaction hash); elsewhere from the " +
      "upstream. A job whose client is none of the signer's addresses is a 404.",
    caller: session,
    chain: "Reads the job (on the local network: the ACP contract's events); changes nothing."
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
    description:
      "The state of a connect flow started with `POST /marketplace/managed/connect`: `connected` with the wallet's address " +
      "once the person approved at the upstream's login page (stored; later deposits go there).",
    caller: "The session that started it.",
    chain: "Nothing."
  },
  "marketplaceStream.stream": {
    summary: "Live agent stats (SSE)",
    description:
      "Server-sent events of agent statistics: the leaderboard, and the `wallets` asked for (comma-separated). The example " +
      "shows the stream's head only (status and `text/event-stream`); each event is one `AgentStat`.",
    caller: "Anyone; no session.",
    chain: proxy
  }
}
