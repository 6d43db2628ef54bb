/**
 * Where a signer's smart-account addresses come from: the counterfactual address
 * of the account stack's factory for (owner, index). The account stack lives
 * behind this one service (see docs/onchain.md).
 */
import { Context, type Effect } from "effect"
import type { Address } from "../domain/Primitives.ts"

export interface AccountFactoryShape {
  readonly chainId: number
  readonly chainName: string
  /** The account type shown to users, e.g. "Smart account". */
  readonly accountType: string
  readonly counterfactualAddress: (owner: Address, index: number) => Effect.Effect<Address>
}

export class AccountFactory extends Context.Service<AccountFactory, AccountFactoryShape>()(
  "das/accounts/AccountFactory"
) {}
