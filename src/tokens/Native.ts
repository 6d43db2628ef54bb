/**
 * The chain's native coin as a budget token. It has no contract, so budgets name it by the
 * address ERC-7528 reserves for it; a grant over it is held by the native enforcers (Grant.ts)
 * and an action sends it as the call's value, with no call data.
 */
import type { Token } from "./TokenRegistry.ts"

/** ERC-7528: the address that stands for the native asset. */
export const NATIVE_ADDRESS = "0xeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee"
export const NATIVE_SYMBOL = "ETH"

export const nativeToken = (chainId: number): Token => ({
  chainId,
  symbol: NATIVE_SYMBOL,
  name: "Ether",
  address: NATIVE_ADDRESS,
  decimals: 18
})

export const isNative = (address: string | undefined) => address?.toLowerCase() === NATIVE_ADDRESS
export const isNativeSymbol = (symbol: string) => symbol.toUpperCase() === NATIVE_SYMBOL
