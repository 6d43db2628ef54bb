/**
 * Guardians and recovery on a local network of this file's own (its clock is moved forward):
 * src/chain/Recovery.ts and Recovery.sol. The account sets its guardians with owner
 * operations; guardians (EOAs and an ERC-1271 smart account) approve with their own
 * transactions or signatures a relayer submits; strangers try. Each refusal is the contract's
 * reason in a simulation and a transaction mined reverted; the account's signers are read
 * back from the chain.
 */
import { assert, layer } from "@effect/vitest"
import { HybridDeleGator } from "@metamask/delegation-abis"
import { createDelegation } from "@metamask/smart-accounts-kit"
import { Duration, Effect } from "effect"
import {
  type Address,
  createWalletClient,
  decodeEventLog,
  encodeFunctionData,
  type Hash,
  type Hex,
  hashTypedData,
  http,
  keccak256,
  toHex,
  zeroAddress,
  zeroHash
} from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { AccountStack, type Call } from "../../src/chain/Accounts4337.ts"
import { delegationTypedData, isDelegationSignatureValid } from "../../src/chain/AccountDelegations.ts"
import { BundlerRejected } from "../../src/chain/Bundler.ts"
import { CallReverted, Chain, viemChainOf } from "../../src/chain/Chain.ts"
import { addPasskeyCall, readDevices } from "../../src/chain/Devices.ts"
import { LocalNetwork } from "../../src/chain/LocalNetwork.ts"
import {
  addGuardianCall,
  approvalTypedData,
  approveCall,
  cancelRecoveryCall,
  checkGuardianChange,
  executeRecoveryCall,
  makeRecoveryDelegation,
  readApprovals,
  readRecovery,
  recoveryAbi,
  recoveryEvents,
  recoveryIdOf,
  type RecoverySigners,
  removeGuardianCall,
  setDelayCall,
  setSafeAddressCall
} from "../../src/chain/Recovery.ts"
import { chainLayers, eoaDevice, fundEth, type OwnerOpOptions, ownerOp, passkeyDevice, refusedOwnerOp, sendOwnerOp, signDigest } from "../support/OwnerOps.ts"
import { makeSoftwareAuthenticator } from "../support/SoftwareAuthenticator.ts"

process.env.DO_NOT_TRACK = "1"

const DELAY = 3_600
const randomKey = () => generatePrivateKey()
const addressOf = (key: Hex) => privateKeyToAccount(key).address

/** A transaction an EOA sends itself (a guardian, a relayer, a stranger); it must succeed. Returns the Recovery events it emitted. */
const tx = (key: Hex, call: Call) =>
  Effect.gen(function*() {
    const net = yield* LocalNetwork
    const chain = yield* Chain
    yield* fundEth(addressOf(key))
    const wallet = createWalletClient({ chain: viemChainOf(net), transport: http(net.rpcUrl), account: privateKeyToAccount(key) })
    const hash = yield* Effect.promise(() => wallet.sendTransaction({ to: call.to, data: call.data ?? "0x", value: 0n }))
    const receipt = yield* Effect.promise(() => chain.client.waitForTransactionReceipt({ hash, pollingInterval: 50 }))
    assert.strictEqual(receipt.status, "success")
    return receipt.logs
      .filter((l) => l.address.toLowerCase() === net.recovery.address.toLowerCase())
      .map((l) => decodeEventLog({ abi: recoveryAbi, topics: l.topics, data: l.data }))
  })

/** The contract refuses: its simulation reverts with `reason`, and the transaction, sent anyway, is mined reverted. */
const refusedTx = (key: Hex, call: Call, reason: string) =>
  Effect.gen(function*() {
    const net = yield* LocalNetwork
    const chain = yield* Chain
    yield* fundEth(addressOf(key))
    const simulated = yield* chain.call({ to: call.to, data: call.data ?? "0x", from: addressOf(key) }).pipe(Effect.flip)
    assert.instanceOf(simulated, CallReverted)
    assert.include((simulated as CallReverted).reason ?? "", reason)
    const wallet = createWalletClient({ chain: viemChainOf(net), transport: http(net.rpcUrl), account: privateKeyToAccount(key) })
    const hash = yield* Effect.promise(() => wallet.sendTransaction({ to: call.to, data: call.data ?? "0x", value: 0n, gas: 2_000_000n }))
    const receipt = yield* Effect.promise(() => chain.client.waitForTransactionReceipt({ hash, pollingInterval: 50 }))
    assert.strictEqual(receipt.status, "reverted", `mined: should have reverted with ${reason}`)
  })

