/**
 * Every branch of ApprovalEnforcer (src/chain/contracts/Approvals.sol) on the run's local
 * chain, its hooks called as the DelegationManager calls them (the DelegationManager path is
 * proven in test/delegations/approvals.test.ts), and the off-chain half (src/chain/Approvals.ts)
 * proven equal to it: the same digest, the same decision, the same reason, case by case.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import {
  type Address,
  BaseError,
  concat,
  ContractFunctionRevertedError,
  decodeEventLog,
  encodePacked,
  type Hash,
  domainSeparator,
  type Hex,
  keccak256,
  pad,
  parseSignature,
  recoverAddress,
  serializeSignature,
  toHex,
  zeroAddress
} from "viem"
import { getEip712Domain } from "viem/actions"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import {
  approvalArgs,
  approvalDigest,
  approvalTerms,
  approvalTypedData,
  type ApprovalRule,
  type ApprovalSet,
  decodeApprovalArgs,
  decodeApprovalTerms,
  type Execution,
  invalidRule,
  needsApproval,
  randomApprovalNonce,
  verifyApprovals
} from "../../src/chain/Approvals.ts"
import { makeHybridDeleGator } from "../../src/chain/Accounts4337.ts"
import { Chain } from "../../src/chain/Chain.ts"
import { approvalEnforcerAbi } from "../../src/chain/contracts/Approvals.ts"
import { Network } from "../../src/chain/Network.ts"
import { approvalEnforcer as enforcer, chainNow, client, deployedAccount, fundedKey, net, packed, transferOf } from "./approvalFixtures.ts"

const usdc = net.tokens.usd.address
const usdt = net.tokens.usdt.address
const someone = privateKeyToAccount(generatePrivateKey()).address
const SINGLE_DEFAULT: Hex = pad("0x00", { size: 32 })
const BATCH: Hex = pad("0x01", { dir: "right", size: 32 })
const SINGLE_TRY: Hex = pad("0x0001", { dir: "right", size: 32 })
const delegationHash = keccak256(toHex("a grant")) as Hash

const keys = [0, 1, 2].map(() => privateKeyToAccount(generatePrivateKey()))
const stranger = privateKeyToAccount(generatePrivateKey())
/** 2 of 3; USDC free up to 5, USDT up to 1; any other token always needs approvals. */
const rule: ApprovalRule = {
  required: 2,
  approvers: keys.map((k) => k.address),
  thresholds: [{ token: usdc, units: 5_000_000n }, { token: usdt, units: 1_000_000n }]
}
const terms = approvalTerms(rule)

/** `beforeHook` by eth_call from `caller`: "ok" or the revert reason. */
const before = async (t: Hex, args: Hex, exec: Hex, options: { mode?: Hex; caller?: Address; hash?: Hash; redeemer?: Address } = {}) => {
  try {
    await client.simulateContract({
      address: enforcer,
      abi: approvalEnforcerAbi,
      functionName: "beforeHook",
      args: [t, args, options.mode ?? SINGLE_DEFAULT, exec, options.hash ?? delegationHash, someone, options.redeemer ?? someone],
      ...(options.caller === undefined ? {} : { account: options.caller })
    })
    return "ok"
  } catch (e) {
    const revert = e instanceof BaseError ? e.walk((x) => x instanceof ContractFunctionRevertedError) : undefined
    return revert instanceof ContractFunctionRevertedError ? revert.reason ?? revert.shortMessage : String(e)
  }
}

const request = (execution: Execution, nonce: bigint, deadline: bigint, hash: Hash = delegationHash) =>
  ({ chainId: net.chainId, enforcer, delegationHash: hash, execution, nonce, deadline })

