/**
 * What the x402 scripts share: flags (`--name value`), the local network description that
 * `npm run devnet` prints (`npm run devnet > devnet.json`), and a clean stop on Ctrl-C.
 */
import { readFileSync } from "node:fs"
import { type Address, getAddress, type Hex, zeroAddress } from "viem"
import type { DelegationEnvironment, TokenInfo } from "../src/chain/Network.ts"
import type { LocalNetworkKeys } from "../src/payments/x402/world/LocalParties.ts"
import { privateKeyToAccount } from "viem/accounts"

export const flag = (name: string): string | undefined => {
  const i = process.argv.indexOf(`--${name}`)
  return i >= 0 ? process.argv[i + 1] : undefined
}

export const fail = (message: string): never => {
  console.error(message)
  process.exit(2)
}

interface DevnetJson {
  readonly chainId: number
  readonly rpcUrl: string
  readonly bundlerUrl: string
  readonly delegation: DelegationEnvironment
  readonly tokens: { readonly usd: TokenInfo; readonly usdt: TokenInfo }
  /** Absent from a description that gives no key (`GET /dev/networks`): nothing can be minted then. */
  readonly deployerKey?: Hex
}

/** The network of `--network <file>` (the JSON `npm run devnet` prints). */
export const networkFromFlag = (): LocalNetworkKeys => {
  const file = flag("network") ?? fail("--network <file> is required: the JSON `npm run devnet` prints (npm run devnet > devnet.json)")
  let json: DevnetJson
  try {
    json = JSON.parse(readFileSync(file, "utf8")) as DevnetJson
  } catch (e) {
    return fail(`--network ${file}: ${e instanceof Error ? e.message : String(e)}`)
  }
  if (typeof json.rpcUrl !== "string" || typeof json.chainId !== "number" || typeof json.delegation?.DelegationManager !== "string") {
    return fail(`--network ${file}: not the description \`npm run devnet\` prints`)
  }
  // The facilitator with --key needs no deployer; minting scripts do (they fail at the mint without one).
  return { ...json, deployer: json.deployerKey === undefined ? zeroAddress : privateKeyToAccount(json.deployerKey).address }
}

export const addressFlag = (name: string): Address | undefined => {
  const value = flag(name)
  if (value === undefined) return undefined
  try {
    return getAddress(value)
  } catch {
    return fail(`--${name} must be an address`)
  }
}

export const onStop = (stop: () => Promise<void>) => {
  const handler = () => {
    stop().then(() => process.exit(0), () => process.exit(1))
  }
  process.once("SIGINT", handler)
  process.once("SIGTERM", handler)
}
