/**
 * A dApp and its agent, as they would work with MetaMask's smart-accounts-kit and viem only: the
 * dApp's ERC-7715 request as the kit puts it on the wire (`erc7715ProviderActions`), turned into a
 * grant the owner signs and enables through the service (the mapping of src/permissions, the
 * build and create endpoints, the owner's signatures), and the agent redeeming the permission
 * context it is given: a smart account sending a user operation (`erc7710BundlerActions`) or an EOA
 * sending a plain transaction (`erc7710WalletActions().sendTransactionWithDelegation`).
 */
import { assert } from "@effect/vitest"
import { Implementation, toMetaMaskSmartAccount } from "@metamask/smart-accounts-kit"
import {
  erc7710BundlerActions,
  erc7710WalletActions,
  erc7715ProviderActions,
  type RequestExecutionPermissionsParameters
} from "@metamask/smart-accounts-kit/actions"
import { overrideDeployedEnvironment } from "@metamask/smart-accounts-kit/utils"
import { Effect } from "effect"
import {
  type Address,
  createClient,
  createPublicClient,
  createWalletClient,
  custom,
  encodeFunctionData,
  erc20Abi,
  type Hex,
  http,
  pad,
  parseEther,
  type TransactionReceipt
} from "viem"
import { createBundlerClient } from "viem/account-abstraction"
import { privateKeyToAccount } from "viem/accounts"
import { viemChainOf } from "../../src/chain/Chain.ts"
import { Network } from "../../src/chain/Network.ts"
import type { Delegation } from "../../src/delegations/Caveats.ts"
import { standingGrant } from "../../src/delegations/Grant.ts"
import { redeemedContexts } from "../../src/follower/RedemptionChains.ts"
import { mapRequest, type MappingContext } from "../../src/permissions/Erc7715.ts"
import { type MappedResponse, permissionResponse } from "../../src/permissions/Response.ts"
import { supportedPermissions } from "../../src/permissions/Supported.ts"
import { TokenRegistry } from "../../src/tokens/TokenRegistry.ts"
import { reasonIn } from "../delegations/attacker.ts"
import { type Session, signLeg, signOp } from "../delegations/helpers.ts"
import { testNetwork } from "../support/TestChain.ts"

process.env.DO_NOT_TRACK = "1"

/** What the kit's `requestExecutionPermissions` sends (a client whose transport records the call). */
export const kitWire = async (parameters: RequestExecutionPermissionsParameters): Promise<ReadonlyArray<unknown>> => {
  let sent: ReadonlyArray<unknown> = []
  const client = createClient({
    transport: custom({
      request: async ({ params }: { method: string; params: ReadonlyArray<unknown> }) => {
        sent = params
        return []
      }
    })
  }).extend(erc7715ProviderActions())
  await client.requestExecutionPermissions(parameters)
  return sent
}

/** The mapping's view of the running deployment. */
export const mappingContext = (owner: Session) =>
  Effect.gen(function*() {
    const net = yield* Network
    const tokens = TokenRegistry.make([net.tokens.usd, net.tokens.usdt].map((t) => ({ chainId: net.chainId, ...t })))
    return {
      chainIds: [net.chainId],
      supported: supportedPermissions([{ chainId: net.chainId, delegation: net.delegation }]),
      now: new Date(),
      tokenOf: (chainId: number, address: string) => tokens.byAddress(chainId, address),
      knownTokens: (chainId: number) => tokens.all.filter((t) => t.chainId === chainId),
      account: owner.account.address,
      minLifetimeMs: 1000
    } satisfies MappingContext
  })

export interface Granted {
  readonly id: string
  readonly permissionId: Hex
  readonly response: MappedResponse
  readonly signed: Delegation
  readonly summary: string
}

