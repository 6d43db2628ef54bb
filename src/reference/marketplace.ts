import type { OperationDoc } from "./Reference.ts"

const session = "Any session."
const proxy = "Nothing; reads the upstream marketplace."
const build = (what: string) =>
  `Answers the unsigned account operation that ${what}, its \`typedData\` (EIP-712) and a simulation: sign and send it to \`POST /userops\`.`

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
  "marketplace.hireBuild": {
    summary: "Build a hire (a mandate)",
    description: `Grants an agent a mandate: a delegation with a per-job budget in the marketplace's payment token. ${build("enables it")}`,
    caller: "The owner of the hiring account.",
    chain: "Nothing until relayed; then the mandate's delegation is enabled on chain."
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
  "marketplace.createJobBuild": {
    summary: "Build a job",
    description: `Creates a job for a hired agent under a mandate. ${build("creates the job")}`,
    caller: "The owner of the mandate.",
    chain: "Nothing until relayed; then the job is created on chain."
  },
  "marketplace.fundJobBuild": {
    summary: "Build a job's funding",
    description: `Funds a job from the mandate's budget. ${build("funds it")}`,
    caller: "The owner of the mandate.",
    chain: "Nothing until relayed; then the budget moves into the job's escrow."
  },
  "marketplace.getJob": {
    summary: "Read one job",
    description: "One job by chain and id: its agent, budget, funding and state.",
    caller: session,
    chain: "Reads the job; changes nothing."
  },
  "marketplace.listMandates": {
    summary: "List mandates",
    description: "The signer's mandates (grants to hired agents) with their budgets and status.",
    caller: "The owner.",
    chain: "Nothing."
  },
  "marketplace.revokeMandate": {
    summary: "Build a mandate's revoke",
    description: `Revokes a mandate like any grant. ${build("disables its delegation")}`,
    caller: "The owner of the mandate.",
    chain: "Nothing until relayed; then the mandate's delegation is disabled on chain."
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
  "marketplace.managedDepositBuild": {
    summary: "Build a deposit to the managed wallet",
    description: `Moves tokens from the signer's account to its connected managed wallet (409 when none is connected). ${build("transfers them")}`,
    caller: "The owner of the account.",
    chain: "Nothing until relayed; then the transfer executes."
  },
  "marketplaceStream.stream": {
    summary: "Live agent stats (SSE)",
    description: "Server-sent events of agent statistics: the leaderboard, and the `wallets` asked for.",
    caller: "Anyone; no session.",
    chain: proxy
  }
}
