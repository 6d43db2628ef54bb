import { Effect, Layer } from "effect"
import type { Address as ViemAddress } from "viem"
import { Chains } from "../chain/Chains.ts"
import { AccountFactory } from "./AccountFactory.ts"

/** Account addresses from each chain's account stack (HybridDeleGator: docs/onchain.md). */
export const AccountFactoryLive = Layer.effect(
  AccountFactory,
  Effect.gen(function*() {
    const chains = yield* Chains
    return AccountFactory.of({
      chains: chains.all.map((c) => ({ chainId: c.chainId, name: c.name })),
      accountType: "Smart account",
      counterfactualAddress: (chainId, owner, index) =>
        chains.get(chainId).pipe(
          Effect.flatMap((net) => net.accounts.counterfactualAccount(owner as ViemAddress, BigInt(index))),
          Effect.map((a) => a.address.toLowerCase()),
          // Only served chains reach here, and the derivation is local (CREATE2 over known addresses): a failure is a bug.
          Effect.orDie
        )
    })
  })
)
