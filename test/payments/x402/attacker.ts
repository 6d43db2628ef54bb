/**
 * A hostile holder of an x402 payment, working straight against the chain: it signs payment
 * delegations the client would never sign (any terms, any recipient, the grant's caveat
 * args of its choice), and sends `redeemDelegations` itself from a key it holds (the
 * facilitator's, or anyone's), with a fixed gas limit so that a refused redemption is mined
 * as a reverted transaction. Nothing here goes through the client's checks or the
 * facilitator's verify.
 */
import { assert } from "@effect/vitest"
import type { Caveat } from "@metamask/smart-accounts-kit"
import { type Address, createWalletClient, type Hex, http } from "viem"
import { privateKeyToAccount } from "viem/accounts"
import { randomSalt } from "../../../src/delegations/Caveats.ts"
import { legTypedData } from "../../../src/delegations/Caveats.ts"
import { periodArgs, redeemArgs } from "../../../src/delegations/Grant.ts"
import type { GrantContext } from "../../../src/payments/x402/Authorizer.ts"
import { type AgentSigner, type Erc7710Payload, type Execution, makePaymentDelegation, type PaymentTerms, permissionContextOf, redeemCallData, revertReasonOf } from "@das/x402-erc7710"
import { balanceOf, chain, net, publicClient } from "./support.ts"

/** The time of the chain's next block, unix seconds: its latest block's, or the wall clock when the (automining) chain is idle. */
export const chainNow = async () =>
  Math.max(Number((await publicClient.getBlock({ blockTag: "latest" })).timestamp), Math.floor(Date.now() / 1000))

/**
 * A payment delegation signed by `agent` for exactly `terms`, to `facilitator`, under the
 * grant; the grant's caveat args pick the token's budget entry (or entry 0 when the terms
 * are outside the grant's scope: the chain decides).
 */
export const signPayment = async (
  context: GrantContext,
  agent: AgentSigner,
  terms: PaymentTerms,
  facilitator: Address,
  /** Replace the leaf's caveats (a payment the client would never sign). */
  caveats?: ReadonlyArray<Caveat>
): Promise<Erc7710Payload> => {
  const parent = redeemArgs(context.environment, context.grant, context.scope, { token: terms.asset, to: terms.payTo }) ?? {
    ...context.grant,
    caveats: context.grant.caveats.map((c) =>
      c.enforcer.toLowerCase() === context.environment.caveatEnforcers["MultiTokenPeriodEnforcer"]!.toLowerCase() ? { ...c, args: periodArgs(0) } : c
    )
  }
  const made = makePaymentDelegation(context.environment, { parent: context.grant, facilitator, terms, salt: randomSalt() })
  const leaf = caveats === undefined ? made : { ...made, caveats: [...caveats] }
  const signature = await agent.signTypedData(
    legTypedData(leaf, context.chainId, context.environment.DelegationManager) as unknown as Parameters<AgentSigner["signTypedData"]>[0]
  )
  return {
    delegationManager: context.environment.DelegationManager,
    delegator: context.grant.delegator,
    permissionContext: permissionContextOf([{ ...leaf, signature }, parent])
  }
}

export interface Attempt {
  /** The revert reason of the same call on the next block (eth_call, "pending"), or "ok". */
  readonly reason: string
  readonly status: "success" | "reverted"
  readonly hash: Hex
}

/** `redeemDelegations([permissionContext], [single], [execution])` sent by `key`'s EOA, mined whatever happens. */
export const redeemDirect = async (key: Hex, permissionContext: Hex, execution: Execution): Promise<Attempt> => {
  const account = privateKeyToAccount(key)
  const data = redeemCallData(permissionContext, execution)
  let reason = "ok"
  try {
    await publicClient.call({ account, to: net.delegation.DelegationManager, data, blockTag: "pending" })
  } catch (e) {
    reason = revertReasonOf(e)
  }
  const wallet = createWalletClient({ chain, transport: http(net.rpcUrl), account })
  const hash = await wallet.sendTransaction({ to: net.delegation.DelegationManager, data, gas: 1_500_000n })
  const receipt = await publicClient.waitForTransactionReceipt({ hash })
  return { reason, status: receipt.status, hash }
}

export interface Watch {
  readonly tokens: ReadonlyArray<Address>
  readonly holders: ReadonlyArray<Address>
}

export const balances = (watch: Watch) =>
  Promise.all(watch.tokens.flatMap((token) => watch.holders.map((holder) => balanceOf(token, holder))))

/** The attempt is mined and reverts with `expected` in its reason; no watched balance moves. */
export const refusedOnChain = async (watch: Watch, key: Hex, permissionContext: Hex, execution: Execution, expected: string) => {
  const before = await balances(watch)
  const attempt = await redeemDirect(key, permissionContext, execution)
  assert.strictEqual(attempt.status, "reverted", `mined and reverted (${expected})`)
  assert.include(attempt.reason, expected)
  assert.deepStrictEqual(await balances(watch), before, `nothing moves (${expected})`)
}

/** The attempt is mined and succeeds. */
export const acceptedOnChain = async (key: Hex, permissionContext: Hex, execution: Execution) => {
  const attempt = await redeemDirect(key, permissionContext, execution)
  assert.strictEqual(attempt.status, "success", attempt.reason)
  return attempt
}