/** The dApp asks (the kit's wire), the service maps and builds, the owner signs and enables: the standard response. */
export const grant7715 = (owner: Session, request: RequestExecutionPermissionsParameters[number]) =>
  Effect.gen(function*() {
    const net = yield* Network
    const [wire] = yield* Effect.promise(() => kitWire([request]))
    const mapped = mapRequest(wire, yield* mappingContext(owner))
    if (mapped._tag !== "Ok") return yield* Effect.die(new Error(`${mapped.field}: ${mapped.message}`))
    const build = yield* owner.api.delegations.build({ payload: mapped.input as never })
    const leg = build.delegations[0]!
    const signature = yield* signLeg(owner.key, leg.typedData)
    const created = yield* owner.api.delegations.create({
      payload: {
        userOp: yield* signOp(owner.key, build.enableUserOp),
        userOpHash: build.userOpHash,
        intentType: "delegation_enable",
        delegationSignatures: [{ permissionId: leg.permissionId, signature }]
      }
    })
    assert.strictEqual(created.status, "active")
    const signed = yield* standingOf(build, signature)
    const response = permissionResponse(mapped.granted, {
      signedGrant: signed,
      delegationManager: net.delegation.DelegationManager,
      account: owner.account.address as Hex
    })
    return { id: created.id, permissionId: leg.permissionId.toLowerCase() as Hex, response, signed, summary: build.humanSummary } satisfies Granted
  })

/** The signed grant of a build with the caveat args every redemption uses (what a permission context carries). */
export const standingOf = (
  build: { readonly delegations: ReadonlyArray<{ readonly delegation: unknown; readonly tokens?: ReadonlyArray<{ readonly address?: string }> }>; readonly policySet: { readonly recipientAllowlist: ReadonlyArray<{ readonly address: string }> } },
  signature: Hex
) =>
  Effect.gen(function*() {
    const net = yield* Network
    const leg = build.delegations[0]!
    const signed = { ...(leg.delegation as Delegation), signature }
    const scope = {
      tokens: (leg.tokens ?? []).map((t) => t.address as Address),
      recipients: build.policySet.recipientAllowlist.map((r) => r.address as Address)
    }
    const standing = standingGrant(net.delegation, signed, scope)
    if (standing === undefined) return yield* Effect.die(new Error("this grant's redemptions need args per redemption"))
    return standing
  })

export type Outcome = { readonly ok: true; readonly receipt: TransactionReceipt } | { readonly ok: false; readonly reason: string; readonly raw: string }

const failed = (e: unknown): Outcome => {
  const raw = `${e instanceof Error ? e.message : String(e)} ${JSON.stringify((e as { cause?: unknown }).cause ?? "", (_, v) => typeof v === "bigint" ? v.toString() : v)}`
  return { ok: false, reason: reasonIn(raw) ?? "unknown", raw }
}

const clients = () => {
  const net = testNetwork()
  // The kit checks the DelegationManager against its own table of deployments: the local one is this.
  overrideDeployedEnvironment(net.chainId, "1.3.0", net.delegation as never)
  const chain = viemChainOf(net)
  const publicClient = createPublicClient({ chain, transport: http(net.rpcUrl), pollingInterval: 50 })
  const fund = (address: Address, eth = "10") =>
    publicClient.request({ method: "anvil_setBalance" as never, params: [address, `0x${parseEther(eth).toString(16)}`] as never })
  return { net, chain, publicClient, fund }
}

export const erc20Transfer = (to: Address, units: bigint) => encodeFunctionData({ abi: erc20Abi, functionName: "transfer", args: [to, units] })

/** An agent whose smart account (the kit's, the same address as the service's account of this key) redeems with user operations. */
export const smartAgent = (key: Hex) =>
  Effect.promise(async () => {
    const { net, publicClient, fund } = clients()
    const signer = privateKeyToAccount(key)
    const account = await toMetaMaskSmartAccount({
      client: publicClient as never,
      implementation: Implementation.Hybrid,
      deployParams: [signer.address, [], [], []],
      deploySalt: pad("0x00", { size: 32 }),
      signer: { account: signer },
      environment: net.delegation as never
    })
    await fund(account.address)
    const bundler = createBundlerClient({ client: publicClient, transport: http(net.bundlerUrl), account, pollingInterval: 50 })
      .extend(erc7710BundlerActions())
    /** One delegated call: `to` with `data`/`value` executed from the delegator under `permissionContext`. */
    const redeem = async (call: { to: Address; data?: Hex; value?: bigint }, permissionContext: Hex | ReadonlyArray<Delegation>): Promise<Outcome> => {
      try {
        const hash = await bundler.sendUserOperationWithDelegation({
          publicClient: publicClient as never,
          account,
          calls: [{ to: call.to, data: call.data ?? "0x", value: call.value ?? 0n, permissionContext: permissionContext as never, delegationManager: net.delegation.DelegationManager }]
        })
        const receipt = await bundler.waitForUserOperationReceipt({ hash, timeout: 30_000 })
        if (!receipt.success) return { ok: false, reason: reasonIn(receipt.reason ?? "") ?? "reverted", raw: receipt.reason ?? "" }
        return { ok: true, receipt: receipt.receipt }
      } catch (e) {
        return failed(e)
      }
    }
    return { account, address: account.address.toLowerCase() as Address, publicClient, redeem }
  })

