import { Effect, Layer } from "effect"
import type { Address as ViemAddress } from "viem"
import { AccountStack } from "../chain/Accounts4337.ts"
import { Network } from "../chain/Network.ts"
import { AccountFactory } from "./AccountFactory.ts"

const chainNames: Readonly<Record<number, string>> = {
  1: "Ethereum",
  8453: "Base",
  84532: "Base Sepolia",
  11155111: "Sepolia",
  31337: "Local devnet"
}

export const chainNameOf = (chainId: number) => chainNames[chainId] ?? `Chain ${chainId}`

/** Account addresses from the account stack in use (HybridDeleGator: docs/onchain.md). */
export const AccountFactoryLive = Layer.effect(
  AccountFactory,
  Effect.gen(function*() {
    const stack = yield* AccountStack
    const network = yield* Network
    return AccountFactory.of({
      chainId: network.chainId,
      chainName: chainNameOf(network.chainId),
      accountType: "Smart account",
      counterfactualAddress: (owner, index) =>
        stack.counterfactualAccount(owner as ViemAddress, BigInt(index)).pipe(
          Effect.map((a) => a.address.toLowerCase()),
          // The derivation is local (CREATE2 over known addresses); a failure is a bug, not a user error.
          Effect.orDie
        )
    })
  })
)
