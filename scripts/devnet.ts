/**
 * Starts local ERC-4337 networks and keeps them up until Ctrl-C or SIGTERM (which stop anvil
 * and Alto with them).
 *
 *   npm run devnet                    # one network (chain 31337); prints its description as JSON
 *   npm run devnet -- --env           # every local chain (LOCAL_CHAIN_IDS, default 31337,31338);
 *                                     # prints the lines to paste before `npm start` (configured-network mode)
 *   npm run devnet -- --verbose       # anvil's and Alto's own logs on stderr
 *
 * `--env` gives every key of configured-network mode (docs/operations.md, "Configured-network
 * mode"), shell-quoted: `CHAINS` (the JSON list of the networks), and per chain
 * `CHAIN_<id>_PAYMASTER_SIGNER_KEY` and `CHAIN_<id>_ANCHOR_PRIVATE_KEY` (anvil's public dev
 * key #5, the account a local network anchors with).
 */
import { NodeRuntime } from "@effect/platform-node"
import { Effect, Logger } from "effect"
import { LocalChainIds } from "../src/App.ts"
import { configEnvOf, type LocalNetworkJson, make, startAll, toJson } from "../src/chain/LocalNetwork.ts"

/** anvil's dev account #5 ("test test … junk"), public: the local network's anchoring account. */
const LOCAL_ANCHOR_KEY = "0x8b3a350cf5c34c9194ca85829a2df0ec3153be0318b5e2d3348e872092edffba"

const shellQuote = (value: string) => `'${value.replaceAll("'", `'\\''`)}'`

export const envLines = (networks: ReadonlyArray<LocalNetworkJson>): string =>
  Object.entries({
    ...configEnvOf(networks),
    ...Object.fromEntries(networks.map((n) => [`CHAIN_${n.chainId}_ANCHOR_PRIVATE_KEY`, LOCAL_ANCHOR_KEY]))
  })
    .map(([key, value]) => `export ${key}=${shellQuote(value)}`)
    .join("\n")

const program = Effect.gen(function*() {
  const started = Date.now()
  const verbose = process.argv.includes("--verbose")
  if (process.argv.includes("--env")) {
    const networks = yield* startAll(yield* LocalChainIds, { verbose })
    console.log(envLines(networks.map(toJson)))
  } else {
    console.log(JSON.stringify(toJson(yield* make({ verbose })), null, 2))
  }
  console.error(`local network up in ${Date.now() - started} ms; Ctrl-C to stop`)
  return yield* Effect.never
}).pipe(Effect.scoped)

// Standard output carries only the description (`npm run -s devnet -- --env > devnet.env`): the
// start's own lines (a child's readiness progress) go to standard error.
NodeRuntime.runMain(program.pipe(Effect.provide(Logger.layer([Logger.withConsoleError(Logger.formatSimple)]))))
