/**
 * What the standard's revocation types would rest on, on the run's local chain (no service): the
 * Delegation Framework's `ApprovalRevocationEnforcer`, deployed by the kit's environment here,
 * with its `erc20Approve` primitive (what `erc20-token-revocation` asks). A delegation the owner's
 * smart account signs with that caveat lets an EOA delegate, redeeming with the kit's own
 * `sendTransactionWithDelegation`, set an existing USDC approval back to 0; the chain refuses
 * anything else (a non-zero approve, a transfer). The enforcer alone, without the service; the
 * service's grants of these types, end to end: revocationGrant.test.ts.
 */
import { assert, it } from "@effect/vitest"
import { type Delegation, ROOT_AUTHORITY } from "@metamask/smart-accounts-kit"
import { createCaveatBuilder, encodeDelegations } from "@metamask/smart-accounts-kit/utils"
import { Effect } from "effect"
import { type Address, createWalletClient, encodeFunctionData, erc20Abi, http } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { randomSalt } from "../../src/delegations/Caveats.ts"
import { net, publicClient, smartAccount } from "../payments/x402/support.ts"
import { eoaAgent, erc20Transfer } from "./agent.ts"

const usdc = net.tokens.usd.address
const approve = (spender: Address, units: bigint) => encodeFunctionData({ abi: erc20Abi, functionName: "approve", args: [spender, units] })
const allowance = (owner: Address, spender: Address) =>
  Effect.promise(() => publicClient.readContract({ address: usdc, abi: erc20Abi, functionName: "allowance", args: [owner, spender] }))

it.live("an approval-revocation caveat lets the delegate set an approval back to 0 and nothing else", () =>
  Effect.gen(function*() {
    assert.isDefined(net.delegation.caveatEnforcers["ApprovalRevocationEnforcer"], "deployed in this deployment")
    const owner = yield* Effect.promise(() => smartAccount())
    const agent = yield* eoaAgent(generatePrivateKey())
    const spender = privateKeyToAccount(generatePrivateKey()).address
    // An approval the owner gave earlier (its own call, as the account: impersonated for the setup only).
    yield* Effect.promise(async () => {
      await publicClient.request({ method: "anvil_impersonateAccount" as never, params: [owner.address] as never })
      const wallet = createWalletClient({ transport: http(net.rpcUrl) })
      const hash = await wallet.sendTransaction({ account: owner.address, chain: null, to: usdc, data: approve(spender, 5_000_000n) })
      await publicClient.waitForTransactionReceipt({ hash })
      await publicClient.request({ method: "anvil_stopImpersonatingAccount" as never, params: [owner.address] as never })
    })
    assert.strictEqual(yield* allowance(owner.address, spender), 5_000_000n)

    const caveats = createCaveatBuilder(net.delegation as never)
      .addCaveat("approvalRevocation", {
        erc20Approve: true,
        erc721Approve: false,
        erc721SetApprovalForAll: false,
        permit2Approve: false,
        permit2Lockdown: false,
        permit2InvalidateNonces: false
      })
      .addCaveat("redeemer", { redeemers: [agent.address] })
      .build()
    const unsigned: Delegation = { delegate: agent.address, delegator: owner.address, authority: ROOT_AUTHORITY, caveats, salt: randomSalt() as never, signature: "0x" }
    const signature = yield* Effect.promise(() => owner.account.signDelegation({ delegation: unsigned }))
    const context = encodeDelegations([{ ...unsigned, signature }])

    // Anything but approve(spender, 0): refused by the chain, the allowance and balances unchanged.
    const raised = yield* Effect.promise(() => agent.redeem({ to: usdc, data: approve(spender, 1n) }, context))
    assert.isFalse(raised.ok, "a non-zero approve is refused")
    if (!raised.ok) assert.include(raised.raw, "ApprovalRevocationEnforcer")
    const moved = yield* Effect.promise(() => agent.redeem({ to: usdc, data: erc20Transfer(agent.address, 0n) }, context))
    assert.isFalse(moved.ok, "a transfer is refused")
    if (!moved.ok) assert.include(moved.raw, "ApprovalRevocationEnforcer")
    assert.strictEqual(yield* allowance(owner.address, spender), 5_000_000n)

    // The revocation itself: the approval is back to none.
    const revoked = yield* Effect.promise(() => agent.redeem({ to: usdc, data: approve(spender, 0n) }, context))
    assert.isTrue(revoked.ok, revoked.ok ? "" : revoked.raw.slice(0, 800))
    assert.strictEqual(yield* allowance(owner.address, spender), 0n)
  }), { timeout: 90_000 })
