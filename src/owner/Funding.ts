/**
 * `account_fund` (issue 27): funds come from outside, so nothing is signed or relayed; the
 * answer is the funding request a wallet or a person needs — the account's address, the chain
 * it is on, the token's contract there, what the account holds now (read from the chain) and an
 * ERC-681 payment request (`ethereum:` URI) for a wallet or a QR code.
 */
import { Effect } from "effect"
import { type Address, formatUnits, parseUnits } from "viem"
import type { Account } from "../accounts/Domain.ts"
import { BadRequest, ServiceUnavailable } from "../api/Errors.ts"
import type { ChainNetwork } from "../chain/Chains.ts"
import { networkTokens } from "../chain/Network.ts"
import type { FundingRequest, FundQuery } from "./Wire.ts"
import { quoteOutsideText } from "../domain/OutsideText.ts"

const bad = (field: string, message: string) => new BadRequest({ message: `${field}: ${message}`, details: { field } })

export const fundingRequest = Effect.fn("OwnerAccount.funding")(function*(net: ChainNetwork, account: Account, query: typeof FundQuery.Type) {
  const chainDown = (e: { readonly message: string }) =>
    new ServiceUnavailable({ message: `Chain ${net.chainId} cannot be read: ${e.message}`, details: { chainId: net.chainId } })
  const symbol = (query.token ?? "USDC").toUpperCase()
  const token = symbol === "ETH" ? undefined : networkTokens(net.network.tokens).find((t) => t.symbol.toUpperCase() === symbol)
  if (symbol !== "ETH" && token === undefined) {
    return yield* bad("token", `unknown token ${query.token} on chain ${net.chainId} (ETH, ${networkTokens(net.network.tokens).map((t) => t.symbol).join(", ")})`)
  }
  const decimals = token?.decimals ?? 18
  const units = query.amount === undefined ? undefined : (query.amount.split(".")[1]?.length ?? 0) > decimals ? null : parseUnits(query.amount, decimals)
  if (units === null) return yield* bad("amount", `at most ${decimals} decimals for ${symbol}`)
  if (units === 0n) return yield* bad("amount", "above 0")
  const address = account.address as Address
  const [deployed, held] = yield* Effect.all([
    net.chain.isDeployed(address),
    token === undefined ? net.chain.nativeBalance(address) : net.chain.erc20Balance(token.address, address)
  ], { concurrency: "unbounded" }).pipe(Effect.mapError(chainDown))
  // ERC-681: native value in wei; a token's `transfer(address,uint256)` on its contract.
  const paymentUri = token === undefined
    ? `ethereum:${address}@${net.chainId}${units === undefined ? "" : `?value=${units}`}`
    : `ethereum:${token.address}@${net.chainId}/transfer?address=${address}${units === undefined ? "" : `&uint256=${units}`}`
  const sym = token?.symbol ?? "ETH"
  return {
    intentType: "account_fund",
    accountId: account.id,
    address: address.toLowerCase(),
    chainId: net.chainId,
    chainName: net.name,
    deployed,
    token: { symbol: sym, address: token === undefined ? null : token.address.toLowerCase(), decimals },
    amount: units === undefined ? null : formatUnits(units, decimals),
    paymentUri,
    balance: formatUnits(held, decimals),
    humanSummary: `Send ${units === undefined ? "" : `${formatUnits(units, decimals)} `}${sym} to account ${quoteOutsideText(account.label)} at ${address}, on chain ${net.chainId} (${net.name}) only` +
      (token === undefined ? "" : ` (token contract ${token.address})`) +
      ". Funds sent on any other chain do not reach this account." + (deployed ? "" : " The account need not be deployed to receive.")
  } satisfies typeof FundingRequest.Type
})