/** Each signer signs the EIP-712 Approval with viem's `signTypedData`, as a wallet would. */
const approve = async (
  signers: ReadonlyArray<{ readonly address: Address; readonly signTypedData: (td: never) => Promise<Hex> }>,
  execution: Execution,
  nonce: bigint,
  deadline: bigint,
  hash: Hash = delegationHash
): Promise<ApprovalSet> => ({
  nonce,
  deadline,
  approvals: await Promise.all(signers.map(async (s) => ({
    approver: s.address,
    signature: await s.signTypedData(approvalTypedData(request(execution, nonce, deadline, hash)) as never)
  })))
})

const sixUsdc = transferOf(usdc, someone, 6_000_000n)

const ChainLive = Chain.layer.pipe(Layer.provide(Layer.succeed(Network, net)))

layer(ChainLive)("ApprovalEnforcer", (it) => {
  /** The contract's answer and the off-chain verifier's, which must agree. */
  const both = (
    t: ApprovalRule,
    execution: Execution,
    set: ApprovalSet | undefined,
    options: { caller?: Address; now: bigint; hash?: Hash; redeemer?: Address }
  ) =>
    Effect.gen(function*() {
      const chain = yield* Chain
      const onChain = yield* Effect.promise(() =>
        before(approvalTerms(t), set === undefined ? "0x" : approvalArgs(set), packed(execution), {
          ...(options.caller === undefined ? {} : { caller: options.caller }),
          ...(options.hash === undefined ? {} : { hash: options.hash }),
          ...(options.redeemer === undefined ? {} : { redeemer: options.redeemer })
        })
      )
      const offChain = yield* verifyApprovals(chain, {
        chainId: net.chainId,
        enforcer,
        caller: options.caller ?? zeroAddress,
        delegationHash: options.hash ?? delegationHash,
        rule: t,
        execution,
        set,
        nowSeconds: options.now,
        redeemer: options.redeemer ?? someone
      })
      assert.strictEqual(offChain.ok ? "ok" : offChain.reason, onChain, "the off-chain verifier agrees with the contract")
      return onChain
    })

  it.effect("is deployed, and its EIP-712 domain, type and digest equal the off-chain ones", () =>
    Effect.gen(function*() {
      const code = yield* Effect.promise(() => client.getCode({ address: enforcer }))
      assert.isTrue(code !== undefined && code.length > 2)
      const domain = (yield* Effect.promise(() => getEip712Domain(client, { address: enforcer }))).domain
      const td = approvalTypedData(request(sixUsdc, 7n, 1n))
      assert.deepStrictEqual(
        { name: domain.name, version: domain.version, chainId: domain.chainId, verifyingContract: domain.verifyingContract },
        { name: "ApprovalEnforcer", version: "1", chainId: net.chainId, verifyingContract: enforcer }
      )
      assert.deepStrictEqual(td.domain, { name: "ApprovalEnforcer", version: "1", chainId: net.chainId, verifyingContract: enforcer })
      const separator = yield* Effect.promise(() => client.readContract({ address: enforcer, abi: approvalEnforcerAbi, functionName: "domainSeparator" }))
      assert.strictEqual(separator, domainSeparator({ domain: td.domain }))
      const typehash = yield* Effect.promise(() => client.readContract({ address: enforcer, abi: approvalEnforcerAbi, functionName: "APPROVAL_TYPEHASH" }))
      assert.strictEqual(typehash, keccak256(toHex("Approval(bytes32 delegationHash,address target,uint256 value,bytes callData,uint256 nonce,uint256 deadline)")))
      for (const execution of [sixUsdc, { target: someone, value: 3n, callData: "0x" as Hex }, { target: usdt, value: 0n, callData: "0xdeadbeef" as Hex }]) {
        for (const [nonce, deadline] of [[0n, 0n], [randomApprovalNonce(), 2n ** 256n - 1n]] as const) {
          const onChain = yield* Effect.promise(() =>
            client.readContract({
              address: enforcer,
              abi: approvalEnforcerAbi,
              functionName: "approvalDigest",
              args: [delegationHash, execution.target, execution.value, execution.callData, nonce, deadline]
            })
          )
          assert.strictEqual(onChain, approvalDigest(request(execution, nonce, deadline)))
        }
      }
    }))

  it.effect("terms and args round-trip; a rule the contract cannot hold is refused off chain", () =>
    Effect.sync(() => {
      assert.deepStrictEqual(decodeApprovalTerms(terms), {
        ...rule,
        approvers: rule.approvers.map((a) => a.toLowerCase() as Address),
        thresholds: rule.thresholds.map((t) => ({ ...t, token: t.token.toLowerCase() as Address }))
      })
      assert.strictEqual(terms.length, 2 + 2 * (2 + 3 * 20 + 2 * 52))
      const set = { nonce: 9n, deadline: 10n, approvals: [{ approver: keys[0]!.address, signature: "0x1234" as Hex }] }
      assert.deepStrictEqual(decodeApprovalArgs(approvalArgs(set)), set)
      assert.isUndefined(decodeApprovalTerms("0x01"))
      assert.isUndefined(decodeApprovalTerms(concat([terms, "0x00"])))
      assert.isUndefined(invalidRule(rule))
      const bad: Array<[ApprovalRule, string]> = [
        [{ ...rule, required: 0 }, "at least 1"],
        [{ ...rule, required: 4 }, "at most the number of approvers"],
        [{ ...rule, approvers: [] }, "1 to 16"],
        [{ ...rule, approvers: Array.from({ length: 17 }, () => privateKeyToAccount(generatePrivateKey()).address) }, "1 to 16"],
        [{ ...rule, approvers: [keys[0]!.address, keys[0]!.address.toLowerCase() as Address] }, "distinct"],
        [{ ...rule, approvers: [zeroAddress, keys[0]!.address] }, "zero address"],
        [{ ...rule, thresholds: [rule.thresholds[0]!, rule.thresholds[0]!] }, "each token once"],
        [{ ...rule, thresholds: [{ token: usdc, units: -1n }] }, "uint256"]
      ]
      for (const [r, why] of bad) {
        assert.include(invalidRule(r), why)
        assert.throws(() => approvalTerms(r), why)
      }
    }))

  it.effect("at or below the threshold no approval is needed; above it, for other tokens and other calls, it is", () =>
    Effect.gen(function*() {
      const now = yield* Effect.promise(chainNow)
      const free = [transferOf(usdc, someone, 5_000_000n), transferOf(usdc, someone, 0n), transferOf(usdt, someone, 1_000_000n)]
      const gated: Array<Execution> = [
        transferOf(usdc, someone, 5_000_001n), // one unit over USDC's own threshold
        transferOf(usdt, someone, 1_000_001n), // USDT's, though under USDC's
        transferOf(someone, someone, 1n), // a token without a threshold
        { ...transferOf(usdc, someone, 1n), value: 1n }, // native value on a transfer
        { target: usdc, value: 0n, callData: concat([transferOf(usdc, someone, 1n).callData, "0x00"]) }, // not exactly transfer
        { target: usdc, value: 0n, callData: "0x095ea7b3" }, // another selector, short
        { target: usdc, value: 0n, callData: concat(["0x095ea7b3", pad(someone, { size: 32 }), pad("0x01", { size: 32 })]) } // approve(someone, 1)
      ]
      for (const execution of free) {
        assert.isFalse(needsApproval(rule, execution))
        assert.strictEqual(yield* both(rule, execution, undefined, { now }), "ok")
        const onChain = yield* Effect.promise(() => client.readContract({ address: enforcer, abi: approvalEnforcerAbi, functionName: "needsApproval", args: [terms, packed(execution)] }))
        assert.isFalse(onChain)
      }
      for (const execution of gated) {
        assert.isTrue(needsApproval(rule, execution), execution.callData)
        assert.strictEqual(yield* both(rule, execution, undefined, { now }), "ApprovalEnforcer:not-enough-approvals")
        const onChain = yield* Effect.promise(() => client.readContract({ address: enforcer, abi: approvalEnforcerAbi, functionName: "needsApproval", args: [terms, packed(execution)] }))
        assert.isTrue(onChain)
      }
      // A rule with no token at all gates everything; the first entry naming a token is the one read.
      const none: ApprovalRule = { ...rule, thresholds: [] }
      assert.strictEqual(yield* both(none, transferOf(usdc, someone, 0n), undefined, { now }), "ApprovalEnforcer:not-enough-approvals")
      const twice = concat([approvalTerms({ ...rule, thresholds: [{ token: usdc, units: 1n }] }), encodePacked(["address", "uint256"], [usdc, 100n])])
      assert.strictEqual(yield* Effect.promise(() => before(twice, "0x", packed(transferOf(usdc, someone, 2n)))), "ApprovalEnforcer:not-enough-approvals")
      assert.strictEqual(yield* Effect.promise(() => before(twice, "0x", packed(transferOf(usdc, someone, 1n)))), "ok")
    }))

  it.effect("m distinct named approvers with valid signatures pass; fewer, twice, a stranger or a wrong digest do not", () =>
    Effect.gen(function*() {
      const now = yield* Effect.promise(chainNow)
      const deadline = now + 3600n
      const nonce = randomApprovalNonce()
      const [a, b, c] = keys as [typeof keys[0], typeof keys[0], typeof keys[0]]
      assert.strictEqual(yield* both(rule, sixUsdc, yield* Effect.promise(() => approve([a, b], sixUsdc, nonce, deadline)), { now }), "ok")
      assert.strictEqual(yield* both(rule, sixUsdc, yield* Effect.promise(() => approve([c, a, b], sixUsdc, nonce, deadline)), { now }), "ok")
      // Too few: none, one of two.
      assert.strictEqual(yield* both(rule, sixUsdc, { nonce, deadline, approvals: [] }, { now }), "ApprovalEnforcer:not-enough-approvals")
      assert.strictEqual(yield* both(rule, sixUsdc, yield* Effect.promise(() => approve([b], sixUsdc, nonce, deadline)), { now }), "ApprovalEnforcer:not-enough-approvals")
      // The same approver twice (also with different case), a stranger's signature, a stranger claiming a named address.
      const aTwice = yield* Effect.promise(() => approve([a, a], sixUsdc, nonce, deadline))
      assert.strictEqual(yield* both(rule, sixUsdc, aTwice, { now }), "ApprovalEnforcer:duplicate-approver")
      assert.strictEqual(
        yield* both(rule, sixUsdc, { ...aTwice, approvals: [aTwice.approvals[0]!, { ...aTwice.approvals[1]!, approver: a.address.toLowerCase() as Address }] }, { now }),
        "ApprovalEnforcer:duplicate-approver"
      )
      assert.strictEqual(yield* both(rule, sixUsdc, yield* Effect.promise(() => approve([a, stranger], sixUsdc, nonce, deadline)), { now }), "ApprovalEnforcer:approver-not-named")
      const forged = yield* Effect.promise(() => approve([a, stranger], sixUsdc, nonce, deadline))
      assert.strictEqual(
        yield* both(rule, sixUsdc, { ...forged, approvals: [forged.approvals[0]!, { approver: b.address, signature: forged.approvals[1]!.signature }] }, { now }),
        "ApprovalEnforcer:invalid-signature"
      )
      // Signed for something else: another amount, recipient, token, grant, nonce or deadline.
      const otherDigests = [
        yield* Effect.promise(() => approve([a, b], transferOf(usdc, someone, 6_000_001n), nonce, deadline)),
        yield* Effect.promise(() => approve([a, b], transferOf(usdc, stranger.address, 6_000_000n), nonce, deadline)),
        yield* Effect.promise(() => approve([a, b], transferOf(usdt, someone, 6_000_000n), nonce, deadline)),
        yield* Effect.promise(() => approve([a, b], sixUsdc, nonce, deadline, keccak256(toHex("another grant")))),
        { ...(yield* Effect.promise(() => approve([a, b], sixUsdc, nonce + 1n, deadline))), nonce },
        { ...(yield* Effect.promise(() => approve([a, b], sixUsdc, nonce, deadline + 1n))), deadline }
      ]
      for (const set of otherDigests) assert.strictEqual(yield* both(rule, sixUsdc, set, { now }), "ApprovalEnforcer:invalid-signature")
    }))

  it.effect("ECDSA: 65 bytes, low s, v 27 or 28, never the zero address", () =>
    Effect.gen(function*() {
      const now = yield* Effect.promise(chainNow)
      const deadline = now + 3600n
      const nonce = randomApprovalNonce()
      const [a, b] = keys as [typeof keys[0], typeof keys[0]]
      const good = yield* Effect.promise(() => approve([a, b], sixUsdc, nonce, deadline))
      const withB = (signature: Hex): ApprovalSet => ({ ...good, approvals: [good.approvals[0]!, { approver: b.address, signature }] })
      const sig = parseSignature(good.approvals[1]!.signature)
      // The high-s twin recovers to the same key: refused (malleability).
      const n = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n
      const twin = serializeSignature({ r: sig.r, s: toHex(n - BigInt(sig.s), { size: 32 }), yParity: sig.yParity === 0 ? 1 : 0 })
      assert.strictEqual(yield* both(rule, sixUsdc, withB(twin), { now }), "ApprovalEnforcer:invalid-signature")
      assert.strictEqual(yield* both(rule, sixUsdc, withB(good.approvals[1]!.signature.slice(0, -2) as Hex), { now }), "ApprovalEnforcer:invalid-signature")
      assert.strictEqual(yield* both(rule, sixUsdc, withB(concat([good.approvals[1]!.signature, "0x00"])), { now }), "ApprovalEnforcer:invalid-signature")
      // v as 0/1 (yParity) is not what ecrecover takes.
      const parity = concat([sig.r, sig.s, toHex(Number(sig.yParity), { size: 1 })])
      assert.strictEqual(yield* both(rule, sixUsdc, withB(parity), { now }), "ApprovalEnforcer:invalid-signature")
      // A rule naming the zero address (the encoder refuses it; hand-made terms): a signature that
      // recovers to nothing must not count as the zero address's.
      const zeroRule: ApprovalRule = { required: 1, approvers: [zeroAddress], thresholds: [] }
      const zeroTerms = encodePacked(["uint8", "uint8", "address"], [1, 1, zeroAddress])
      const nothing = concat([pad("0x00", { size: 32 }), pad("0x01", { size: 32 }), "0x1b"])
      const zeroSet = { nonce, deadline, approvals: [{ approver: zeroAddress, signature: nothing }] }
      assert.strictEqual(yield* Effect.promise(() => before(zeroTerms, approvalArgs(zeroSet), packed(sixUsdc))), "ApprovalEnforcer:invalid-signature")
      const chainService = yield* Chain
      const offChain = yield* verifyApprovals(chainService, {
        chainId: net.chainId, enforcer, caller: zeroAddress, delegationHash, rule: zeroRule, execution: sixUsdc, set: zeroSet, nowSeconds: now, redeemer: someone
      })
      assert.deepStrictEqual(offChain, { ok: false, reason: "ApprovalEnforcer:invalid-signature", approver: zeroAddress })
    }))

  it.effect("ERC-1271: a smart-account approver vouches through isValidSignature; a refusal, a revert or no answer is invalid", () =>
    Effect.gen(function*() {
      const now = yield* Effect.promise(chainNow)
      const deadline = now + 3600n
      const nonce = randomApprovalNonce()
      const smart = yield* Effect.promise(deployedAccount)
      const silent = privateKeyToAccount(generatePrivateKey()).address
      // Code that stops at once: the call succeeds with no return data.
      yield* Effect.promise(() => client.request({ method: "anvil_setCode" as never, params: [silent, "0x00"] as never }))
      const a = keys[0]!
      const r: ApprovalRule = { required: 2, approvers: [a.address, smart.address, usdt, silent], thresholds: [] }
      const byOwner = yield* Effect.promise(() => approve([a, smart.account], sixUsdc, nonce, deadline))
      const as = (approver: Address, signature: Hex): ApprovalSet => ({ ...byOwner, approvals: [byOwner.approvals[0]!, { approver, signature }] })
      const ownerSig = byOwner.approvals[1]!.signature
      assert.strictEqual(yield* both(r, sixUsdc, as(smart.address, ownerSig), { now }), "ok")
      // The account refuses a signature that is not its owner's (0xffffffff), and a short one.
      const strangerSig = (yield* Effect.promise(() => approve([stranger], sixUsdc, nonce, deadline))).approvals[0]!.signature
      assert.strictEqual(yield* both(r, sixUsdc, as(smart.address, strangerSig), { now }), "ApprovalEnforcer:invalid-signature")
      assert.strictEqual(yield* both(r, sixUsdc, as(smart.address, "0x1234"), { now }), "ApprovalEnforcer:invalid-signature")
      // A contract without isValidSignature (the token: reverts) and one answering nothing.
      assert.strictEqual(yield* both(r, sixUsdc, as(usdt, ownerSig), { now }), "ApprovalEnforcer:invalid-signature")
      assert.strictEqual(yield* both(r, sixUsdc, as(silent, ownerSig), { now }), "ApprovalEnforcer:invalid-signature")
    }))

  it.effect("no one approves their own redemption: the redeemer, its owner key, or another account of that key is refused (issue 41)", () =>
    Effect.gen(function*() {
      const now = yield* Effect.promise(chainNow)
      const deadline = now + 3600n
      const nonce = randomApprovalNonce()
      // The agent: a smart account (the redeemer) owned by its key, and a second account of the same key.
      const agent = yield* Effect.promise(deployedAccount)
      const stack = makeHybridDeleGator({ chainId: net.chainId, entryPoint: net.entryPoint, environment: net.delegation })
      const second = yield* stack.counterfactualAccount(agent.account.address, 1n)
      const receipt = yield* Effect.promise(async () =>
        client.waitForTransactionReceipt({ hash: await agent.wallet.sendTransaction({ to: second.factory, data: second.factoryData }) }))
      assert.strictEqual(receipt.status, "success")
      const other = yield* Effect.promise(deployedAccount)
      const a = keys[0]!
      const r: ApprovalRule = { required: 1, approvers: [agent.account.address, agent.address, second.address, a.address, other.address], thresholds: [] }
      const signedBy = (signer: { readonly address: Address; readonly signTypedData: (td: never) => Promise<Hex> }, as: Address = signer.address) =>
        Effect.promise(() => approve([signer], sixUsdc, nonce, deadline)).pipe(
          Effect.map((set): ApprovalSet => ({ ...set, approvals: [{ approver: as, signature: set.approvals[0]!.signature }] }))
        )
      const byKey = yield* signedBy(agent.account)
      // Each signature is valid (an unrelated redeemer takes it), but not when the agent redeems.
      for (const [set, what] of [
        [byKey, "the redeemer's owner key"],
        [{ ...byKey, approvals: [{ approver: agent.address, signature: byKey.approvals[0]!.signature }] }, "the redeemer itself (ERC-1271)"],
        [{ ...byKey, approvals: [{ approver: second.address, signature: byKey.approvals[0]!.signature }] }, "another account of the redeemer's key"]
      ] as const) {
        assert.strictEqual(yield* both(r, sixUsdc, set, { now, redeemer: someone }), "ok", `${what}: valid for another redeemer`)
        assert.strictEqual(yield* both(r, sixUsdc, set, { now, redeemer: agent.address }), "ApprovalEnforcer:approver-is-redeemer", what)
      }
      // An EOA redeemer approving itself; and its own account (owned by the redeemer) approving for it.
      assert.strictEqual(yield* both(r, sixUsdc, byKey, { now, redeemer: agent.account.address }), "ApprovalEnforcer:approver-is-redeemer")
      const byAgentAccount = { ...byKey, approvals: [{ approver: agent.address, signature: byKey.approvals[0]!.signature }] }
      assert.strictEqual(yield* both(r, sixUsdc, byAgentAccount, { now, redeemer: agent.account.address }), "ApprovalEnforcer:approver-is-redeemer")
      // Anyone else still approves for the agent: a key and a smart account of another key.
      assert.strictEqual(yield* both(r, sixUsdc, yield* signedBy(a), { now, redeemer: agent.address }), "ok")
      assert.strictEqual(yield* both(r, sixUsdc, yield* signedBy(other.account, other.address), { now, redeemer: agent.address }), "ok")
      // A redeemer whose owner() is no address, or that answers nothing, has no owner to compare (and cannot break the check).
      const odd = privateKeyToAccount(generatePrivateKey()).address
      yield* Effect.promise(() => client.request({ method: "anvil_setCode" as never, params: [odd, "0x00"] as never }))
      assert.strictEqual(yield* both(r, sixUsdc, byKey, { now, redeemer: odd }), "ok")
      assert.strictEqual(yield* Effect.promise(() => client.readContract({ address: enforcer, abi: approvalEnforcerAbi, functionName: "ownerOf", args: [agent.address] })), agent.account.address)
      assert.strictEqual(yield* Effect.promise(() => client.readContract({ address: enforcer, abi: approvalEnforcerAbi, functionName: "ownerOf", args: [odd] })), zeroAddress)
    }))

  it.effect("the deadline holds, and a nonce is spent per caller and delegation: one approval, one execution", () =>
    Effect.gen(function*() {
      const now = yield* Effect.promise(chainNow)
      const [a, b] = keys as [typeof keys[0], typeof keys[0]]
      const late = yield* Effect.promise(() => approve([a, b], sixUsdc, randomApprovalNonce(), now - 1n))
      assert.strictEqual(yield* both(rule, sixUsdc, late, { now }), "ApprovalEnforcer:expired")

      // A caller of its own (as the DelegationManager is), sending beforeHook for real.
      const caller = yield* Effect.promise(fundedKey)
      const nonce = randomApprovalNonce()
      const set = yield* Effect.promise(() => approve([a, b], sixUsdc, nonce, now + 3600n))
      assert.strictEqual(yield* both(rule, sixUsdc, set, { now, caller: caller.account.address }), "ok")
      const hash = yield* Effect.promise(() =>
        caller.wallet.writeContract({
          address: enforcer,
          abi: approvalEnforcerAbi,
          functionName: "beforeHook",
          args: [terms, approvalArgs(set), SINGLE_DEFAULT, packed(sixUsdc), delegationHash, someone, someone]
        })
      )
      const receipt = yield* Effect.promise(() => client.waitForTransactionReceipt({ hash }))
      assert.strictEqual(receipt.status, "success")
      const event = decodeEventLog({ abi: approvalEnforcerAbi, ...receipt.logs[0]! })
      assert.deepStrictEqual(event, { eventName: "ApprovalSpent", args: { sender: caller.account.address, delegationHash, nonce } })
      const spent = (who: Address, h: Hash) =>
        Effect.promise(() => client.readContract({ address: enforcer, abi: approvalEnforcerAbi, functionName: "spent", args: [who, h, nonce] }))
      assert.isTrue(yield* spent(caller.account.address, delegationHash))
      // The same approval again from that caller: spent. Another caller's nonces are its own.
      assert.strictEqual(yield* both(rule, sixUsdc, set, { now, caller: caller.account.address }), "ApprovalEnforcer:nonce-used")
      assert.isFalse(yield* spent(someone, delegationHash))
      assert.strictEqual(yield* both(rule, sixUsdc, set, { now, caller: someone }), "ok")
      // Another delegation's same nonce is unspent (its approvals name its own hash).
      const other = keccak256(toHex("another grant")) as Hash
      assert.isFalse(yield* spent(caller.account.address, other))
      const otherSet = yield* Effect.promise(() => approve([a, b], sixUsdc, nonce, now + 3600n, other))
      assert.strictEqual(yield* both(rule, sixUsdc, otherSet, { now, caller: caller.account.address, hash: other }), "ok")
    }))

  it.effect("single call, default exec type only; malformed terms and execution data are refused", () =>
    Effect.gen(function*() {
      const exec = packed(transferOf(usdc, someone, 1n))
      assert.strictEqual(yield* Effect.promise(() => before(terms, "0x", exec, { mode: BATCH })), "ApprovalEnforcer:invalid-call-type")
      assert.strictEqual(yield* Effect.promise(() => before(terms, "0x", exec, { mode: SINGLE_TRY })), "ApprovalEnforcer:invalid-execution-type")
      assert.strictEqual(yield* Effect.promise(() => before(terms, "0x", usdc)), "ApprovalEnforcer:invalid-execution-length")
      const malformed: Array<Hex> = [
        "0x",
        "0x01", // no n
        encodePacked(["uint8", "uint8"], [0, 0]), // m = 0
        encodePacked(["uint8", "uint8", "address"], [0, 1, someone]), // m = 0 of 1
        encodePacked(["uint8", "uint8", "address"], [2, 1, someone]), // m > n
        encodePacked(["uint8", "uint8", "address"], [1, 2, someone]), // fewer approvers than n
        concat([terms, "0x00"]), // a token entry cut short
        terms.slice(0, -2) as Hex
      ]
      for (const t of malformed) {
        assert.strictEqual(yield* Effect.promise(() => before(t, "0x", exec)), "ApprovalEnforcer:invalid-terms", t)
      }
      const viaView = (t: Hex, e: Hex) =>
        client.readContract({ address: enforcer, abi: approvalEnforcerAbi, functionName: "needsApproval", args: [t, e] }).then(
          () => "ok",
          (err: unknown) => {
            const revert = err instanceof BaseError ? err.walk((x) => x instanceof ContractFunctionRevertedError) : undefined
            return revert instanceof ContractFunctionRevertedError ? revert.reason : String(err)
          }
        )
      assert.strictEqual(yield* Effect.promise(() => viaView("0x01", exec)), "ApprovalEnforcer:invalid-terms")
      assert.strictEqual(yield* Effect.promise(() => viaView(terms, usdc)), "ApprovalEnforcer:invalid-execution-length")
      // The other hooks do nothing, whatever they are given.
      for (const functionName of ["beforeAllHook", "afterHook", "afterAllHook"] as const) {
        yield* Effect.promise(() =>
          client.readContract({ address: enforcer, abi: approvalEnforcerAbi, functionName, args: ["0x", "0x", BATCH, "0x", delegationHash, someone, someone] })
        )
      }
    }))
})

describe("ApprovalEnforcer typed data", () => {
  it("an approver's wallet signature (eth_signTypedData_v4) recovers over the contract's digest", async () => {
    const td = approvalTypedData(request(sixUsdc, 1n, 2n))
    const signature = await keys[0]!.signTypedData(td)
    assert.strictEqual(await recoverAddress({ hash: approvalDigest(request(sixUsdc, 1n, 2n)), signature }), keys[0]!.address)
  })
})
