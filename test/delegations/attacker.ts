/**
 * A hostile delegate, as it would work without this service: MetaMask's smart-accounts-kit
 * and viem only, the signed delegation the owner gave it, its own redemptions (its own
 * caveat args, any execution it likes), sent straight to the bundler or bundled by itself
 * (`EntryPoint.handleOps` from its own EOA, itself as beneficiary). Nothing here goes
 * through the service's builders.
 */
import { assert } from "@effect/vitest"
import { DelegationManager } from "@metamask/delegation-abis"
import { type Delegation, ExecutionMode, Implementation, toMetaMaskSmartAccount } from "@metamask/smart-accounts-kit"
import { encodeBatchExecution, encodeDelegations, encodeSingleExecution } from "@metamask/smart-accounts-kit/utils"
import { Effect } from "effect"
import {
  type Address,
  createPublicClient,
  createWalletClient,
  decodeErrorResult,
  decodeEventLog,
  encodeAbiParameters,
  encodeFunctionData,
  erc20Abi,
  type Hex,
  http,
  pad,
  parseEther
} from "viem"
import { createBundlerClient, entryPoint07Abi, toPackedUserOperation } from "viem/account-abstraction"
import { privateKeyToAccount } from "viem/accounts"
import { viemChainOf } from "../../src/chain/Chain.ts"
import { Network } from "../../src/chain/Network.ts"
import type { LocalNetworkDescription } from "../../src/chain/LocalNetwork.ts"
import { testNetwork } from "../support/TestChain.ts"
import { type Session, signLeg, signOp } from "./helpers.ts"

export interface Execution {
  readonly target: Address
  readonly value?: bigint
  readonly callData: Hex
}

export const transfer = (token: Address, to: Address, units: bigint): Execution => ({
  target: token,
  callData: encodeFunctionData({ abi: erc20Abi, functionName: "transfer", args: [to, units] })
})

/** The outcome of one attempt: `ok`, or the revert reason found (enforcer string or DelegationManager error). */
export type Outcome = { readonly ok: true } | { readonly ok: false; readonly reason: string; readonly raw: string }

const errorStringAbi = [{ type: "error", name: "Error", inputs: [{ name: "message", type: "string" }] }] as const

/** The first revert reason in `text`: a readable `...Enforcer:...` string, or any hex blob decoding as Error(string) or a DM error. */
export const reasonIn = (text: string): string | undefined => {
  const plain = text.match(/[A-Za-z0-9]+Enforcer:[a-z0-9-]+/)
  if (plain !== null) return plain[0]
  for (const m of text.matchAll(/0x[0-9a-fA-F]{8,}/g)) {
    for (const abi of [errorStringAbi, DelegationManager] as const) {
      try {
        const decoded = decodeErrorResult({ abi: abi as never, data: m[0] as Hex }) as { errorName: string; args?: ReadonlyArray<unknown> }
        return decoded.errorName === "Error" ? String(decoded.args?.[0]) : decoded.errorName
      } catch {
        // not this ABI
      }
    }
  }
  return undefined
}

/** Caveat args the attacker chooses: the MultiTokenPeriod entry and the LogicalOrWrapper group. */
export const withArgs = (
  signed: Delegation,
  enforcers: Readonly<Record<string, Address>>,
  choice: { readonly tokenIndex: number; readonly group?: number }
): Delegation => ({
  ...signed,
  caveats: signed.caveats.map((c) => {
    if (c.enforcer.toLowerCase() === enforcers["MultiTokenPeriodEnforcer"]!.toLowerCase()) {
      return { ...c, args: encodeAbiParameters([{ type: "uint256" }], [BigInt(choice.tokenIndex)]) }
    }
    if (c.enforcer.toLowerCase() === enforcers["LogicalOrWrapperEnforcer"]!.toLowerCase() && choice.group !== undefined) {
      return {
        ...c,
        args: encodeAbiParameters(
          [{ type: "tuple", components: [{ name: "groupIndex", type: "uint256" }, { name: "caveatArgs", type: "bytes[]" }] }],
          [{ groupIndex: BigInt(choice.group), caveatArgs: ["0x"] }]
        )
      }
    }
    return c
  })
})

