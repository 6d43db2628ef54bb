import type { OperationDoc } from "./Reference.ts"

const build = (what: string) =>
  `Answers the unsigned account operation that ${what}, its \`typedData\` (EIP-712) and a simulation: sign and send it to \`POST /userops\`.`

export const hiringDocs: Record<string, OperationDoc> = {
  "hiring.hireBuild": {
    summary: "Build a hire (a mandate)",
    description: "Grants an agent a mandate on the chain `chainId` names (any chain served; otherwise a 400 listing them): a delegation " +
      `with a per-job budget in the marketplace's payment token, which that chain enforces. Under the owner's hire policy ` +
      "the agent must be a registered ERC-8004 agent at its reputation floor (409 otherwise), which the mandate also holds " +
      `on chain. ${build("enables it")}`,
    caller: "The owner of the hiring account.",
    chain: "Nothing until relayed; then the mandate's delegation is enabled on chain."
  },
  "hiring.getHirePolicy": {
    summary: "Read the hire policy",
    description: "The signer's hire policy: whether a hire's provider must be an agent registered in the chain's ERC-8004 " +
      "Identity Registry, and the reputation floor (with the reviewers whose feedback counts) it must meet. Never set: " +
      "`requireRegistered: false` (any wallet).",
    caller: "The signer (an owner).",
    chain: "Nothing."
  },
  "hiring.setHirePolicy": {
    summary: "Set the hire policy",
    description: "Sets the signer's hire policy for later hires. `requireRegistered: true`: the provider must be an ERC-8004 " +
      "agent (its `agentWallet` is the provider) or the hire is a 409 `agent_not_registered`; with `minReputation` and " +
      "`reputationClients` (1 to 20 reviewers you trust), its Reputation Registry summary from those reviewers must be at " +
      "least the floor (409 `reputation_below_floor`). The hire's mandate then carries the same check as a caveat the " +
      "chain runs at every redemption. A floor without reviewers, or reviewers without a floor, is a 400.",
    caller: "The signer (an owner).",
    chain: "Nothing (each later hire's mandate holds it on chain)."
  },
  "hiring.createJobBuild": {
    summary: "Build a job",
    description: "Creates a job for a hired agent under a mandate, on the marketplace's ACP contract of that chain (the local " +
      "network deploys one; the example's job was created there and read back from its `JobCreated` event). " +
      build("creates the job"),
    caller: "The owner of the mandate.",
    chain: "Nothing until relayed; then the job is created on chain."
  },
  "hiring.fundJobBuild": {
    summary: "Build a job's funding",
    description: `Funds a job from the mandate's budget. ${build("funds it")}`,
    caller: "The owner of the mandate.",
    chain: "Nothing until relayed; then the budget moves into the job's escrow."
  },
  "hiring.listMandates": {
    summary: "List mandates",
    description: "The signer's mandates (grants to hired agents) with their budgets and status.",
    caller: "The owner.",
    chain: "Nothing."
  },
  "hiring.revokeMandate": {
    summary: "Build a mandate's revoke",
    description: `Revokes a mandate like any grant. ${build("disables its delegation")}`,
    caller: "The owner of the mandate.",
    chain: "Nothing until relayed; then the mandate's delegation is disabled on chain."
  },
  "hiring.managedDepositBuild": {
    summary: "Build a deposit to the managed wallet",
    description: `Moves tokens from the signer's account to its connected managed wallet (409 when none is connected). ${build("transfers them")}`,
    caller: "The owner of the account.",
    chain: "Nothing until relayed; then the transfer executes."
  }
}
