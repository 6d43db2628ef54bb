/**
 * Starts the local ERC-4337 network and prints its description as JSON; stops it on Ctrl-C.
 *   npx tsx scripts/devnet.ts [--verbose]
 */
import { NodeRuntime } from "@effect/platform-node"
import { Effect } from "effect"
import { make, toJson } from "../src/chain/LocalNetwork.ts"

const program = Effect.gen(function*() {
  const started = Date.now()
  const network = yield* make({ verbose: process.argv.includes("--verbose") })
  console.log(JSON.stringify(toJson(network), null, 2))
  console.error(`local network up in ${Date.now() - started} ms; Ctrl-C to stop`)
  return yield* Effect.never
}).pipe(Effect.scoped)

NodeRuntime.runMain(program)
