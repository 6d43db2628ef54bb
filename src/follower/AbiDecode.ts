/**
 * Decoding calls and events by selectors computed once. viem's `decodeFunctionData` and
 * `decodeEventLog` find the ABI item by formatting and hashing the signature of every item of
 * the ABI on every call; the follower decodes every redemption's transaction, its operations
 * and its logs, so that hashing was most of its decoding (docs/performance.md, "Issue 46 item 4
 * (h48b)"). Same answers as viem's (test/delegations/redemptions.test.ts); `undefined` where
 * viem would throw for another function or event, a throw where it would for bad bytes.
 */
import {
  type Abi,
  type AbiEvent,
  type AbiFunction,
  decodeAbiParameters,
  type Hex,
  toEventSelector,
  toFunctionSelector
} from "viem"

export interface DecodedCall {
  readonly functionName: string
  readonly args: ReadonlyArray<unknown>
}

/** A decoder of calls to `abi`'s functions: the function by its selector, its arguments. */
export const callDecoder = (abi: Abi) => {
  const bySelector = new Map<string, AbiFunction>()
  for (const item of abi) if (item.type === "function") bySelector.set(toFunctionSelector(item), item)
  return (data: Hex): DecodedCall | undefined => {
    const item = bySelector.get(data.slice(0, 10).toLowerCase())
    if (item === undefined) return undefined
    const args = item.inputs.length === 0 ? [] : decodeAbiParameters(item.inputs, `0x${data.slice(10)}`)
    return { functionName: item.name, args }
  }
}

export interface DecodedEvent {
  readonly eventName: string
  /** By the input's name. */
  readonly args: Readonly<Record<string, unknown>>
}

/** A decoder of `abi`'s (non-anonymous) events: the event by its first topic, its arguments from the topics and the data. */
export const eventDecoder = (abi: Abi) => {
  const bySelector = new Map<string, AbiEvent>()
  for (const item of abi) if (item.type === "event" && item.anonymous !== true) bySelector.set(toEventSelector(item), item)
  return (log: { readonly topics: ReadonlyArray<Hex>; readonly data: Hex }): DecodedEvent | undefined => {
    const item = log.topics[0] === undefined ? undefined : bySelector.get(log.topics[0].toLowerCase())
    if (item === undefined) return undefined
    const indexed = item.inputs.filter((i) => i.indexed === true)
    const rest = item.inputs.filter((i) => i.indexed !== true)
    // The same log shape viem requires: one topic per indexed input (all of this service's are static types).
    if (log.topics.length !== indexed.length + 1) throw new Error(`${item.name}: ${log.topics.length - 1} indexed topics, expected ${indexed.length}`)
    const args: Record<string, unknown> = {}
    indexed.forEach((input, i) => {
      args[input.name!] = decodeAbiParameters([input], log.topics[i + 1]!)[0]
    })
    if (rest.length > 0) {
      const values = decodeAbiParameters(rest, log.data)
      rest.forEach((input, i) => {
        args[input.name!] = values[i]
      })
    }
    return { eventName: item.name, args }
  }
}
