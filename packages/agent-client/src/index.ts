/**
 * `@das/agent-client`: an agent's client of the delegated-authority service. See README.md.
 */
export { type ActionInput, AgentClient, type AgentClientOptions, type AgentSigner, callService, type ConnectOptions, type GrantLimits, limitsOf, signInWith } from "./AgentClient.ts"
export { ApiError, PollFailed } from "./errors.ts"
export { isTerminal, pollReceipt, type PollOptions } from "./poll.ts"
export { signInMessage } from "./signIn.ts"
export type * from "./wire.ts"
// The x402 side (ERC-7710 method), for stock @x402/fetch and typed refusals; and the ERC-7710
// helpers of a payment delegation (build, encode, decode a permission context, the redemption's call data).
export {
  decodeChain,
  makePaymentDelegation,
  type PaidRequestInit,
  type PayableAsset,
  type PayerScope,
  type PayingFetch,
  type PaymentAuthorizer,
  PaymentRefused,
  permissionContextOf,
  redeemCallData,
  registerErc7710Client,
  serviceAuthorizer,
  settlementOf,
  transferExecution
} from "@das/x402-erc7710"