/** The delegate's own call: `DelegationManager.redeemDelegations([[grant]], [single default], [execution])`. */
export const redeemCall = (grant: Delegation, execution: Execution) => {
  const net = testNetwork()
  return {
    to: net.delegation.DelegationManager,
    data: encodeFunctionData({
      abi: DelegationManager,
      functionName: "redeemDelegations",
      args: [
        [encodeDelegations([grant])],
        [ExecutionMode.SingleDefault as Hex],
        [encodeSingleExecution({ target: execution.target, value: execution.value ?? 0n, callData: execution.callData })]
      ]
    })
  }
}

/** The same in batch mode: several executions in one redemption (one "call" for LimitedCalls, if it let it through). */
export const redeemBatchCall = (grant: Delegation, executions: ReadonlyArray<Execution>) => {
  const net = testNetwork()
  return {
    to: net.delegation.DelegationManager,
    data: encodeFunctionData({
      abi: DelegationManager,
      functionName: "redeemDelegations",
      args: [
        [encodeDelegations([grant])],
        [ExecutionMode.BatchDefault as Hex],
        [encodeBatchExecution(executions.map((e) => ({ target: e.target, value: e.value ?? 0n, callData: e.callData })))]
      ]
    })
  }
}

/** The attacker: its smart account (through the kit), its EOA, ETH for gas on both (anvil_setBalance). */
export const makeAttacker = (key: Hex, expectedAccount: string, rpcUrl?: string, network?: LocalNetworkDescription) =>
  Effect.promise(async () => {
    const net = { ...(network ?? testNetwork()), ...(rpcUrl === undefined ? {} : { rpcUrl }) }
    const chain = viemChainOf(net)
    const publicClient = createPublicClient({ chain, transport: http(net.rpcUrl), pollingInterval: 50 })
    const eoa = privateKeyToAccount(key)
    const account = await toMetaMaskSmartAccount({
      client: publicClient as never,
      implementation: Implementation.Hybrid,
      deployParams: [eoa.address, [], [], []],
      deploySalt: pad("0x00", { size: 32 }),
      signer: { account: eoa },
      environment: net.delegation as never
    })
    assert.strictEqual(account.address.toLowerCase(), expectedAccount.toLowerCase(), "the kit derives the same account")
    for (const address of [eoa.address, account.address]) {
      await publicClient.request({ method: "anvil_setBalance" as never, params: [address, `0x${parseEther("10").toString(16)}`] as never })
    }
    const bundler = createBundlerClient({ client: publicClient, transport: http(net.bundlerUrl), account, pollingInterval: 50 })
    const wallet = createWalletClient({ chain, transport: http(net.rpcUrl), account: eoa })

    /** Straight to the bundler (it estimates, then takes the operation): the attacker's first route. */
    const viaBundler = async (call: { to: Address; data: Hex }): Promise<Outcome> => {
      try {
        const hash = await bundler.sendUserOperation({ calls: [call] })
        const receipt = await bundler.waitForUserOperationReceipt({ hash, timeout: 30_000 })
        if (receipt.success) return { ok: true }
        return { ok: false, reason: reasonIn(receipt.reason ?? "") ?? "reverted", raw: receipt.reason ?? "" }
      } catch (e) {
        const raw = `${e instanceof Error ? e.message : String(e)} ${JSON.stringify((e as { cause?: unknown }).cause ?? "", (_, v) => typeof v === "bigint" ? v.toString() : v)}`
        return { ok: false, reason: reasonIn(raw) ?? "unknown", raw }
      }
    }

    /** Bundled by the attacker itself: its own `handleOps`, its EOA as beneficiary, fixed gas limits. */
    const viaHandleOps = async (call: { to: Address; data: Hex }): Promise<Outcome> => {
      const fees = await publicClient.estimateFeesPerGas()
      const factory = (await publicClient.getCode({ address: account.address })) === undefined ? await account.getFactoryArgs() : {}
      const unsigned = {
        sender: account.address,
        nonce: await account.getNonce(),
        ...factory,
        callData: await account.encodeCalls([call]),
        callGasLimit: 1_000_000n,
        verificationGasLimit: 1_000_000n,
        preVerificationGas: 100_000n,
        maxFeePerGas: fees.maxFeePerGas,
        maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
        signature: "0x" as Hex
      }
      const signature = await account.signUserOperation(unsigned as never)
      const packed = toPackedUserOperation({ ...unsigned, signature } as never)
      const hash = await wallet.writeContract({
        address: net.entryPoint,
        abi: entryPoint07Abi,
        functionName: "handleOps",
        args: [[packed], eoa.address]
      })
      const receipt = await publicClient.waitForTransactionReceipt({ hash })
      assert.strictEqual(receipt.status, "success", "the attacker's handleOps transaction itself executes")
      let success: boolean | undefined
      let revert = ""
      for (const log of receipt.logs) {
        if (log.address.toLowerCase() !== net.entryPoint.toLowerCase()) continue
        try {
          const ev = decodeEventLog({ abi: entryPoint07Abi, topics: log.topics, data: log.data })
          if (ev.eventName === "UserOperationEvent") success = (ev.args as { success: boolean }).success
          if (ev.eventName === "UserOperationRevertReason") revert = (ev.args as { revertReason: Hex }).revertReason
        } catch {
          // another EntryPoint event
        }
      }
      assert.isDefined(success, "the EntryPoint ran the operation")
      return success === true ? { ok: true } : { ok: false, reason: reasonIn(revert) ?? "reverted", raw: revert }
    }

    return { account, eoa, publicClient, viaBundler, viaHandleOps }
  })

