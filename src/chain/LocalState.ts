/**
 * A local chain's state kept across restarts (`DATA_DIR/chains/<chainId>/`): anvil's own state
 * file (`anvil-state.json`, written on exit and every 5 s) and the network as deployed
 * (`network.json`: the contracts' addresses and the paymaster's signer key). A chain is kept
 * when both are there; the next start loads the state and checks that every contract is on it
 * before serving it (docs/chains.md, "State across restarts").
 */
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { Effect, Option } from "effect"
import { type Address, createPublicClient, type Hex, http } from "viem"
import { LocalNetworkError } from "./LocalProcesses.ts"
import type { LocalNetworkDescription, LocalNetworkJson } from "./LocalNetwork.ts"
import { fromJson } from "./LocalNetwork.ts"

export const stateFileOf = (stateDir: string) => path.join(stateDir, "anvil-state.json")
const networkFileOf = (stateDir: string) => path.join(stateDir, "network.json")

const exists = (p: string) => fs.access(p).then(() => true, () => false)

/** Whether a chain's state is kept under `stateDir` (both files present). */
export const isKept = (stateDir: string) =>
  Effect.promise(async () => (await exists(stateFileOf(stateDir))) && (await exists(networkFileOf(stateDir))))

/** The network kept under `stateDir`, if it is (its URLs are this start's, set by the caller). */
export const keptNetwork = (stateDir: string) =>
  Effect.gen(function*() {
    if (!(yield* isKept(stateDir))) return Option.none<LocalNetworkDescription>()
    const json = yield* Effect.tryPromise({
      try: async () => JSON.parse(await fs.readFile(networkFileOf(stateDir), "utf8")) as LocalNetworkJson,
      catch: (cause) =>
        new LocalNetworkError({ step: "kept state", message: `${networkFileOf(stateDir)} could not be read: ${String(cause)}`, cause })
    })
    return Option.some(fromJson(json))
  })

/** Records the network as deployed (written to a temporary file, then renamed: never half a file). */
export const saveNetwork = (stateDir: string, json: LocalNetworkJson) =>
  Effect.tryPromise({
    try: async () => {
      await fs.mkdir(stateDir, { recursive: true })
      const target = networkFileOf(stateDir)
      // The paymaster's signer key is in it: readable by this user only.
      await fs.writeFile(`${target}.tmp`, JSON.stringify(json, null, 2), { mode: 0o600 })
      await fs.rename(`${target}.tmp`, target)
    },
    catch: (cause) => new LocalNetworkError({ step: "kept state", message: `network.json: ${String(cause)}`, cause })
  })

const ZERO: Address = "0x0000000000000000000000000000000000000000"

/** Every contract address the network names. */
const addressesOf = (d: LocalNetworkDescription): ReadonlyArray<readonly [string, Address]> => [
  ["EntryPoint", d.entryPoint],
  ["DelegationManager", d.delegation.DelegationManager],
  ["SimpleFactory", d.delegation.SimpleFactory],
  ...Object.entries(d.delegation.implementations),
  ...Object.entries(d.delegation.caveatEnforcers),
  ["USDC", d.tokens.usd.address],
  ["USDT", d.tokens.usdt.address],
  ...(d.tokens.dai === undefined ? [] : [["DAI", d.tokens.dai.address] as const]),
  ["paymaster", d.paymaster.address],
  ["token paymaster", d.tokenPaymaster.address],
  ["agent commerce", d.marketplace.acp],
  ["Recovery", d.recovery.address],
  ["SpendGuard", d.spendGuard.address],
  // A state kept before the registries existed has none: the zero address then reads as missing code.
  ["ERC-8004 IdentityRegistry", d.erc8004?.identityRegistry ?? ZERO],
  ["ERC-8004 ReputationRegistry", d.erc8004?.reputationRegistry ?? ZERO]
].map(([name, address]) => [name, address as Address] as const)

/** Fails unless every contract of the kept network has code on the chain at `rpcUrl`. */
export const verifyKept = (rpcUrl: string, kept: LocalNetworkDescription) =>
  Effect.tryPromise({
    try: async () => {
      const client = createPublicClient({ transport: http(rpcUrl) })
      const chainId = await client.getChainId()
      if (chainId !== kept.chainId) throw new Error(`the kept state is of chain ${chainId}, not ${kept.chainId}`)
      const missing: Array<string> = []
      for (const [name, address] of addressesOf(kept)) {
        const code: Hex | undefined = await client.getCode({ address })
        if (code === undefined || code === "0x") missing.push(`${name} (${address})`)
      }
      if (missing.length > 0) throw new Error(`no code at ${missing.join(", ")}`)
    },
    catch: (cause) =>
      new LocalNetworkError({
        step: "kept state",
        message: `chain ${kept.chainId}: the kept state does not hold the network it recorded: ` +
          `${cause instanceof Error ? cause.message : String(cause)}; LOCAL_CHAIN_STATE=fresh starts the local chains afresh`,
        cause
      })
  })
