/**
 * Gas paid in the stablecoins through the local TokenPaymaster, with real signatures on
 * the run's local network: USDC by permit (two signatures), USDT by an approve batched
 * into a sponsored first operation then by allowance (one signature each), the maximum
 * charge taken in validation and the unused part refunded, a tampered paymasterData refused by the relay, and
 * an account without tokens whose build's simulation predicts failure.
 */
import { assert, layer } from "@effect/vitest"
import { Duration, Effect, Layer, Schedule } from "effect"
import {
  type Address,
  concat,
  encodeFunctionData,
  erc20Abi,
  type Hash,
  type Hex,
  hashTypedData,
  maxUint256,
  parseEventLogs,
  parseUnits
} from "viem"
import { privateKeyToAccount } from "viem/accounts"
import { withPermitSignature } from "../../src/builds/GasPayment.ts"
import { OperationBuilder } from "../../src/builds/OperationBuilder.ts"
import { AccountStack } from "../../src/chain/Accounts4337.ts"
import { Chain } from "../../src/chain/Chain.ts"
import { tokenPaymasterAbi } from "../../src/chain/contracts/TokenPaymaster.ts"
import { Network } from "../../src/chain/Network.ts"
import { permitSignaturePrefix, permitTypedData } from "../../src/chain/TokenPaymaster.ts"
import { fromWire } from "../../src/builds/Wire.ts"
import type { Eip712TypedData, UserOperation } from "../../src/domain/Operations.ts"
import { OperationBuilderLive } from "../../src/userops/Live.ts"
import { mint } from "../support/TestChain.ts"
import { TestServerLive } from "../support/TestServer.ts"
import { auditEntriesOf, newUser, settle, signBuild } from "./helpers.ts"

process.env.DO_NOT_TRACK = "1"

const Live = OperationBuilderLive.pipe(
  Layer.provideMerge(TestServerLive({ config: { RELAY_RECONCILE_INTERVAL: "300 millis" } }))
)

const transfer = (to: Address, amount: bigint) =>
  encodeFunctionData({ abi: erc20Abi, functionName: "transfer", args: [to, amount] })

/** Mints and waits for the mint to be mined. */
const funded = (token: "usd" | "usdt", to: Address, amount: number) =>
  Effect.gen(function*() {
    const chain = yield* Chain
    const hash = yield* mint(token, to, amount)
    yield* chain.getTransactionReceipt(hash).pipe(
      Effect.orDie,
      Effect.flatMap((r) => (r === null ? Effect.fail("pending" as const) : Effect.succeed(r))),
      Effect.retry(Schedule.spaced(Duration.millis(50)))
    )
  })

const signTyped = (key: Hex, typedData: Eip712TypedData) =>
  Effect.promise(() => privateKeyToAccount(key).signTypedData(typedData as never))

/** The paymaster's `GasCharged` of a bundle transaction. */
const gasChargedIn = (txHash: string) =>
  Effect.gen(function*() {
    const chain = yield* Chain
    const receipt = yield* chain.getTransactionReceipt(txHash as Hash).pipe(Effect.orDie)
    const events = parseEventLogs({ abi: tokenPaymasterAbi, logs: receipt!.logs, eventName: "GasCharged" })
    assert.strictEqual(events.length, 1)
    return events[0]!.args
  })

/** The paymaster's `GasRefunded` of a bundle transaction. */
const gasRefundedIn = (txHash: string) =>
  Effect.gen(function*() {
    const chain = yield* Chain
    const receipt = yield* chain.getTransactionReceipt(txHash as Hash).pipe(Effect.orDie)
    const events = parseEventLogs({ abi: tokenPaymasterAbi, logs: receipt!.logs, eventName: "GasRefunded" })
    assert.strictEqual(events.length, 1)
    return events[0]!.args
  })