export type Attacker = Effect.Success<ReturnType<typeof makeAttacker>>

/** ERC-20 balances on chain, for `holders` × `tokens`. */
export const balances = (attacker: Attacker, tokens: ReadonlyArray<Address>, holders: ReadonlyArray<Address>) =>
  Effect.promise(() =>
    Promise.all(tokens.flatMap((token) =>
      holders.map((holder) => attacker.publicClient.readContract({ address: token, abi: erc20Abi, functionName: "balanceOf", args: [holder] }))
    ))
  )

export interface GrantInput {
  readonly budgets: ReadonlyArray<{
    token: { symbol: string }
    amount: number
    period?: { every?: "day" | "week" | "month"; seconds?: number; start?: string }
    stream?: { perSecond: number; initial?: number; start?: string }
  }>
  readonly perActionMax?: { token: { symbol: string }; amount: number }
  readonly maxActions: number
  readonly recipientAllowlist?: ReadonlyArray<{ name: string; address: string; chainId: number }>
  readonly expiresAt?: string
  readonly redeemers?: { mode: "delegate" | "named" | "redelegation"; addresses?: ReadonlyArray<string> }
  readonly basket?: { amount: number }
}

/** A grant built, signed and enabled through the service; returns the signed delegation the delegate holds. */
export const grant = (owner: Session, delegate: Session, input: GrantInput) =>
  Effect.gen(function*() {
    const net = yield* Network
    const build = yield* owner.api.delegations.build({
      payload: { name: "bypass", kind: "agent", delegateeAddress: delegate.account.address, chainId: net.chainId, ...input }
    })
    assert.strictEqual(build.delegations.length, 1, "one delegation for the whole grant")
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
    const signed = { ...leg.delegation, signature } as unknown as Delegation
    return { id: created.id, signed, summary: build.humanSummary }
  })


/**
 * One hostile attempt by both routes: each must fail with `reason` (a substring of the decoded
 * revert reason) and leave every watched balance as it was.
 */
export const refused = (
  attacker: Attacker,
  watch: { tokens: ReadonlyArray<Address>; holders: ReadonlyArray<Address> },
  call: { to: Address; data: Hex },
  reason: string
) =>
  Effect.gen(function*() {
    const before = yield* balances(attacker, watch.tokens, watch.holders)
    const bundled = yield* Effect.promise(() => attacker.viaBundler(call))
    assert.isFalse(bundled.ok, `bundler route accepted an attempt that should fail with ${reason}`)
    if (!bundled.ok) assert.include(bundled.reason, reason, bundled.raw.slice(0, 2000))
    const own = yield* Effect.promise(() => attacker.viaHandleOps(call))
    assert.isFalse(own.ok, `own handleOps executed an attempt that should fail with ${reason}`)
    if (!own.ok) assert.include(own.reason, reason, own.raw)
    assert.deepStrictEqual(yield* balances(attacker, watch.tokens, watch.holders), before, `nothing moves (${reason})`)
  })

export const succeeds = (attacker: Attacker, call: { to: Address; data: Hex }) =>
  Effect.gen(function*() {
    const outcome = yield* Effect.promise(() => attacker.viaBundler(call))
    assert.isTrue(outcome.ok, outcome.ok ? "" : `${outcome.reason}: ${outcome.raw.slice(0, 1000)}`)
  })

