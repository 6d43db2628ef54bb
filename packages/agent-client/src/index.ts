/**
 * `@das/agent-client`: an agent's client of the delegated-authority service. See README.md.
 */
export { type ActionInput, AgentClient, type AgentClientOptions, type AgentSigner, callService, type ConnectOptions, type GrantLimits, limitsOf, signInWith } from "./AgentClient.ts"
export { ApiError, PollFailed } from "./errors.ts"
export { isTerminal, pollReceipt, type PollOptions } from "./poll.ts"
export { signInMessage } from "./signIn.ts"
export type * from "./wire.ts"
