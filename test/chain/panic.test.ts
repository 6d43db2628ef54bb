/**
 * The panic key on the run's local chain (src/chain/Panic.ts, PanicFreeze.sol): the panic
 * key's own account redeems its delegation, straight to the bundler, with call data it made
 * itself. Its freeze disables the account's grants; every other call it tries is refused by
 * the chain with the enforcer's reason (its simulation and, included with its own gas limits,
 * its execution), and nothing moves.
 */
import { assert, layer } from "@effect/vitest"
import { DelegationManager, HybridDeleGator } from "@metamask/delegation-abis"
import { createDelegation, type Delegation, ExecutionMode } from "@metamask/smart-accounts-kit"
import { encodeBatchExecution, encodeDelegations, encodeSingleExecution, hashDelegation } from "@metamask/smart-accounts-kit/utils"
import { Duration, Effect } from "effect"
import { type Address, encodeFunctionData, erc20Abi, type Hex, hashTypedData, keccak256, toHex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { AccountStack, type Call, delegationArg } from "../../src/chain/Accounts4337.ts"
import { delegationTypedData, type Execution, redeemCall } from "../../src/chain/AccountDelegations.ts"
import { Chain } from "../../src/chain/Chain.ts"
import { panicFreezeEnforcerAbi } from "../../src/chain/contracts/PanicFreeze.ts"
import { addPasskeyCall } from "../../src/chain/Devices.ts"
import { LocalNetwork } from "../../src/chain/LocalNetwork.ts"
import { isPanicDelegation, makePanicDelegation, panicFreezeCall } from "../../src/chain/Panic.ts"
import { makeRecoveryDelegation } from "../../src/chain/Recovery.ts"
import { testNetwork } from "../support/TestChain.ts"
import {
  chainLayers,
  type Device,
  eoaDevice,
  mintUsd,
  ownerOp,
  passkeyDevice,
  refusedOwnerOp,
  sharedNetworkLayer,
  signDigest,
  usdBalance
} from "../support/OwnerOps.ts"
import { makeSoftwareAuthenticator } from "../support/SoftwareAuthenticator.ts"

process.env.DO_NOT_TRACK = "1"

const randomAddress = () => privateKeyToAccount(generatePrivateKey()).address
const salt = () => keccak256(toHex(`${Math.random()}-${Date.now()}`))

/** A key and its own account (the panic key, an agent, a stranger). */
const party = Effect.gen(function*() {
  const stack = yield* AccountStack
  const key = generatePrivateKey()
  const account = yield* stack.counterfactualAccount(privateKeyToAccount(key).address, 0n)
  return { key, device: eoaDevice(key), account }
})

/** A delegation signed by one of the delegator's devices (checked by the DelegationManager through ERC-1271). */
const signed = (device: Device, delegation: Delegation) =>
  Effect.gen(function*() {
    const net = yield* LocalNetwork
    const digest = hashTypedData(delegationTypedData(delegation, { chainId: net.chainId, delegationManager: net.delegation.DelegationManager }))
    return { ...delegation, signature: yield* signDigest(device, digest) }
  })

const isDisabled = (delegation: Delegation) =>
  Effect.gen(function*() {
    const chain = yield* Chain
    const net = yield* LocalNetwork
    return yield* Effect.promise(() =>
      chain.client.readContract({
        address: net.delegation.DelegationManager,
        abi: DelegationManager,
        functionName: "disabledDelegations",
        args: [hashDelegation(delegation)]
      })
    )
  })

const disableCall = (dm: Address, d: Delegation): Execution => ({
  target: dm,
  callData: encodeFunctionData({ abi: DelegationManager, functionName: "disableDelegation", args: [delegationArg(d)] })
})

layer(chainLayers(sharedNetworkLayer(testNetwork())), { timeout: Duration.seconds(180), excludeTestServices: true })("panic key", (it) => {
  it.effect("the panic key freezes the account's grants and can do nothing else; the owner unfreezes and replaces it", () =>
    Effect.gen(function*() {
      const net = yield* LocalNetwork
      const stack = yield* AccountStack
      const env = net.delegation
      const dm = env.DelegationManager
      const usdc = net.tokens.usd.address

      // The owner's account, with a passkey that signs the panic delegation (any device signs).
      const owner = yield* party
      const A = owner.account.address
      const passkey = makeSoftwareAuthenticator()
      yield* ownerOp({ account: owner.account, device: owner.device, calls: [addPasskeyCall(A, passkey.publicKey)] })
      yield* mintUsd(A, 20_000_000n)

      // Two grants to agents, the guardians' recovery delegation, a cold key's panic delegation.
      const [agent, contact, cold, stranger] = [yield* party, yield* party, yield* party, yield* party]
      const grant = (to: Address) =>
        signed(owner.device, createDelegation({ environment: env as never, from: A, to, scope: { type: "erc20TransferAmount", tokenAddress: usdc, maxAmount: 5_000_000n } }))
      const g1 = yield* grant(agent.account.address)
      const g2 = yield* grant(randomAddress())
      const recovery = yield* signed(owner.device, makeRecoveryDelegation(env, { account: A, recovery: net.recovery.address, salt: salt() }))
      const panicOf = (delegate: Address) => {
        const made = makePanicDelegation(env, { delegator: A, delegate, protectedDelegates: [net.recovery.address], salt: salt() })
        assert.strictEqual(made._tag, "Ok")
        return (made as { value: Delegation }).value
      }
      const p1 = yield* signed(passkeyDevice(passkey), panicOf(contact.account.address))
      const p2 = yield* signed(owner.device, panicOf(cold.account.address))
      assert.isTrue(isPanicDelegation(env, p1))
      assert.isFalse(isPanicDelegation(env, g1))
      assert.strictEqual(makePanicDelegation(env, { delegator: A, delegate: A, protectedDelegates: [], salt: salt() })._tag, "Invalid")

      // The agent's grant works before the freeze.
      const agentTransfer = (units: bigint): Call =>
        redeemCall(dm, g1, [{ target: usdc, callData: encodeFunctionData({ abi: erc20Abi, functionName: "transfer", args: [agent.account.address, units] }) }])
      yield* ownerOp({ account: agent.account, device: agent.device, calls: [agentTransfer(1_000_000n)] })
      assert.strictEqual(yield* usdBalance(agent.account.address), 1_000_000n)

      // Everything but a freeze is refused by the chain, with the enforcer's reason; nothing moves.
      const asContact = (executions: ReadonlyArray<Execution>) => ({ account: contact.account, device: contact.device, calls: [redeemCall(dm, p1, executions)] })
      const transferFromA = { target: usdc, callData: encodeFunctionData({ abi: erc20Abi, functionName: "transfer", args: [contact.account.address, 1_000_000n] }) }
      yield* refusedOwnerOp(asContact([transferFromA]), "PanicFreezeEnforcer:target-not-allowed")
      yield* refusedOwnerOp(asContact([{ target: contact.account.address, value: 1n, callData: "0x" }]), "PanicFreezeEnforcer:value-not-allowed")
      yield* refusedOwnerOp(asContact([{ target: A, value: 1n, callData: "0x" }]), "PanicFreezeEnforcer:value-not-allowed")
      const enable = encodeFunctionData({ abi: DelegationManager, functionName: "enableDelegation", args: [delegationArg(g1)] })
      yield* refusedOwnerOp(asContact([{ target: dm, callData: enable }]), "PanicFreezeEnforcer:method-not-allowed")
      yield* refusedOwnerOp(asContact([disableCall(dm, recovery)]), "PanicFreezeEnforcer:protected-delegation")
      yield* refusedOwnerOp(asContact([disableCall(dm, p2)]), "PanicFreezeEnforcer:protected-delegation")
      yield* refusedOwnerOp(asContact([disableCall(dm, p1)]), "PanicFreezeEnforcer:protected-delegation")
      // The account's own functions: its signers, its disable wrapper, an upgrade.
      const ownCall = (data: Hex) => ({ target: A, callData: data })
      yield* refusedOwnerOp(asContact([ownCall(addPasskeyCall(A, makeSoftwareAuthenticator().publicKey).data!)]), "PanicFreezeEnforcer:target-not-allowed")
      yield* refusedOwnerOp(asContact([ownCall(encodeFunctionData({ abi: HybridDeleGator, functionName: "transferOwnership", args: [contact.account.address] }))]), "PanicFreezeEnforcer:target-not-allowed")
      yield* refusedOwnerOp(asContact([ownCall(encodeFunctionData({ abi: HybridDeleGator, functionName: "disableDelegation", args: [delegationArg(g1)] }))]), "PanicFreezeEnforcer:target-not-allowed")
      // A batch could hide another call: only single calls.
      const batch = encodeFunctionData({
        abi: DelegationManager,
        functionName: "redeemDelegations",
        args: [[encodeDelegations([p1])], [ExecutionMode.BatchDefault as Hex], [encodeBatchExecution([{ target: dm, value: 0n, callData: disableCall(dm, g1).callData }])]]
      })
      yield* refusedOwnerOp({ account: contact.account, device: contact.device, calls: [{ to: dm, value: 0n, data: batch }] }, "PanicFreezeEnforcer:invalid-call-type")
      // Another account cannot use it; nor can one the panic key re-delegates to.
      yield* refusedOwnerOp({ account: stranger.account, device: stranger.device, calls: [panicFreezeCall(env, p1, [g1])] }, "InvalidDelegate")
      const sub = yield* signed(contact.device, {
        delegate: stranger.account.address,
        delegator: contact.account.address,
        authority: hashDelegation(p1),
        caveats: [],
        salt: salt(),
        signature: "0x"
      })
      const viaSub = encodeFunctionData({
        abi: DelegationManager,
        functionName: "redeemDelegations",
        args: [[encodeDelegations([sub, p1])], [ExecutionMode.SingleDefault as Hex], [encodeSingleExecution({ target: dm, value: 0n, callData: disableCall(dm, g1).callData })]]
      })
      yield* refusedOwnerOp({ account: stranger.account, device: stranger.device, calls: [{ to: dm, value: 0n, data: viaSub }] }, "RedeemerEnforcer:unauthorized-redeemer")
      assert.strictEqual(yield* usdBalance(A), 19_000_000n)
      for (const d of [g1, g2, recovery, p1, p2]) assert.isFalse(yield* isDisabled(d))

      // The freeze: the panic key's own redemption disables both grants in one operation.
      yield* ownerOp({ account: contact.account, device: contact.device, calls: [panicFreezeCall(env, p1, [g1, g2])] })
      assert.isTrue(yield* isDisabled(g1))
      assert.isTrue(yield* isDisabled(g2))
      for (const d of [recovery, p1, p2]) assert.isFalse(yield* isDisabled(d))
      yield* refusedOwnerOp({ account: agent.account, device: agent.device, calls: [agentTransfer(1_000_000n)] }, "CannotUseADisabledDelegation")
      // All or nothing: a grant already disabled fails the whole freeze (the service sends only live ones).
      yield* refusedOwnerOp({ account: contact.account, device: contact.device, calls: [panicFreezeCall(env, p1, [g1])] }, "AlreadyDisabled")
      // With nothing live, the freeze is the account's zero-value call to itself.
      yield* ownerOp({ account: contact.account, device: contact.device, calls: [panicFreezeCall(env, p1, [])] })

      // Never a revocation: the owner re-enables (unfreezes) what the panic key disabled.
      yield* ownerOp({ account: owner.account, device: passkeyDevice(passkey), calls: [{ to: A, value: 0n, data: stack.encodeEnableDelegation(g1) }] })
      assert.isFalse(yield* isDisabled(g1))
      yield* ownerOp({ account: agent.account, device: agent.device, calls: [agentTransfer(1_000_000n)] })
      assert.strictEqual(yield* usdBalance(agent.account.address), 2_000_000n)

      // The owner replaces the panic key: the old delegation is disabled, its freeze refused.
      yield* ownerOp({ account: owner.account, device: owner.device, calls: [{ to: A, value: 0n, data: stack.encodeDisableDelegation(p1) }] })
      yield* refusedOwnerOp({ account: contact.account, device: contact.device, calls: [panicFreezeCall(env, p1, [g1])] }, "CannotUseADisabledDelegation")
      assert.isFalse(yield* isDisabled(g1))
      // The cold key's panic delegation still freezes.
      yield* ownerOp({ account: cold.account, device: cold.device, calls: [panicFreezeCall(env, p2, [g1])] })
      assert.isTrue(yield* isDisabled(g1))
    }))

  it.effect("every branch of PanicFreezeEnforcer's hook, called as the DelegationManager calls it", () =>
    Effect.gen(function*() {
      const net = yield* LocalNetwork
      const chain = yield* Chain
      const env = net.delegation
      const enforcer = env.caveatEnforcers["PanicFreezeEnforcer"]!
      const dm = env.DelegationManager
      const account = randomAddress()
      const recoveryAddress = net.recovery.address
      const SINGLE: Hex = `0x${"00".repeat(32)}`
      const BATCH: Hex = `0x01${"00".repeat(31)}`
      const TRY: Hex = `0x0001${"00".repeat(30)}`
      const exec = (target: Address, value: bigint, callData: Hex) => encodeSingleExecution({ target, value, callData })
      const before = (terms: Hex, mode: Hex, execution: Hex) =>
        chain.call({
          to: enforcer,
          from: dm,
          data: encodeFunctionData({
            abi: panicFreezeEnforcerAbi,
            functionName: "beforeHook",
            args: [terms, "0x", mode, execution, keccak256(toHex("hash")), account, randomAddress()]
          })
        }).pipe(Effect.as("ok"), Effect.catchTag("CallReverted", (e) => Effect.succeed(e.reason ?? e.data)))
      const terms = recoveryAddress as Hex
      const grantOf = (delegate: Address, caveats: Delegation["caveats"] = []): Delegation => ({
        delegate, delegator: account, authority: `0x${"ff".repeat(32)}`, caveats, salt: "0x01", signature: "0x"
      })
      const disable = (d: Delegation) => exec(dm, 0n, disableCall(dm, d).callData)
      assert.strictEqual(yield* chain.call({ to: enforcer, data: encodeFunctionData({ abi: panicFreezeEnforcerAbi, functionName: "delegationManager" }) }), `0x${"00".repeat(12)}${dm.slice(2).toLowerCase()}`)
      assert.strictEqual(yield* before(terms, SINGLE, disable(grantOf(randomAddress()))), "ok")
      assert.strictEqual(yield* before("0x", SINGLE, disable(grantOf(recoveryAddress))), "ok") // nothing protected by empty terms
      assert.strictEqual(yield* before(terms, SINGLE, exec(account, 0n, "0x")), "ok") // the freeze marker
      assert.strictEqual(yield* before(terms, BATCH, disable(grantOf(randomAddress()))), "PanicFreezeEnforcer:invalid-call-type")
      assert.strictEqual(yield* before(terms, TRY, disable(grantOf(randomAddress()))), "PanicFreezeEnforcer:invalid-execution-type")
      assert.strictEqual(yield* before(`${terms}00`, SINGLE, disable(grantOf(randomAddress()))), "PanicFreezeEnforcer:invalid-terms-length")
      assert.strictEqual(yield* before(terms, SINGLE, dm), "PanicFreezeEnforcer:invalid-execution-length")
      assert.strictEqual(yield* before(terms, SINGLE, exec(account, 1n, "0x")), "PanicFreezeEnforcer:value-not-allowed")
      assert.strictEqual(yield* before(terms, SINGLE, exec(dm, 1n, disableCall(dm, grantOf(randomAddress())).callData)), "PanicFreezeEnforcer:value-not-allowed")
      assert.strictEqual(yield* before(terms, SINGLE, exec(account, 0n, "0x00")), "PanicFreezeEnforcer:target-not-allowed")
      assert.strictEqual(yield* before(terms, SINGLE, exec(randomAddress(), 0n, "0x")), "PanicFreezeEnforcer:target-not-allowed")
      assert.strictEqual(yield* before(terms, SINGLE, exec(dm, 0n, "0x")), "PanicFreezeEnforcer:method-not-allowed")
      assert.strictEqual(yield* before(terms, SINGLE, exec(dm, 0n, "0x3ed010")), "PanicFreezeEnforcer:method-not-allowed")
      assert.strictEqual(yield* before(`${terms}${randomAddress().slice(2)}` as Hex, SINGLE, disable(grantOf(recoveryAddress))), "PanicFreezeEnforcer:protected-delegation")
      const second = randomAddress()
      assert.strictEqual(yield* before(`${terms}${second.slice(2)}` as Hex, SINGLE, disable(grantOf(second))), "PanicFreezeEnforcer:protected-delegation")
      assert.strictEqual(
        yield* before(terms, SINGLE, disable(grantOf(randomAddress(), [{ enforcer: randomAddress(), terms: "0x", args: "0x" }, { enforcer, terms: "0x", args: "0x" }]))),
        "PanicFreezeEnforcer:protected-delegation"
      )
    }))
})
