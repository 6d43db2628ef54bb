/**
 * Revert data in words (docs/relay.md, "Receipts"): `Error(string)` reasons (the caveat
 * enforcers' `ERC20TransferAmountEnforcer:allowance-exceeded`, ...), `Panic(uint256)`, and
 * the custom errors of the contracts the service talks to (DelegationManager, the
 * HybridDeleGator account, EntryPoint v0.7) by name with their arguments. Data nothing here
 * knows stays `custom error 0x<selector>`; callers keep the raw data beside the words.
 */
import { DelegationManager, HybridDeleGator } from "@metamask/delegation-abis"
import { type Abi, decodeErrorResult, type Hex } from "viem"
import { entryPoint07Abi } from "viem/account-abstraction"

const errorsOf = (abi: Abi) => abi.filter((item) => item.type === "error")

/** Every custom error we can name, once (the first definition of a selector wins). */
const KNOWN_ERRORS: Abi = [...errorsOf(DelegationManager as Abi), ...errorsOf(HybridDeleGator as Abi), ...errorsOf(entryPoint07Abi as Abi)]

const stringify = (v: unknown): string =>
  typeof v === "bigint" ? v.toString() : Array.isArray(v) ? `[${v.map(stringify).join(", ")}]` : String(v)

/** The reason `data` gives, in words; `undefined` for empty data. */
export const decodeRevert = (data: Hex): string | undefined => {
  if (data === "0x" || data.length < 10) return undefined
  for (const abi of [undefined, KNOWN_ERRORS]) {
    try {
      const decoded = abi === undefined ? decodeErrorResult({ data }) : decodeErrorResult({ abi, data })
      const args = (decoded.args ?? []) as ReadonlyArray<unknown>
      // Error(string) reads as its message alone; others as Name(args).
      if (decoded.errorName === "Error" && typeof args[0] === "string") return args[0]
      return args.length > 0 ? `${decoded.errorName}(${args.map(stringify).join(", ")})` : decoded.errorName
    } catch {
      // not this ABI
    }
  }
  return `custom error ${data.slice(0, 10)}`
}

/** Whether `text` is raw revert data (hex) rather than words. */
export const isRevertData = (text: string): text is Hex => /^0x[0-9a-fA-F]*$/.test(text) && text.length % 2 === 0