const increaseTime = (seconds: number) =>
  Effect.gen(function*() {
    const chain = yield* Chain
    yield* Effect.promise(async () => {
      await chain.client.request({ method: "evm_increaseTime" as never, params: [seconds] as never })
      await chain.client.request({ method: "evm_mine" as never, params: [] as never })
    })
  })

const rejectedSignature = (opts: OwnerOpOptions) =>
  Effect.gen(function*() {
    const err = yield* sendOwnerOp(opts).pipe(Effect.flip)
    assert.instanceOf(err, BundlerRejected)
    assert.include((err as BundlerRejected).message, "AA24")
  })

layer(chainLayers(LocalNetwork.layerNetwork), { timeout: Duration.seconds(240), excludeTestServices: true })("guardians and recovery", (it) => {
  it.effect("m of n guardians replace the signers after the delay; fewer, twice, strangers, early, cancelled or stale approvals cannot", () =>
    Effect.gen(function*() {
      const net = yield* LocalNetwork
      const stack = yield* AccountStack
      const chain = yield* Chain
      const R = net.recovery.address
      const marker = (to: Address): Call => ({ to, value: 0n, data: "0x" })

      // The owner's account: EOA owner + a passkey. Guardians: two EOAs and a smart account (ERC-1271).
      const ownerKey = randomKey()
      const owner = eoaDevice(ownerKey)
      const account = yield* stack.counterfactualAccount(addressOf(ownerKey), 0n)
      const A = account.address
      const passkey = makeSoftwareAuthenticator()
      const [g1, g2, k3, relayer, stranger] = [randomKey(), randomKey(), randomKey(), randomKey(), randomKey()]
      const g3Account = yield* stack.counterfactualAccount(addressOf(k3), 0n)
      yield* ownerOp({ account: g3Account, device: eoaDevice(k3), calls: [marker(g3Account.address)] }) // deployed: a contract guardian
      const guardians = [addressOf(g1), addressOf(g2), g3Account.address]
      const safe = addressOf(randomKey())
      yield* ownerOp({
        account,
        device: owner,
        calls: [
          addPasskeyCall(A, passkey.publicKey),
          addGuardianCall(R, guardians[0]!, 1),
          addGuardianCall(R, guardians[1]!, 2),
          addGuardianCall(R, guardians[2]!, 2),
          setDelayCall(R, DELAY),
          setSafeAddressCall(R, safe)
        ]
      })
      const settings = yield* readRecovery(R, A)
      assert.deepStrictEqual(settings, { guardians, threshold: 2, delaySeconds: DELAY, nonce: 4n, started: null, safeAddress: safe })

      // Settings the contract refuses (the service checks the same first: checkGuardianChange).
      const refusedSetting = (call: Call, reason: string) => refusedOwnerOp({ account, device: owner, calls: [call] }, reason)
      yield* refusedSetting(addGuardianCall(R, A, 2), "Recovery:invalid-guardian")
      yield* refusedSetting(addGuardianCall(R, guardians[0]!, 2), "Recovery:already-guardian")
      yield* refusedSetting(addGuardianCall(R, addressOf(randomKey()), 0), "Recovery:invalid-threshold")
      yield* refusedSetting(addGuardianCall(R, addressOf(randomKey()), 5), "Recovery:invalid-threshold")
      yield* refusedSetting(removeGuardianCall(R, guardians[0]!, 3), "Recovery:invalid-threshold")
      yield* refusedSetting(removeGuardianCall(R, addressOf(randomKey()), 2), "Recovery:not-guardian")
      yield* refusedSetting(setDelayCall(R, 60), "Recovery:invalid-delay")
      yield* refusedSetting(setSafeAddressCall(R, A), "Recovery:invalid-safe-address")
      const field = (r: ReturnType<typeof checkGuardianChange>) => r._tag === "Invalid" ? r.field : "ok"
      assert.strictEqual(field(checkGuardianChange(A, guardians, { add: A }, 2)), "guardian")
      assert.strictEqual(field(checkGuardianChange(A, guardians, { add: guardians[0]! }, 2)), "guardian")
      assert.strictEqual(field(checkGuardianChange(A, guardians, { add: addressOf(randomKey()) }, 0)), "threshold")
      assert.strictEqual(field(checkGuardianChange(A, guardians, { remove: guardians[0]! }, 3)), "threshold")
      assert.strictEqual(field(checkGuardianChange(A, [guardians[0]!], { remove: guardians[0]! }, 0)), "ok")
      assert.deepStrictEqual(yield* readRecovery(R, A), settings)

      // The account's one delegation to the Recovery contract, signed by its owner.
      const delegation = yield* Effect.gen(function*() {
        const d = makeRecoveryDelegation(net.delegation, { account: A, recovery: R, salt: keccak256(toHex("recovery")) })
        const digest = hashTypedData(delegationTypedData(d, { chainId: net.chainId, delegationManager: net.delegation.DelegationManager }))
        return { ...d, signature: yield* signDigest(owner, digest) }
      })

      // The new signers: a new EOA and a new passkey (every old signer goes).
      const newOwnerKey = randomKey()
      const newPasskey = makeSoftwareAuthenticator()
      const signers: RecoverySigners = { owner: addressOf(newOwnerKey), passkeys: [newPasskey.publicKey] }
      const digestAt = (nonce: bigint) => hashTypedData(approvalTypedData({ chainId: net.chainId, recovery: R }, A, nonce, signers))
      const ecdsa = (key: Hex, hash: Hash) => signDigest(eoaDevice(key), hash)
      let nonce = (yield* readRecovery(R, A)).nonce
      // Our typed data is the contract's.
      assert.strictEqual(
        yield* chain.call({ to: R, data: approveDigestData(A, signers) }),
        digestAt(nonce)
      )

      // A stranger, a forged signature, a guardian twice: refused.
      const approve = (approvals: ReadonlyArray<{ guardian: Address; signature: Hex }>) => approveCall(R, A, signers, approvals)
      yield* refusedTx(stranger, approve([{ guardian: addressOf(stranger), signature: "0x" }]), "Recovery:not-guardian")
      yield* refusedTx(relayer, approve([{ guardian: guardians[0]!, signature: yield* ecdsa(stranger, digestAt(nonce)) }]), "Recovery:invalid-signature")
      yield* refusedTx(relayer, approve([{ guardian: guardians[0]!, signature: "0x" }]), "Recovery:invalid-signature")
      const g1Signature = yield* ecdsa(g1, digestAt(nonce))
      yield* refusedTx(relayer, approve([{ guardian: guardians[0]!, signature: g1Signature }, { guardian: guardians[0]!, signature: g1Signature }]), "Recovery:already-approved")

      // One of two: approved, not started; nothing can execute.
      const first = yield* tx(relayer, approve([{ guardian: guardians[0]!, signature: g1Signature }]))
      assert.deepStrictEqual(first.map((e) => e.eventName), ["RecoveryApproved"])
      const id = recoveryIdOf(A, nonce, signers)
      assert.deepStrictEqual(yield* readApprovals(R, id, guardians[0]!), { approvals: 1, approved: true })
      yield* refusedTx(stranger, executeRecoveryCall(R, A, signers, delegation), "Recovery:not-started")
      yield* refusedTx(g1, approve([{ guardian: guardians[0]!, signature: "0x" }]), "Recovery:already-approved")

      // The contract guardian's ERC-1271 signature reaches the threshold: started, the delay runs.
      const g3Signature = yield* ecdsa(k3, digestAt(nonce))
      const second = yield* tx(relayer, approve([{ guardian: guardians[2]!, signature: g3Signature }]))
      assert.deepStrictEqual(second.map((e) => e.eventName), ["RecoveryApproved", "RecoveryStarted"])
      const started = (yield* readRecovery(R, A)).started
      assert.strictEqual(started?.recoveryId, id)
      yield* refusedTx(g2, approve([{ guardian: guardians[1]!, signature: "0x" }]), "Recovery:already-started")
      yield* refusedTx(stranger, executeRecoveryCall(R, A, signers, delegation), "Recovery:delay-not-elapsed")
      const otherSigners: RecoverySigners = { owner: addressOf(stranger), passkeys: [] }
      yield* refusedTx(stranger, executeRecoveryCall(R, A, otherSigners, delegation), "Recovery:wrong-signers")

      // The owner's passkey cancels during the delay: after it, nothing executes and old approvals are void.
      yield* ownerOp({ account, device: passkeyDevice(passkey), calls: [cancelRecoveryCall(R)] })
      assert.isNull((yield* readRecovery(R, A)).started)
      nonce = (yield* readRecovery(R, A)).nonce
      yield* increaseTime(DELAY + 1)
      yield* refusedTx(stranger, executeRecoveryCall(R, A, signers, delegation), "Recovery:not-started")
      yield* refusedTx(relayer, approve([{ guardian: guardians[0]!, signature: g1Signature }, { guardian: guardians[2]!, signature: g3Signature }]), "Recovery:invalid-signature")

      // The clock moved past the paymaster's signatures: from here the account pays its own gas.
      yield* fundEth(A)
      // A settings change stops a started recovery too.
      yield* tx(relayer, approve([{ guardian: guardians[0]!, signature: yield* ecdsa(g1, digestAt(nonce)) }]))
      const byG2 = yield* tx(g2, approve([{ guardian: guardians[1]!, signature: "0x" }])) // the guardian's own transaction
      assert.deepStrictEqual(byG2.map((e) => e.eventName), ["RecoveryApproved", "RecoveryStarted"])
      yield* ownerOp({ account, device: owner, sponsored: false, calls: [removeGuardianCall(R, guardians[2]!, 2)] })
      const afterRemoval = yield* readRecovery(R, A)
      assert.isNull(afterRemoval.started)
      assert.deepStrictEqual(afterRemoval.guardians, guardians.slice(0, 2))
      nonce = afterRemoval.nonce

      // The recovery that completes: two guardians, the whole delay, then anyone executes.
      yield* tx(relayer, approve([{ guardian: guardians[0]!, signature: yield* ecdsa(g1, digestAt(nonce)) }, {
        guardian: guardians[1]!,
        signature: yield* ecdsa(g2, digestAt(nonce))
      }]))
      const running = (yield* readRecovery(R, A)).started!
      const grant = createDelegation({ environment: net.delegation as never, from: A, to: addressOf(stranger), scope: { type: "erc20TransferAmount", tokenAddress: net.tokens.usd.address, maxAmount: 1n } })
      yield* increaseTime(DELAY - 30)
      yield* refusedTx(stranger, executeRecoveryCall(R, A, signers, delegation), "Recovery:delay-not-elapsed")
      yield* increaseTime(31)
      yield* refusedTx(stranger, executeRecoveryCall(R, A, signers, { ...grant, signature: delegation.signature }), "Recovery:wrong-delegation")
      const dmConfig = { chainId: net.chainId, delegationManager: net.delegation.DelegationManager }
      assert.isTrue(yield* isDelegationSignatureValid(delegation, dmConfig))
      const done = yield* tx(stranger, executeRecoveryCall(R, A, signers, delegation))
      assert.deepStrictEqual(done.map((e) => e.eventName), ["RecoveryExecuted"])
      const block = yield* Effect.promise(() => chain.client.getBlock())
      assert.isTrue(block.timestamp >= running.executeAfter)
      yield* refusedTx(stranger, executeRecoveryCall(R, A, signers, delegation), "Recovery:not-started")

      // The account's signers are the new ones, read from the chain; the old ones are refused.
      const devices = yield* readDevices(A)
      assert.strictEqual(devices.owner?.address, addressOf(newOwnerKey))
      assert.deepStrictEqual(devices.passkeys.map((p) => p.keyId), [newPasskey.keyId])
      const anywhere = marker(addressOf(randomKey()))
      yield* rejectedSignature({ account, device: owner, sponsored: false, calls: [anywhere] })
      yield* rejectedSignature({ account, device: passkeyDevice(passkey), sponsored: false, calls: [anywhere] })
      yield* ownerOp({ account, device: eoaDevice(newOwnerKey), sponsored: false, calls: [anywhere] })
      yield* ownerOp({ account, device: passkeyDevice(newPasskey), sponsored: false, calls: [anywhere] })
      // Whatever the lost key signed is void now (ERC-1271 asks the new signers), the recovery delegation too.
      assert.isFalse(yield* isDelegationSignatureValid(delegation, dmConfig))
      const old = yield* signDigest(owner, keccak256(toHex("a grant of the lost key")))
      assert.notStrictEqual(
        yield* Effect.promise(() => chain.client.readContract({ address: A, abi: HybridDeleGator, functionName: "isValidSignature", args: [keccak256(toHex("a grant of the lost key")), old] })),
        "0x1626ba7e"
      )

      // What the service follows and notifies on, in order.
      const names = (yield* recoveryEvents(R, A)).map((e) => e.eventName)
      assert.deepStrictEqual(names.slice(-3), ["RecoveryApproved", "RecoveryStarted", "RecoveryExecuted"])
      for (const name of ["GuardianAdded", "GuardianRemoved", "DelayChanged", "SafeAddressChanged", "RecoveryCancelled"]) {
        assert.include(names, name)
      }
      assert.strictEqual(names.filter((n) => n === "RecoveryCancelled").length, 2) // the owner's cancel, the guardian removal
    }))

  it.effect("every other branch: bounds, empty and malformed approvals, malleable and non-1271 signatures, the default delay, a bare cancel", () =>
    Effect.gen(function*() {
      const net = yield* LocalNetwork
      const chain = yield* Chain
      const R = net.recovery.address
      // The contract keys everything on msg.sender: an EOA stands in for an account here (no execution).
      const x = randomKey()
      const X = addressOf(x)
      const signers: RecoverySigners = { owner: addressOf(randomKey()), passkeys: [] }
      const approve = (account: Address, approvals: ReadonlyArray<{ guardian: Address; signature: Hex }>, s = signers) => approveCall(R, account, s, approvals)
      yield* refusedTx(randomKey(), approve(X, [{ guardian: addressOf(randomKey()), signature: "0x" }]), "Recovery:no-guardians")
      yield* refusedTx(x, addGuardianCall(R, zeroAddress, 1), "Recovery:invalid-guardian")

      // At most 16 guardians; removing one from the middle keeps the others.
      const keys = Array.from({ length: 16 }, () => randomKey())
      for (const [i, k] of keys.entries()) yield* tx(x, addGuardianCall(R, addressOf(k), i === 0 ? 1 : 2))
      yield* refusedTx(x, addGuardianCall(R, addressOf(randomKey()), 2), "Recovery:too-many-guardians")
      yield* tx(x, removeGuardianCall(R, addressOf(keys[3]!), 2))
      const kept = (yield* readRecovery(R, X)).guardians
      assert.strictEqual(kept.length, 15)
      assert.notInclude(kept, addressOf(keys[3]!))
      assert.sameMembers([...kept], keys.filter((_, i) => i !== 3).map(addressOf))

      // The delay's bounds; never set: two days.
      yield* refusedTx(x, setDelayCall(R, 30 * 86_400 + 1), "Recovery:invalid-delay")
      assert.strictEqual((yield* readRecovery(R, X)).delaySeconds, 2 * 86_400)
      yield* tx(x, setDelayCall(R, 30 * 86_400))
      assert.strictEqual((yield* readRecovery(R, X)).delaySeconds, 30 * 86_400)

      // Malformed approvals and proposals.
      const g0 = keys[0]!
      yield* refusedTx(g0, approve(X, []), "Recovery:invalid-approvals")
      yield* refusedTx(g0, {
        to: R,
        value: 0n,
        data: encodeFunctionData({ abi: recoveryAbi, functionName: "approve", args: [X, { owner: signers.owner!, keyIds: [], xs: [], ys: [] }, [addressOf(g0)], []] })
      }, "Recovery:invalid-approvals")
      yield* refusedTx(g0, approve(X, [{ guardian: addressOf(g0), signature: "0x" }], { owner: null, passkeys: [] }), "Recovery:invalid-signers")
      yield* refusedTx(g0, {
        to: R,
        value: 0n,
        data: encodeFunctionData({ abi: recoveryAbi, functionName: "approve", args: [X, { owner: zeroAddress, keyIds: ["k"], xs: [1n], ys: [] }, [addressOf(g0)], ["0x"]] })
      }, "Recovery:invalid-signers")

      // The other half of the curve order (same signer, second form), and a contract guardian without ERC-1271.
      const nonce = (yield* readRecovery(R, X)).nonce
      const digest = hashTypedData(approvalTypedData({ chainId: net.chainId, recovery: R }, X, nonce, signers))
      const good = yield* signDigest(eoaDevice(g0), digest)
      const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n
      const s = BigInt(`0x${good.slice(66, 130)}`)
      const v = Number.parseInt(good.slice(130, 132), 16)
      const malleated = `${good.slice(0, 66)}${(N - s).toString(16).padStart(64, "0")}${(v === 27 ? 28 : 27).toString(16)}` as Hex
      yield* refusedTx(randomKey(), approve(X, [{ guardian: addressOf(g0), signature: malleated }]), "Recovery:invalid-signature")
      const y = randomKey()
      const Y = addressOf(y)
      const token = net.tokens.usd.address // code, but no isValidSignature: its "approval" never counts
      yield* tx(y, addGuardianCall(R, token, 1))
      yield* refusedTx(randomKey(), approve(Y, [{ guardian: token, signature: good }]), "Recovery:invalid-signature")

      // One good approval of two needed: counted, not started.
      yield* tx(randomKey(), approve(X, [{ guardian: addressOf(g0), signature: good }]))
      assert.isNull((yield* readRecovery(R, X)).started)
      assert.strictEqual((yield* readApprovals(R, recoveryIdOf(X, nonce, signers))).approvals, 1)
      // A bare cancel (nothing started) voids the approvals gathered: the nonce moves, the event names no recovery.
      const cancelled = yield* tx(x, cancelRecoveryCall(R))
      assert.deepStrictEqual(cancelled.map((e) => [e.eventName, (e.args as { recoveryId: Hash }).recoveryId]), [["RecoveryCancelled", zeroHash]])
      assert.strictEqual((yield* readRecovery(R, X)).nonce, nonce + 1n)
      yield* refusedTx(randomKey(), approve(X, [{ guardian: addressOf(g0), signature: good }]), "Recovery:invalid-signature")

      // Y's recovery with the default delay: started now, executable in two days.
      const z = randomKey()
      yield* tx(y, addGuardianCall(R, addressOf(z), 1))
      yield* tx(z, approve(Y, [{ guardian: addressOf(z), signature: "0x" }]))
      const startedY = (yield* readRecovery(R, Y)).started!
      const now = (yield* Effect.promise(() => chain.client.getBlock())).timestamp
      assert.strictEqual(startedY.executeAfter - now, 2n * 86_400n)

      // The safe address is set and cleared; never the account itself.
      yield* tx(y, setSafeAddressCall(R, X))
      assert.strictEqual((yield* readRecovery(R, Y)).safeAddress, X)
      yield* tx(y, setSafeAddressCall(R, null))
      assert.isNull((yield* readRecovery(R, Y)).safeAddress)
    }))
})

/** `approvalDigest(account, signers)` call data (the contract's own digest, to compare with ours). */
const approveDigestData = (account: Address, signers: RecoverySigners): Hex =>
  encodeFunctionData({
    abi: recoveryAbi,
    functionName: "approvalDigest",
    args: [account, {
      owner: signers.owner ?? zeroAddress,
      keyIds: signers.passkeys.map((k) => k.keyId),
      xs: signers.passkeys.map((k) => k.x),
      ys: signers.passkeys.map((k) => k.y)
    }]
  })
