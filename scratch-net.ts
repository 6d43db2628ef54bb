import { Effect } from "effect"
import { createPublicClient, http } from "viem"
import { make } from "./src/chain/LocalNetwork.ts"
import { identityRegistryUpgradeableAbi } from "./src/chain/contracts/erc8004/IdentityRegistryUpgradeable.ts"
import { reputationRegistryUpgradeableAbi } from "./src/chain/contracts/erc8004/ReputationRegistryUpgradeable.ts"
const t0 = Date.now()
Effect.runPromise(Effect.scoped(Effect.gen(function*() {
  const net = yield* make({ chainId: 31390 })
  console.log("started in", Date.now() - t0, net.erc8004, net.delegation.caveatEnforcers.AgentIdentityEnforcer)
  const c = createPublicClient({ transport: http(net.rpcUrl) })
  console.log(yield* Effect.promise(() => c.readContract({ address: net.erc8004.identityRegistry, abi: identityRegistryUpgradeableAbi, functionName: "name" })))
  console.log(yield* Effect.promise(() => c.readContract({ address: net.erc8004.reputationRegistry, abi: reputationRegistryUpgradeableAbi, functionName: "getIdentityRegistry" })))
}))).then(() => process.exit(0), (e) => { console.error(e); process.exit(1) })