/** An agent that is a plain key (an EOA): it redeems with its own transactions, ETH for gas on it. */
export const eoaAgent = (key: Hex) =>
  Effect.promise(async () => {
    const { net, chain, publicClient, fund } = clients()
    const eoa = privateKeyToAccount(key)
    await fund(eoa.address)
    const wallet = createWalletClient({ chain, transport: http(net.rpcUrl), account: eoa }).extend(erc7710WalletActions())
    const redeem = async (call: { to: Address; data?: Hex; value?: bigint }, permissionContext: Hex | ReadonlyArray<Delegation>): Promise<Outcome> => {
      try {
        const hash = await wallet.sendTransactionWithDelegation({
          account: eoa,
          chain,
          to: call.to,
          data: call.data ?? "0x",
          value: call.value ?? 0n,
          permissionContext: permissionContext as never,
          delegationManager: net.delegation.DelegationManager
        })
        const receipt = await publicClient.waitForTransactionReceipt({ hash })
        return receipt.status === "success" ? { ok: true, receipt } : { ok: false, reason: "reverted", raw: hash }
      } catch (e) {
        return failed(e)
      }
    }
    /** A call of its own making (any mode, any executions), sent as a plain transaction. */
    const send = async (call: { to: Address; data: Hex }): Promise<Outcome> => {
      try {
        const hash = await wallet.sendTransaction({ account: eoa, chain, to: call.to, data: call.data })
        const receipt = await publicClient.waitForTransactionReceipt({ hash })
        return receipt.status === "success" ? { ok: true, receipt } : { ok: false, reason: "reverted", raw: hash }
      } catch (e) {
        return failed(e)
      }
    }
    return { address: eoa.address.toLowerCase() as Address, wallet, publicClient, redeem, send }
  })

/** The permission contexts a mined transaction redeemed, decoded from its call data and receipt (RedemptionChains.ts). */
export const decodedRedemptions = (receipt: TransactionReceipt) =>
  Effect.promise(async () => {
    const { net, publicClient } = clients()
    const tx = await publicClient.getTransaction({ hash: receipt.transactionHash })
    return redeemedContexts(
      { from: tx.from, to: tx.to, input: tx.input },
      { status: receipt.status, logs: receipt.logs },
      { delegationManager: net.delegation.DelegationManager, entryPoint: net.entryPoint }
    )
  })

export const tokenBalance = (token: Address, holder: string) =>
  Effect.promise(() => clients().publicClient.readContract({ address: token, abi: erc20Abi, functionName: "balanceOf", args: [holder as Address] }))
export const ethBalance = (holder: string) => Effect.promise(() => clients().publicClient.getBalance({ address: holder as Address }))
export const fundEth = (holder: string, eth: string) => Effect.promise(() => clients().fund(holder as Address, eth))

/** Refused by the chain with `reason`, and nothing moved (`balances` read before and after). */
export const refusedOnChain = <A>(outcome: Outcome, reason: string, before: A, after: A) => {
  assert.isFalse(outcome.ok, `the chain accepted what it should refuse with ${reason}`)
  if (!outcome.ok) assert.include(outcome.reason, reason, outcome.raw.slice(0, 1500))
  assert.deepStrictEqual(after, before, `nothing moves (${reason})`)
}

export const accepted = (outcome: Outcome): TransactionReceipt => {
  if (!outcome.ok) throw new Error(`refused: ${outcome.reason}: ${outcome.raw.slice(0, 1500)}`)
  return outcome.receipt
}
