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
import type { Delegation } from "@metamask/smart-accounts-kit"
import { Effect, Redacted } from "effect"
import { type Address, createPublicClient, createWalletClient, encodeFunctionData, erc20Abi, type Hex, http, parseEther, parseUnits } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { makeHybridDeleGator } from "../../src/chain/Accounts4337.ts"
import { type ApprovalSet, approvalTypedData, randomApprovalNonce } from "../../src/chain/Approvals.ts"
import { viemChainOf } from "../../src/chain/Chain.ts"
import { permitStablecoinAbi } from "../../src/chain/contracts/TokenPaymaster.ts"
import type { LocalNetworkDescription } from "../../src/chain/LocalNetwork.ts"
import { legTypedData, randomSalt, redeemCall } from "../../src/delegations/Caveats.ts"
import { makeGrant, redeemArgs } from "../../src/delegations/Grant.ts"

export interface GasRow {
  readonly shape: string
  /** gasUsed of each redemption, in order (the first writes fresh enforcer storage). */
  readonly gas: ReadonlyArray<bigint>
}

export const approvalGas = async (net: LocalNetworkDescription, rounds = 2): Promise<ReadonlyArray<GasRow>> => {
  const chain = viemChainOf(net)
  const transport = http(net.rpcUrl)
  const client = createPublicClient({ chain, transport, pollingInterval: 20 })
  const deployer = createWalletClient({ chain, transport, account: privateKeyToAccount(Redacted.value(net.deployerKey)) })
  const stack = makeHybridDeleGator({ chainId: net.chainId, entryPoint: net.entryPoint, environment: net.delegation })
  const dm = net.delegation.DelegationManager
  const usdc = net.tokens.usd.address
  const enforcer = net.delegation.caveatEnforcers["ApprovalEnforcer"]!
  const units = (n: number) => parseUnits(String(n), 6)
  const expires = Math.floor(Date.now() / 1000) + 3600

  /** A deployed HybridDeleGator of a fresh key (through its factory), with ETH. */
  const account = async () => {
    const key = generatePrivateKey()
    const cf = await Effect.runPromise(stack.counterfactualAccount(privateKeyToAccount(key).address, 0n))
    await client.waitForTransactionReceipt({ hash: await deployer.sendTransaction({ to: cf.factory, data: cf.factoryData }) })
    await client.request({ method: "anvil_setBalance" as never, params: [cf.address, `0x${parseEther("1").toString(16)}`] as never })
    return { key, address: cf.address }
  }
  const redeem = async (delegate: Address, signed: Delegation, to: Address, amount: bigint): Promise<bigint> => {
    const call = redeemCall(dm, signed, { token: usdc, to, units: amount })
    await client.request({ method: "anvil_impersonateAccount" as never, params: [delegate] as never })
    const wallet = createWalletClient({ chain, transport, account: delegate })
    const hash = await wallet.sendTransaction({ to: call.to, data: call.data!, gas: 2_000_000n })
    const receipt = await client.waitForTransactionReceipt({ hash })
    if (receipt.status !== "success") throw new Error(`redemption reverted (${hash})`)
    return receipt.gasUsed
  }

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
    await client.waitForTransactionReceipt({
      hash: await deployer.writeContract({ address: usdc, abi: permitStablecoinAbi, functionName: "mint", args: [owner.address, units(1000)] })
    })
    const made = makeGrant(net.delegation, {
      delegator: owner.address, delegate: delegate.address,
      budgets: [{ token: usdc, units: units(500), perActionUnits: units(10) }],
      targets: [usdc], recipients: [to], maxActions: 100,
      startSeconds: Math.floor(Date.now() / 1000) - 60, expiresAtSeconds: expires, salt: randomSalt(),
      ...(s.required === undefined ? {} : { approval: { required: s.required, approvers, thresholds: [{ token: usdc, units: units(5) }] } })
    })
    if (made._tag !== "Ok") throw new Error(made.message)
    const signature = await privateKeyToAccount(owner.key).signTypedData(legTypedData(made.delegation, net.chainId, dm) as never)
    const signed: Delegation = { ...made.delegation, signature }
    const hash = stack.permissionIdOf(signed)
    const amount = units(s.amount)
    const approvalsOf = async (n: number): Promise<ApprovalSet> => {
      const nonce = randomApprovalNonce()
      const deadline = BigInt(expires)
      const td = approvalTypedData({
        chainId: net.chainId, enforcer, delegationHash: hash,
        execution: { target: usdc, value: 0n, callData: encodeFunctionData({ abi: erc20Abi, functionName: "transfer", args: [to, amount] }) },
        nonce, deadline
      })
      const approvals = await Promise.all(approverKeys.slice(0, n).map(async (k, i) => ({
        approver: approvers[i]!,
        signature: await privateKeyToAccount(k).signTypedData(td) as Hex
      })))
      return { nonce, deadline, approvals }
    }
    const gas: Array<bigint> = []
    for (let i = 0; i < rounds; i++) {
      const approvals = s.signers === undefined || s.signers === 0 ? undefined : await approvalsOf(s.signers)
      const args = redeemArgs(net.delegation, signed, made.scope, { token: usdc, to, ...(approvals === undefined ? {} : { approvals }) })!
      gas.push(await redeem(delegate.address, args, to, amount))
    }
    rows.push({ shape: s.shape, gas })
  }
  return rows
}
