/**
 * Grants for the benchmarks, made the two ways the benchmarks need them:
 *   - `grantThroughService`: an owner and a delegate sign in to a running service, the owner
 *     builds a grant (`POST /delegations/build`), signs its enable operation and its delegation,
 *     and creates it; the grant is active and the owner's account holds USDC to move
 *     (bench/delegation-action.ts, bench/approvals.ts);
 *   - `chainGrants`: the same contracts without the service — deployed HybridDeleGators of fresh
 *     keys, the owner's signature of a delegation, approvals, and a redemption sent by the
 *     delegate's account itself (anvil impersonation) whose gasUsed is the figure
 *     (bench/delegation-gas.ts, bench/support/approval-gas.ts).
 */
import type { Delegation } from "@metamask/smart-accounts-kit"
import { Effect, Redacted } from "effect"
import { type Address, createPublicClient, createWalletClient, encodeFunctionData, erc20Abi, type Hex, http, parseEther, parseUnits } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { fromWire } from "../../src/builds/Wire.ts"
import { makeHybridDeleGator } from "../../src/chain/Accounts4337.ts"
import { type ApprovalSet, approvalTypedData, randomApprovalNonce } from "../../src/chain/Approvals.ts"
import { viemChainOf } from "../../src/chain/Chain.ts"
import { permitStablecoinAbi } from "../../src/chain/contracts/TokenPaymaster.ts"
import type { LocalNetworkDescription } from "../../src/chain/LocalNetwork.ts"
import { makeClient } from "../../src/client/Client.ts"
import { signIn } from "../../src/client/signIn.ts"
import { legTypedData, redeemCall } from "../../src/delegations/Caveats.ts"

/** The local network's clients: a reader, the deployer's wallet, the account stack. */
const clientsOf = (net: LocalNetworkDescription) => {
  const chain = viemChainOf(net)
  const transport = http(net.rpcUrl)
  return {
    chain,
    transport,
    client: createPublicClient({ chain, transport, pollingInterval: 20 }),
    deployer: createWalletClient({ chain, transport, account: privateKeyToAccount(Redacted.value(net.deployerKey)) }),
    stack: makeHybridDeleGator({ chainId: net.chainId, entryPoint: net.entryPoint, environment: net.delegation })
  }
}

/** USDC (6 decimals) base units. */
export const usdcUnits = (n: number) => parseUnits(String(n), 6)

/** Mints `amount` of the local network's stablecoin `token` to `to`, mined. */
const minter = (net: LocalNetworkDescription) => {
  const { client, deployer } = clientsOf(net)
  return async (token: Address, to: Address, amount: bigint) =>
    client.waitForTransactionReceipt({
      hash: await deployer.writeContract({ address: token, abi: permitStablecoinAbi, functionName: "mint", args: [to, amount] })
    })
}

/**
 * An active grant of USDC from a fresh owner to a fresh delegate (both smart accounts of the
 * service at `baseUrl`), with room for every action: a budget of 1,000,000 USDC, 1,000 per
 * action, a million actions, plus `approval` when given. The owner's account holds 1,000,000 USDC
 * (the bundler's estimate simulates each transfer). `ownerReady` runs with the owner's client
 * before the grant is built (a webhook to register, say).
 */
export const grantThroughService = async (options: {
  readonly baseUrl: string
  readonly net: LocalNetworkDescription
  readonly name: string
  readonly approval?: {
    readonly required: number
    readonly approvers: ReadonlyArray<Address>
    readonly thresholds: ReadonlyArray<{ readonly token: { readonly symbol: string }; readonly amount: number }>
  }
  readonly ownerReady?: (owner: Effect.Success<ReturnType<typeof makeClient>>) => Effect.Effect<unknown, unknown>
}) => {
  const { baseUrl, net } = options
  const { stack } = clientsOf(net)
  const ownerKey = generatePrivateKey()
  const granted = await Effect.runPromise(Effect.gen(function*() {
    const owner = yield* makeClient({ baseUrl, token: (yield* signIn(baseUrl, privateKeyToAccount(ownerKey))).token })
    const delegate = yield* makeClient({ baseUrl, token: (yield* signIn(baseUrl, privateKeyToAccount(generatePrivateKey()))).token })
    const [ownerAccount] = yield* owner.accounts.listAccounts()
    const [delegateAccount] = yield* delegate.accounts.listAccounts()
    if (options.ownerReady !== undefined) yield* options.ownerReady(owner)
    const build = yield* owner.delegations.build({
      payload: {
        name: options.name,
        kind: "agent",
        delegateeAddress: delegateAccount!.address,
        chainId: net.chainId,
        budgets: [{ token: { symbol: "USDC" }, amount: 1_000_000 }],
        perActionMax: { token: { symbol: "USDC" }, amount: 1_000 },
        maxActions: 1_000_000,
        ...(options.approval === undefined ? {} : { approval: { ...options.approval, approvers: [...options.approval.approvers], thresholds: [...options.approval.thresholds] } })
      }
    })
    const { signature: _s, ...unsigned } = fromWire(build.enableUserOp)
    const signature = yield* stack.signUserOperation(ownerKey, unsigned)
    const leg = build.delegations[0]!
    const legSignature = yield* Effect.promise(() =>
      privateKeyToAccount(ownerKey).signTypedData({ ...leg.typedData, message: { ...leg.typedData.message, salt: BigInt(leg.typedData.message.salt) } } as never)
    )
    const created = yield* owner.delegations.create({
      payload: {
        userOp: { ...build.enableUserOp, signature },
        userOpHash: build.userOpHash,
        intentType: "delegation_enable",
        delegationSignatures: [{ permissionId: leg.permissionId, signature: legSignature }]
      }
    })
    if (created.status !== "active") throw new Error(`the grant is ${created.status}`)
    return {
      owner,
      delegate,
      delegationId: created.id,
      ownerAddress: ownerAccount!.address as Address,
      delegateAddress: delegateAccount!.address as Address
    }
  }))
  await minter(net)(net.tokens.usd.address, granted.ownerAddress, usdcUnits(1_000_000))
  return granted
}

