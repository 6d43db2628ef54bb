/**
 * Loopback stand-ins for the public marketplace and launchpad APIs, answering in
 * their own formats with sample data (the same servers the tests use). For
 * exploring those endpoints on a machine with no internet:
 *
 *   npm run sample-upstreams            # prints the environment to start the service with
 *   # in another terminal, with those variables set:
 *   npm start
 *
 * The service itself never fabricates results; these are upstreams, not mocks inside it.
 */
import { startFakeUpstream as startLaunchpad } from "../test/launchpad/FakeUpstream.ts"
import { agentFixture, startFakeUpstream as startMarketplace } from "../test/marketplace/FakeUpstream.ts"

const launchpad = await startLaunchpad()
const marketplace = await startMarketplace()
marketplace.state.agents = Array.from({ length: 60 }, (_, i) => agentFixture(i + 1, 250_000 - i * 3_700 + (i % 5) * 911))

console.log("Sample upstreams are listening. Start the service with:\n")
console.log(`  export LAUNCHPAD_API_URL=${launchpad.url}`)
console.log(`  export LAUNCHPAD_PRICES_URL=${launchpad.url}`)
console.log(`  export MARKETPLACE_API_URL=${marketplace.url}`)
console.log("  npm start\n")
console.log("Ctrl-C stops them.")

const stop = async () => {
  await Promise.all([launchpad.close(), marketplace.close()])
  process.exit(0)
}
process.on("SIGINT", stop)
process.on("SIGTERM", stop)
