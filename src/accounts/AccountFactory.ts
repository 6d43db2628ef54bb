/**
 * Where a signer's smart-account addresses come from: the counterfactual address of each
 * served chain's account-stack factory for (owner, index). The account stack lives behind
 * this one service (see docs/onchain.md).
 */
import { Context, type Effect } from "effect"
import type { Address } from "../domain/Primitives.ts"

export interface AccountFactoryShape {
  /** The chains accounts are made on, the primary first. */
  readonly chains: ReadonlyArray<{ readonly chainId: number; readonly name: string }>
  /** The account type shown to users, e.g. "Smart account". */
  readonly accountType: string
  readonly counterfactualAddress: (chainId: number, owner: Address, index: number) => Effect.Effect<Address>
}

export class AccountFactory extends Context.Service<AccountFactory, AccountFactoryShape>()(
  "das/accounts/AccountFactory"
) {}
