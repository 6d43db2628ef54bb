/**
 * A mandate on the MetaMask Delegation Framework: one delegation from the paying
 * account to the delegatee whose caveats let the chain enforce what it can of the
 * mandate. What the chain cannot express (the provider pin, the approve spender,
 * the per-job cap on the `budget` / `amount` arguments) is the service's own check
 * on every job build (`checkCreate`, `checkFund`). Mapping: docs/marketplace.md.
 */
import { BalanceChangeType, type Delegation, ROOT_AUTHORITY } from "@metamask/smart-accounts-kit"
import { createCaveatBuilder } from "@metamask/smart-accounts-kit/utils"
import type { Hex } from "viem"
import type { DelegationEnvironment } from "../chain/Network.ts"
import { type Mandate, selectors } from "./Mandate.ts"

export interface MandateDelegationTerms {
  /** Unix seconds; the TimestampEnforcer refuses redemptions at or after it. */
  readonly expiresAtSeconds: number
  readonly salt: Hex
}

/**
 * Caveats, in order:
 * - `AllowedTargets(ACP contract, payment token)` and `AllowedMethods(createJob,
 *   setBudgetWithPaymentToken, approve)`: nothing else can be called;
 * - `ValueLte(0)`: no native value;
 * - `ERC20BalanceChange(payment token, account, decrease ≤ cap)`: no redemption can take
 *   more than one job's cap of the payment token out of the account (the ERC-20 budget
 *   caveat: `ERC20TransferAmountEnforcer` only admits `transfer` calls, so it cannot sit
 *   on a delegation whose calls are `createJob` / `approve`);
 * - `Timestamp(before = expiry)`.
 */
export const mandateDelegation = (
  environment: DelegationEnvironment,
  m: Mandate,
  terms: MandateDelegationTerms
): Delegation => {
  const acp = m.deployment.contract
  const token = m.deployment.paymentToken.address
  const caveats = createCaveatBuilder(environment as never)
    .addCaveat("allowedTargets", { targets: [acp, token] })
    .addCaveat("allowedMethods", {
      selectors: [selectors.createJob, selectors.setBudgetWithPaymentToken, selectors.approve]
    })
    .addCaveat("valueLte", { maxValue: 0n })
    .addCaveat("erc20BalanceChange", {
      tokenAddress: token,
      recipient: m.account as Hex,
      balance: BigInt(m.perJobBudgetBaseUnits),
      changeType: BalanceChangeType.Decrease
    })
    .addCaveat("timestamp", { afterThreshold: 0, beforeThreshold: terms.expiresAtSeconds })
    .build()
  return {
    delegate: m.delegatee as Hex,
    delegator: m.account as Hex,
    authority: ROOT_AUTHORITY as Hex,
    caveats,
    salt: terms.salt,
    signature: "0x"
  }
}
