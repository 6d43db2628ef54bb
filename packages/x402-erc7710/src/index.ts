/**
 * `@das/x402-erc7710`: x402 v2 payments under an ERC-7710 grant (the `exact` and `upto` schemes
 * with `extra.assetTransferMethod: "erc7710"`), for the stock `@x402/*` packages. See README.md.
 */
export type { AgentSigner, PaymentAuthorizer, PaymentRequest } from "./Authorizer.ts"
export { type ClientSchemeOptions, Erc7710ClientScheme } from "./ClientScheme.ts"
export * from "./Facilitator.ts"
export * from "./FacilitatorService.ts"
export * from "./PayingFetch.ts"
export * from "./PaymentDelegation.ts"
export { type ClientRegistration, registerErc7710Client, registerErc7710Server, type ServerRegistration } from "./Register.ts"
export * from "./Requirements.ts"
export { Erc7710ServerScheme } from "./ServerScheme.ts"
export * from "./ServiceAuthorizer.ts"
export * from "./Wire.ts"
export * from "./Channel.ts"
export * from "./ChannelMerchant.ts"
