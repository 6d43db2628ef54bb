/**
 * Gas of one delegated action with the approval caveat (issue 25, "Measures"), beside the same
 * grant without it: the delegate's `DelegationManager.redeemDelegations` moving one USDC
 * transfer out of the owner's HybridDeleGator, the grant of `src/delegations/Grant.ts` (1 token,
 * 1 recipient) with or without an approval rule (ApprovalEnforcer, threshold 5 USDC):
 *   - without the rule, 6 USDC;
 *   - with it, at or below the threshold (1 USDC: no signature checked);
 *   - above it (6 USDC), a 1-of-3 rule with its 1 ECDSA approval;
 *   - above it, a 2-of-3 rule with its 2 ECDSA approvals.
 * (One approval of a 2-of-3 rule is no action: the chain refuses it, `ApprovalEnforcer:not-enough-approvals`.)
 * A fresh grant per shape, each redeemed `rounds` times: the first action writes fresh enforcer
 * storage, the next ones update it. Measured as the transaction's gasUsed with the delegate's
 * smart account as sender (anvil impersonation), so the EntryPoint and bundler overheads, equal
 * for every shape, are left out. Used by bench/approvals.ts and its smoke test.
 */
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import type { LocalNetworkDescription } from "../../src/chain/LocalNetwork.ts"
import { randomSalt } from "../../src/delegations/Caveats.ts"
import { makeGrant, redeemArgs } from "../../src/delegations/Grant.ts"
import { chainGrants, usdcUnits as units } from "./grants.ts"

export interface GasRow {
  readonly shape: string
  /** gasUsed of each redemption, in order (the first writes fresh enforcer storage). */
  readonly gas: ReadonlyArray<bigint>
}

export const approvalGas = async (net: LocalNetworkDescription, rounds = 2): Promise<ReadonlyArray<GasRow>> => {
  const { account, mint, sign, redeem, approvalsOf } = chainGrants(net)
  const usdc = net.tokens.usd.address
  const expires = Math.floor(Date.now() / 1000) + 3600

  const approverKeys = [generatePrivateKey(), generatePrivateKey(), generatePrivateKey()]
  const approvers = approverKeys.map((k) => privateKeyToAccount(k).address)
  const shapes: ReadonlyArray<{ shape: string; amount: number; required?: number; signers?: number }> = [
    { shape: "no approval rule, 6 USDC", amount: 6 },
    { shape: "approval rule, at or below the threshold (1 USDC)", amount: 1, required: 2, signers: 0 },
    { shape: "approval rule, above (6 USDC): 1 of 3, 1 approval", amount: 6, required: 1, signers: 1 },
    { shape: "approval rule, above (6 USDC): 2 of 3, 2 approvals", amount: 6, required: 2, signers: 2 }
  ]
  const rows: Array<GasRow> = []
  for (const s of shapes) {
    const owner = await account()
    const delegate = await account()
    // A fresh recipient per shape: every first action writes a fresh balance, every next one updates it.
    const to = privateKeyToAccount(generatePrivateKey()).address
    await mint(usdc, owner.address, units(1000))
    const made = makeGrant(net.delegation, {
      delegator: owner.address, delegate: delegate.address,
      budgets: [{ token: usdc, units: units(500), perActionUnits: units(10) }],
      targets: [usdc], recipients: [to], maxActions: 100,
      startSeconds: Math.floor(Date.now() / 1000) - 60, expiresAtSeconds: expires, salt: randomSalt(),
      ...(s.required === undefined ? {} : { approval: { required: s.required, approvers, thresholds: [{ token: usdc, units: units(5) }] } })
    })
    if (made._tag !== "Ok") throw new Error(made.message)
    const signed = await sign(owner.key, made.delegation)
    const amount = units(s.amount)
    const signers = approverKeys.map((key, i) => ({ key, address: approvers[i]! }))
    const gas: Array<bigint> = []
    for (let i = 0; i < rounds; i++) {
      const approvals = s.signers === undefined || s.signers === 0
        ? undefined
        : await approvalsOf(signed, { token: usdc, to, amount }, signers.slice(0, s.signers), BigInt(expires))
      const args = redeemArgs(net.delegation, signed, made.scope, { token: usdc, to, ...(approvals === undefined ? {} : { approvals }) })!
      gas.push(await redeem(delegate.address, args, usdc, to, amount))
    }
    rows.push({ shape: s.shape, gas })
  }
  return rows
}