/**
 * The delegate's actions on a grant of `grantThroughService`, to `recipient`: 0.001, 0.002, …
 * USDC, a different amount each time, so none is answered from an open identical build.
 */
export const actionsOn = (grant: Awaited<ReturnType<typeof grantThroughService>>, recipient: Address) => {
  let k = 0
  return () =>
    Effect.runPromise(grant.delegate.delegations.act({
      params: { delegationId: grant.delegationId },
      payload: { recipient, amount: Number((0.001 * ++k).toFixed(3)) }
    }))
}

/** The grant's contracts without the service (see the header). */
export const chainGrants = (net: LocalNetworkDescription) => {
  const { chain, transport, client, deployer, stack } = clientsOf(net)
  const dm = net.delegation.DelegationManager

  /** A deployed HybridDeleGator of a fresh key (through its factory), with ETH. */
  const account = async () => {
    const key = generatePrivateKey()
    const cf = await Effect.runPromise(stack.counterfactualAccount(privateKeyToAccount(key).address, 0n))
    await client.waitForTransactionReceipt({ hash: await deployer.sendTransaction({ to: cf.factory, data: cf.factoryData }) })
    await client.request({ method: "anvil_setBalance" as never, params: [cf.address, `0x${parseEther("1").toString(16)}`] as never })
    return { key, address: cf.address }
  }
  /** The delegation signed by the delegator's owner key (EIP-712, domain: the DelegationManager). */
  const sign = async (key: Hex, d: Delegation): Promise<Delegation> => {
    const signature = await privateKeyToAccount(key).signTypedData(legTypedData(d, net.chainId, dm) as never)
    return { ...d, signature }
  }
  /** One redemption sent by the delegate's account itself (impersonated): its gasUsed. */
  const redeem = async (delegate: Address, signed: Delegation, token: Address, to: Address, amount: bigint): Promise<bigint> => {
    const call = redeemCall(dm, signed, { token, to, units: amount })
    await client.request({ method: "anvil_impersonateAccount" as never, params: [delegate] as never })
    const wallet = createWalletClient({ chain, transport, account: delegate })
    const hash = await wallet.sendTransaction({ to: call.to, data: call.data!, gas: 2_000_000n })
    const receipt = await client.waitForTransactionReceipt({ hash })
    if (receipt.status !== "success") throw new Error(`redemption reverted (${hash})`)
    return receipt.gasUsed
  }
  /**
   * Approvals (ApprovalEnforcer) of one ERC-20 transfer under the signed grant, by each signer's
   * key (a smart approver's is its owner key: ERC-1271).
   */
  const approvalsOf = async (
    signed: Delegation,
    transfer: { readonly token: Address; readonly to: Address; readonly amount: bigint },
    signers: ReadonlyArray<{ readonly key: Hex; readonly address: Address }>,
    deadline: bigint
  ): Promise<ApprovalSet> => {
    const nonce = randomApprovalNonce()
    const td = approvalTypedData({
      chainId: net.chainId,
      enforcer: net.delegation.caveatEnforcers["ApprovalEnforcer"]!,
      delegationHash: stack.permissionIdOf(signed),
      execution: {
        target: transfer.token,
        value: 0n,
        callData: encodeFunctionData({ abi: erc20Abi, functionName: "transfer", args: [transfer.to, transfer.amount] })
      },
      nonce,
      deadline
    })
    const approvals = await Promise.all(signers.map(async (s) => ({ approver: s.address, signature: await privateKeyToAccount(s.key).signTypedData(td) })))
    return { nonce, deadline, approvals }
  }
  return { account, mint: minter(net), sign, redeem, approvalsOf }
}