layer(Live, { excludeTestServices: true, timeout: Duration.seconds(90) })("gas paid in stablecoins", (it) => {
  it.effect("USDC by permit: two signatures, mined, the USDC balance pays the charged fee, no ETH moves", () =>
    Effect.gen(function*() {
      const user = yield* newUser
      const chain = yield* Chain
      const network = yield* Network
      const builder = yield* OperationBuilder
      const stack = yield* AccountStack
      const sender = user.account.address as Address
      const usd = network.tokens.usd
      const paymaster = network.tokenPaymaster!.address
      const recipient = privateKeyToAccount(user.key).address
      yield* funded("usd", sender, 100)
      const ethBefore = yield* chain.nativeBalance(sender)
      const paymasterUsdBefore = yield* chain.erc20Balance(usd.address, paymaster)

      const built = yield* builder.build({
        account: user.account,
        intentType: "send",
        calls: [{ to: usd.address, data: transfer(recipient, 1_000_000n) }],
        humanSummary: "Send 1 USDC to the owner",
        gasToken: "USDC"
      })
      const build = built.build
      const permit = build.gasPermit
      assert.isNotNull(permit)
      assert.isNull(build.usdtApproval)
      assert.isFalse(build.gasless)
      assert.isTrue(build.simulation?.willSucceed, build.simulation?.warnings.join("; "))
      assert.strictEqual(build.simulation?.gas.method, "token_permit")
      assert.isFalse(build.simulation?.gas.sponsored)
      assert.strictEqual(build.simulation?.gas.cost.token.symbol, "USDC")
      assert.strictEqual(build.userOp.paymaster, paymaster.toLowerCase())
      assert.strictEqual(build.userOp.paymasterData, permit!.signaturePrefix)
      assert.strictEqual(permit!.paymaster, paymaster.toLowerCase())
      assert.strictEqual(permit!.token, usd.address.toLowerCase())
      assert.strictEqual(permit!.tokenName, "USD Coin")
      assert.strictEqual(permit!.tokenVersion, "1")
      assert.strictEqual(permit!.permitNonce, "0")
      assert.isAbove(permit!.estimatedFee, 0)
      assert.strictEqual(permit!.estimatedFee, build.simulation?.gas.cost.amount)
      // The digest is the token's EIP-2612 Permit of the account's tokens to the paymaster.
      const expectedDigest = hashTypedData(permitTypedData({
        chainId: network.chainId,
        token: usd,
        owner: sender,
        spender: paymaster,
        value: BigInt(permit!.permitAmount),
        nonce: 0n,
        deadline: BigInt(permit!.permitDeadline)
      }))
      assert.strictEqual(permit!.permitDigest, expectedDigest)
      assert.strictEqual(
        permit!.signaturePrefix,
        permitSignaturePrefix(usd.address, BigInt(permit!.permitAmount), BigInt(permit!.permitDeadline)).toLowerCase()
      )

      // Signature 1: the permit digest, by the owner key (checked by the account's ERC-1271).
      const permitSignature = yield* Effect.promise(() =>
        privateKeyToAccount(user.key).sign({ hash: permit!.permitDigest as Hash })
      )
      const attached = withPermitSignature(build, permitSignature)
      // The build's hash was stale: the attached paymasterData changes it.
      assert.notStrictEqual(attached.userOpHash, build.userOpHash)
      assert.strictEqual(
        hashTypedData(attached.typedData as never),
        hashTypedData(stack.userOperationTypedData(fromWire(attached.userOp)))
      )
      // Signature 2: the operation, over the attached paymasterData.
      const signature = yield* signTyped(user.key, attached.typedData!)
      const submitted = yield* user.api.userops.submit({ payload: { ...attached.userOp, signature } })
      assert.strictEqual(submitted.userOpHash, attached.userOpHash)
      const receipt = yield* settle(user.api, submitted.userOpId)
      assert.strictEqual(receipt.status, "included", receipt.reason)
      assert.strictEqual(receipt.outcome, "mined")
      assert.strictEqual((yield* auditEntriesOf(submitted.userOpId)).length, 1)

      const charged = yield* gasChargedIn(receipt.transactionHash!)
      assert.strictEqual(charged.sender.toLowerCase(), sender.toLowerCase())
      assert.strictEqual(charged.token.toLowerCase(), usd.address.toLowerCase())
      assert.isTrue(charged.tokenAmount > 0n)
      assert.isTrue(charged.tokenAmount <= BigInt(permit!.permitAmount))
      const usdAfter = yield* chain.erc20Balance(usd.address, sender)
      assert.strictEqual(usdAfter, parseUnits("100", 6) - 1_000_000n - charged.tokenAmount)
      assert.strictEqual(yield* chain.erc20Balance(usd.address, paymaster), paymasterUsdBefore + charged.tokenAmount)
      // The permit's whole amount was taken in validation (the allowance is spent), the unused part refunded.
      assert.strictEqual(yield* chain.erc20Allowance(usd.address, sender, paymaster), 0n)
      const refunded = yield* gasRefundedIn(receipt.transactionHash!)
      assert.strictEqual(charged.tokenAmount + refunded.tokenAmount, BigInt(permit!.permitAmount))
      assert.strictEqual(refunded.sender.toLowerCase(), sender.toLowerCase())
      assert.strictEqual(yield* chain.nativeBalance(sender), ethBefore)
      assert.strictEqual(ethBefore, 0n)
      assert.strictEqual(yield* chain.permitNonce(usd.address, sender), 1n)
    }))

  it.effect("USDT with no allowance: the approve is batched into a sponsored first operation; the next pays in USDT with the refund", () =>
    Effect.gen(function*() {
      const user = yield* newUser
      const chain = yield* Chain
      const network = yield* Network
      const builder = yield* OperationBuilder
      const stack = yield* AccountStack
      const sender = user.account.address as Address
      const usdt = network.tokens.usdt
      const paymaster = network.tokenPaymaster!.address
      yield* funded("usdt", sender, 50)
      const recipient = privateKeyToAccount(user.key).address

      const built = yield* builder.build({
        account: user.account,
        intentType: "send",
        calls: [{ to: usdt.address, data: transfer(recipient, 2_000_000n) }],
        humanSummary: "Send 2 USDT to the owner",
        gasToken: "USDT"
      })
      const build = built.build
      const approval = build.usdtApproval
      assert.isNotNull(approval)
      assert.isNull(build.gasPermit)
      assert.isTrue(build.simulation?.willSucceed, build.simulation?.warnings.join("; "))
      // The paymaster pre-charges in validation: the allowance must exist before, so this operation sets it, sponsored.
      assert.strictEqual(build.simulation?.gas.method, "sponsored")
      assert.isTrue(build.gasless)
      assert.strictEqual(approval!.token, usdt.address.toLowerCase())
      assert.strictEqual(approval!.paymaster, paymaster.toLowerCase())
      assert.strictEqual(BigInt(approval!.amount), maxUint256)
      assert.strictEqual(approval!.calls.length, 1)
      assert.strictEqual(
        approval!.calls[0]!.data,
        encodeFunctionData({ abi: erc20Abi, functionName: "approve", args: [paymaster, maxUint256] })
      )
      // The call data is the approve, then the send.
      const decoded = stack.decodeExecute(build.userOp.callData as Hex)
      assert.deepStrictEqual(
        decoded?.map((c) => [c.to.toLowerCase(), c.data?.toLowerCase()]),
        [
          [usdt.address.toLowerCase(), approval!.calls[0]!.data],
          [usdt.address.toLowerCase(), transfer(recipient, 2_000_000n).toLowerCase()]
        ]
      )

      // One signature: the build's own typed data.
      const submitted = yield* user.api.userops.submit({ payload: yield* signBuild(build, user.key) })
      assert.strictEqual(submitted.userOpHash, build.userOpHash)
      const receipt = yield* settle(user.api, submitted.userOpId)
      assert.strictEqual(receipt.status, "included", receipt.reason)
      assert.strictEqual(yield* chain.erc20Balance(usdt.address, sender), parseUnits("48", 6))
      assert.strictEqual(yield* chain.erc20Allowance(usdt.address, sender, paymaster), maxUint256)
      assert.strictEqual(yield* chain.nativeBalance(sender), 0n)

      // The next build pays in USDT: the maximum taken in validation, the unused part refunded in postOp.
      const next = yield* builder.build({
        account: user.account,
        intentType: "send",
        calls: [{ to: usdt.address, data: transfer(recipient, 1n) }],
        humanSummary: "Send 0.000001 USDT",
        gasToken: "USDT"
      })
      assert.strictEqual(next.build.userOp.nonce, "1")
      assert.isNull(next.build.usdtApproval)
      assert.isFalse(next.build.gasless)
      assert.strictEqual(next.build.simulation?.gas.method, "token_allowance")
      const paymasterBefore = yield* chain.erc20Balance(usdt.address, paymaster)
      const second = yield* user.api.userops.submit({ payload: yield* signBuild(next.build, user.key) })
      const secondReceipt = yield* settle(user.api, second.userOpId)
      assert.strictEqual(secondReceipt.status, "included", secondReceipt.reason)
      const charged = yield* gasChargedIn(secondReceipt.transactionHash!)
      const refunded = yield* gasRefundedIn(secondReceipt.transactionHash!)
      assert.strictEqual(charged.token.toLowerCase(), usdt.address.toLowerCase())
      assert.isTrue(charged.tokenAmount > 0n)
      assert.isTrue(refunded.tokenAmount > 0n)
      // What was taken in validation: the paymaster's tokenCost of the operation's maximum cost (the build's estimate).
      assert.strictEqual(
        charged.tokenAmount + refunded.tokenAmount,
        parseUnits(String(next.build.simulation!.gas.cost.amount), 6)
      )
      assert.strictEqual(yield* chain.erc20Balance(usdt.address, sender), parseUnits("48", 6) - 1n - charged.tokenAmount)
      assert.strictEqual(yield* chain.erc20Balance(usdt.address, paymaster), paymasterBefore + charged.tokenAmount)
      assert.strictEqual(yield* chain.erc20Allowance(usdt.address, sender, paymaster), maxUint256)
    }))

  it.effect("the relay accepts only the build's permit prefix followed by a 65-byte signature", () =>
    Effect.gen(function*() {
      const user = yield* newUser
      const network = yield* Network
      const builder = yield* OperationBuilder
      const stack = yield* AccountStack
      const sender = user.account.address as Address
      const usd = network.tokens.usd
      yield* funded("usd", sender, 20)
      const { build } = yield* builder.build({
        account: user.account,
        intentType: "send",
        calls: [{ to: usd.address, data: transfer(privateKeyToAccount(user.key).address, 1n) }],
        humanSummary: "Send 0.000001 USDC",
        gasToken: "USDC"
      })
      const permit = build.gasPermit!
      const permitSignature = yield* Effect.promise(() =>
        privateKeyToAccount(user.key).sign({ hash: permit.permitDigest as Hash })
      )
      // Each signed for what it carries, so only the relay's rule can refuse it.
      const signedWith = (paymasterData: Hex) =>
        Effect.gen(function*() {
          const op: UserOperation = { ...build.userOp, paymasterData }
          const signature = yield* Effect.promise(() =>
            privateKeyToAccount(user.key).signTypedData(stack.userOperationTypedData(fromWire(op)) as never)
          )
          return { ...op, signature }
        })
      const refused = (paymasterData: Hex) =>
        Effect.gen(function*() {
          const error = yield* user.api.userops.submit({ payload: yield* signedWith(paymasterData) }).pipe(Effect.flip)
          assert.strictEqual(error._tag, "BadRequest")
          assert.include((error as { message: string }).message, "signaturePrefix")
        })
      // Another prefix (a larger permit amount), with a real signature.
      yield* refused(concat([
        permitSignaturePrefix(usd.address, BigInt(permit.permitAmount) + 1n, BigInt(permit.permitDeadline)),
        permitSignature
      ]))
      // The prefix alone (permit not attached), and one byte too many.
      yield* refused(permit.signaturePrefix as Hex)
      yield* refused(concat([permit.signaturePrefix as Hex, permitSignature, "0x00"]))
      // Allowance mode instead of the permit.
      yield* refused(concat(["0x00", usd.address]))
      // The right one goes through.
      const attached = withPermitSignature(build, permitSignature)
      const ok = yield* user.api.userops.submit({
        payload: { ...attached.userOp, signature: yield* signTyped(user.key, attached.typedData!) }
      })
      assert.strictEqual((yield* settle(user.api, ok.userOpId)).status, "included")
    }))

  it.effect("an account without enough tokens: the build's simulation says it will not succeed", () =>
    Effect.gen(function*() {
      const user = yield* newUser
      const network = yield* Network
      const builder = yield* OperationBuilder
      const recipient = privateKeyToAccount(user.key).address
      for (const [gasToken, token] of [["USDC", network.tokens.usd], ["USDT", network.tokens.usdt]] as const) {
        const { build } = yield* builder.build({
          account: user.account,
          intentType: "send",
          calls: [{ to: token.address, data: transfer(recipient, 0n) }],
          humanSummary: `Send 0 ${token.symbol}`,
          gasToken
        })
        assert.isFalse(build.simulation?.willSucceed, gasToken)
        assert.isDefined(build.simulation?.declineReason)
        // The paymaster's own verdict from the bundler's simulation.
        assert.isTrue(
          build.simulation?.warnings.some((w) => w.includes("TokenPaymaster: insufficient token balance")),
          build.simulation?.warnings.join("; ")
        )
      }
    }))

  it.effect("a risk-reducing build stays sponsored whatever gasToken says", () =>
    Effect.gen(function*() {
      const user = yield* newUser
      const builder = yield* OperationBuilder
      const { build } = yield* builder.build({
        account: user.account,
        intentType: "account_freeze",
        calls: [{ to: user.account.address as Address }],
        humanSummary: "Freeze",
        gasToken: "USDC"
      })
      assert.isTrue(build.gasless)
      assert.isNull(build.gasPermit)
      assert.strictEqual(build.simulation?.gas.method, "sponsored")
      assert.isTrue(build.simulation?.warnings.some((w) => w.includes("always sponsored")))
    }))
})
