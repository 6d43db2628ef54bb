/**
 * Starts the local ERC-4337 network and keeps it up until Ctrl-C or SIGTERM (which stop anvil
 * and Alto with it).
 *
 *   npm run devnet                    # prints the network's description as JSON
 *   npm run devnet -- --env           # prints the lines to paste before `npm start` (configured-network mode)
 *   npm run devnet -- --verbose       # anvil's and Alto's own logs on stderr
 *
 * `--env` gives every key of configured-network mode (docs/operations.md, "Configured-network
 * mode"), shell-quoted, plus `ANCHOR_PRIVATE_KEY`: anvil's public dev key #5, the account the
 * embedded network anchors with.
 */
import { NodeRuntime } from "@effect/platform-node"
import { Effect } from "effect"
import { configEnvOf, make, toJson } from "../src/chain/LocalNetwork.ts"

/** anvil's dev account #5 ("test test … junk"), public: the local network's anchoring account. */
const LOCAL_ANCHOR_KEY = "0x8b3a350cf5c34c9194ca85829a2df0ec3153be0318b5e2d3348e872092edffba"

const shellQuote = (value: string) => `'${value.replaceAll("'", `'\\''`)}'`

const envLines = (network: ReturnType<typeof toJson>): string =>
  Object.entries({ ...configEnvOf(network), ANCHOR_PRIVATE_KEY: LOCAL_ANCHOR_KEY })
    .map(([key, value]) => `export ${key}=${shellQuote(value)}`)
    .join("\n")

const program = Effect.gen(function*() {
  const started = Date.now()
  const network = toJson(yield* make({ verbose: process.argv.includes("--verbose") }))
  console.log(process.argv.includes("--env") ? envLines(network) : JSON.stringify(network, null, 2))
  console.error(`local network up in ${Date.now() - started} ms; Ctrl-C to stop`)
  return yield* Effect.never
}).pipe(Effect.scoped)

NodeRuntime.runMain(program)
