/**
 * The relay on the run's local ERC-4337 network, through HTTP with the typed client and
 * real viem signatures: freeze / unfreeze executed on chain, a reverting call, a bad
 * signature, matching rules and a policy decline at submit.
 */
import { assert, layer } from "@effect/vitest"
import { Duration, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { type Address, encodeFunctionData, erc20Abi, type Hash, type Hex } from "viem"
import { generatePrivateKey } from "viem/accounts"
import { Chain } from "../../src/chain/Chain.ts"
import { Network } from "../../src/chain/Network.ts"
import { OperationBuilder } from "../../src/builds/OperationBuilder.ts"
import { userOpHashOf, fromWire } from "../../src/builds/Wire.ts"
import { OperationBuilderLive } from "../../src/userops/Live.ts"
import { TestServerLive } from "../support/TestServer.ts"
import { auditEntriesOf, newUser, settle, signBuild } from "./helpers.ts"

process.env.DO_NOT_TRACK = "1"

const Live = OperationBuilderLive.pipe(
  Layer.provideMerge(TestServerLive({ config: { RELAY_RECONCILE_INTERVAL: "300 millis" } }))
)

const transfer = (to: Address, amount: bigint) =>
  encodeFunctionData({ abi: erc20Abi, functionName: "transfer", args: [to, amount] })

layer(Live, { excludeTestServices: true, timeout: Duration.seconds(60) })("relay on the local network", (it) => {
  it.effect("freeze: built, signed with viem, relayed, mined, read back; the flag flips only on execution; unfreeze too", () =>
    Effect.gen(function*() {
      const user = yield* newUser
      const chain = yield* Chain
      const network = yield* Network
      const rules = yield* user.api.accounts.getRules({ query: {} })
      assert.isFalse(rules.frozen)
      assert.include(rules.buildableIntents, "account_freeze")
      assert.notInclude(rules.buildableIntents, "account_unfreeze")

      const build = yield* user.api.accounts.buildRules({ payload: { intentType: "account_freeze" } })
      assert.strictEqual(build.intentType, "account_freeze")
      assert.isTrue(build.riskReducing)
      assert.isTrue(build.gasless)
      assert.isTrue(build.instant)
      assert.isNull(build.gasPermit)
      assert.isNull(build.usdtApproval)
      assert.isTrue(build.simulation?.willSucceed)
      assert.isTrue(build.simulation?.gas.sponsored)
      assert.strictEqual(build.userOp.sender, user.account.address)
      assert.strictEqual(build.userOp.nonce, "0")
      assert.isDefined(build.userOp.factory) // counterfactual: deployed by this operation
      assert.strictEqual(build.userOp.paymaster, network.paymaster!.address.toLowerCase())
      assert.strictEqual(build.userOp.signature, "0x")
      assert.strictEqual(build.userOpHash, userOpHashOf(fromWire(build.userOp), network.chainId, network.entryPoint))
      assert.include(build.humanSummary ?? "", "no live delegations")

      // Unsigned: refused.
      const unsigned = yield* user.api.userops.submit({ payload: build.userOp }).pipe(Effect.flip)
      assert.strictEqual(unsigned._tag, "BadRequest")

      const signed = yield* signBuild(build, user.key)
      const submitted = yield* user.api.userops.submit({ payload: signed })
      assert.strictEqual(submitted.status, "submitted")
      assert.strictEqual(submitted.outcome, "pending")
      assert.strictEqual(submitted.userOpHash, build.userOpHash)
      // Not frozen yet: the flag waits for execution.
      assert.isFalse((yield* user.api.accounts.getRules({ query: {} })).frozen)

      const receipt = yield* settle(user.api, submitted.userOpId)
      assert.strictEqual(receipt.status, "included")
      assert.strictEqual(receipt.outcome, "mined")
      assert.isDefined(receipt.transactionHash)
      assert.isDefined(receipt.blockNumber)
      assert.isDefined(receipt.auditEventId)
      const tx = yield* chain.getTransactionReceipt(receipt.transactionHash as Hash)
      assert.strictEqual(tx?.status, "success")
      assert.strictEqual(tx?.blockNumber.toString(), receipt.blockNumber)
      assert.isTrue(yield* chain.isDeployed(user.account.address as Address))

      const entries = yield* auditEntriesOf(submitted.userOpId)
      assert.strictEqual(entries.length, 1)
      assert.strictEqual(entries[0]!.status, "executed")
      assert.strictEqual(entries[0]!.id, receipt.auditEventId)
      assert.strictEqual(entries[0]!.tx_hash, receipt.transactionHash)
      const event = yield* user.api.activity.get({ params: { eventId: receipt.auditEventId! } })
      assert.strictEqual(event.action, "account_freeze")

      // Read back again: same receipt, still one entry.
      const again = yield* user.api.userops.get({ params: { userOpId: submitted.userOpId }, query: {} })
      assert.deepStrictEqual(again, receipt)
      const rulesAfter = yield* user.api.accounts.getRules({ query: {} })
      assert.isTrue(rulesAfter.frozen)
      // Frozen: the unfreeze, and only the risk-reducing sends and rule changes (withdraw-to-safety, a recovery's cancel).
      assert.deepStrictEqual(rulesAfter.buildableIntents, ["account_unfreeze", "send", "rules_update"])
      const accounts = yield* user.api.accounts.listAccounts()
      assert.strictEqual(accounts[0]!.deploymentStatus, "deployed")
      assert.isTrue(accounts[0]!.frozen)

      // Frozen: a normal build is declined, freezing again is a conflict.
      const builder = yield* OperationBuilder
      const declined = yield* builder.build({
        account: accounts[0]!,
        intentType: "send",
        calls: [{ to: network.tokens.usd.address, data: transfer(user.signer.address, 1n) }],
        humanSummary: "Send 0.000001 USDC"
      }).pipe(Effect.flip)
      assert.strictEqual(declined._tag, "OutOfScope")
      assert.strictEqual((declined as { declineReason?: string }).declineReason, "account_frozen")
      const conflict = yield* user.api.accounts.buildRules({ payload: { intentType: "account_freeze" } }).pipe(Effect.flip)
      assert.strictEqual(conflict._tag, "Conflict")

      // Unfreeze (the account is deployed now: no factory).
      const unfreeze = yield* user.api.accounts.buildRules({ payload: { intentType: "account_unfreeze" } })
      assert.isUndefined(unfreeze.userOp.factory)
      assert.strictEqual(unfreeze.userOp.nonce, "1")
      const unfrozen = yield* settle(user.api, (yield* user.api.userops.submit({ payload: yield* signBuild(unfreeze, user.key) })).userOpId)
      assert.strictEqual(unfrozen.status, "included")
      assert.isFalse((yield* user.api.accounts.getRules({ query: {} })).frozen)
      assert.strictEqual((yield* auditEntriesOf(unfrozen.userOpId)).length, 1)

      const devices = yield* user.api.accounts.listDevices({ query: {} })
      assert.deepStrictEqual(devices.map((d) => [d.address, d.role]), [[user.signer.address.toLowerCase(), "owner"]])
    }))

  it.effect("an inner call that reverts: failed / reverted, with transaction evidence, one audit entry", () =>
    Effect.gen(function*() {
      const user = yield* newUser
      const chain = yield* Chain
      const network = yield* Network
      const builder = yield* OperationBuilder
      // The account holds no USDC: the transfer reverts.
      const built = yield* builder.build({
        account: user.account,
        intentType: "send",
        calls: [{ to: network.tokens.usd.address, data: transfer(user.signer.address, 5_000_000n) }],
        humanSummary: "Send 5 USDC to the owner"
      })
      assert.isFalse(built.build.simulation?.willSucceed)
      assert.strictEqual(built.build.simulation?.declineReason, "execution_reverted")
      assert.isTrue(built.build.simulation?.warnings.some((w) => w.includes("insufficient balance")))

      const submitted = yield* user.api.userops.submit({ payload: yield* signBuild(built.build, user.key) })
      const receipt = yield* settle(user.api, submitted.userOpId)
      assert.strictEqual(receipt.status, "failed")
      assert.strictEqual(receipt.outcome, "reverted")
      assert.isDefined(receipt.transactionHash)
      const tx = yield* chain.getTransactionReceipt(receipt.transactionHash as Hash)
      assert.strictEqual(tx?.status, "success") // the bundle went through; the inner call reverted
      assert.strictEqual(yield* chain.entryPointNonce(user.account.address as Address), 1n)
      const entries = yield* auditEntriesOf(submitted.userOpId)
      assert.strictEqual(entries.length, 1)
      assert.strictEqual(entries[0]!.status, "failed")
      assert.strictEqual(entries[0]!.provenance, "onchain")
      assert.strictEqual(entries[0]!.tx_hash, receipt.transactionHash)
      // The reason in words (the token's own revert string), not raw revert data.
      assert.strictEqual(entries[0]!.decline_reason, "reverted: ERC20: insufficient balance")
    }))

  it.effect("a bad signature: rejected by the bundler, no chain trace, recorded once", () =>
    Effect.gen(function*() {
      const user = yield* newUser
      const chain = yield* Chain
      const build = yield* user.api.accounts.buildRules({ payload: { intentType: "account_freeze" } })
      const forged = yield* signBuild(build, generatePrivateKey())
      const receipt = yield* user.api.userops.submit({ payload: forged })
      assert.strictEqual(receipt.status, "failed")
      assert.strictEqual(receipt.outcome, "rejected")
      assert.include(receipt.reason ?? "", "AA24")
      // The bundler's code in fields of their own, not only inside the reason's words.
      assert.strictEqual(receipt.bundlerError?.rpcCode, -32507)
      assert.strictEqual(receipt.bundlerError?.aaCode, "AA24")
      assert.strictEqual(receipt.bundlerError?.reason, "invalid_signature")
      assert.include(receipt.bundlerError?.message ?? "", "AA24 signature error")
      assert.isUndefined(receipt.transactionHash)
      assert.isFalse(yield* chain.isDeployed(user.account.address as Address))
      assert.strictEqual(yield* chain.entryPointNonce(user.account.address as Address), 0n)
      const entries = yield* auditEntriesOf(receipt.userOpId)
      assert.strictEqual(entries.length, 1)
      assert.strictEqual(entries[0]!.status, "failed")
      assert.strictEqual(entries[0]!.provenance, "offchain_only")
      assert.strictEqual(entries[0]!.decline_reason, "invalid_signature")
      // The flag never moved; polling changes nothing.
      assert.deepStrictEqual(yield* user.api.userops.get({ params: { userOpId: receipt.userOpId }, query: {} }), receipt)
      assert.isFalse((yield* user.api.accounts.getRules({ query: {} })).frozen)
      // The same signed operation again is the same operation.
      assert.strictEqual((yield* user.api.userops.submit({ payload: forged })).userOpId, receipt.userOpId)
    }))

  it.effect("matching: no build → 404, changed call data → 400, unencodable values → 400, another signer's build → 404, unknown id → 404", () =>
    Effect.gen(function*() {
      const user = yield* newUser
      const other = yield* newUser
      const build = yield* user.api.accounts.buildRules({ payload: { intentType: "account_freeze" } })
      const signed = yield* signBuild(build, user.key)
      const noBuild = yield* user.api.userops.submit({ payload: { ...signed, nonce: "7" } }).pipe(Effect.flip)
      assert.strictEqual(noBuild._tag, "NotFound")
      const changed = yield* user.api.userops.submit({
        payload: { ...signed, callData: `${signed.callData}00` as Hex }
      }).pipe(Effect.flip)
      assert.strictEqual(changed._tag, "BadRequest")
      // Values viem cannot pack into the hash (gas limit ≥ 2^128, nonce ≥ 2^256): 400, not a 500.
      const hugeGas = yield* user.api.userops.submit({
        payload: { ...signed, callGasLimit: (2n ** 128n).toString() }
      }).pipe(Effect.flip)
      assert.strictEqual(hugeGas._tag, "BadRequest")
      const hugeNonce = yield* user.api.userops.submit({ payload: { ...signed, nonce: (2n ** 256n).toString() } }).pipe(Effect.flip)
      assert.strictEqual(hugeNonce._tag, "BadRequest")
      const foreign = yield* other.api.userops.submit({ payload: signed }).pipe(Effect.flip)
      assert.strictEqual(foreign._tag, "NotFound")
      const unknown = yield* user.api.userops.get({ params: { userOpId: "uop_nope" }, query: {} }).pipe(Effect.flip)
      assert.strictEqual(unknown._tag, "NotFound")
      // Nothing was stored for any of these.
      const ok = yield* user.api.userops.submit({ payload: signed })
      const hidden = yield* other.api.userops.get({ params: { userOpId: ok.userOpId }, query: {} }).pipe(Effect.flip)
      assert.strictEqual(hidden._tag, "NotFound")
      assert.strictEqual((yield* settle(user.api, ok.userOpId)).status, "included")
    }))

  it.effect("policy re-check at submit: an operation built before the freeze is declined (422 account_frozen) and recorded", () =>
    Effect.gen(function*() {
      const user = yield* newUser
      const network = yield* Network
      const builder = yield* OperationBuilder
      const freeze = yield* user.api.accounts.buildRules({ payload: { intentType: "account_freeze" } })
      assert.strictEqual((yield* settle(user.api, (yield* user.api.userops.submit({ payload: yield* signBuild(freeze, user.key) })).userOpId)).status, "included")
      // A send built while the account was not frozen (the flag is set aside for the build),
      // relayed after the freeze executed: the relay re-checks and declines it.
      const sql = yield* SqlClient.SqlClient
      yield* sql`UPDATE accounts SET frozen = false WHERE id = ${user.account.id}`
      const send = yield* builder.build({
        account: user.account,
        intentType: "send",
        calls: [{ to: network.tokens.usd.address, data: transfer(user.signer.address, 0n) }],
        humanSummary: "Send 0 USDC to the owner"
      })
      // The relay reads the flag with the build (one statement): it is the flag as it is now.
      const flagNow = builder.byHash(user.signer.address.toLowerCase(), network.chainId, send.build.userOpHash).pipe(
        Effect.map((builds) => builds.map((b) => b.accountFrozen))
      )
      assert.deepStrictEqual(yield* flagNow, [false])
      yield* sql`UPDATE accounts SET frozen = true WHERE id = ${user.account.id}`
      assert.deepStrictEqual(yield* flagNow, [true])
      const declined = yield* user.api.userops.submit({ payload: yield* signBuild(send.build, user.key) }).pipe(Effect.flip)
      assert.strictEqual(declined._tag, "OutOfScope")
      const d = declined as { declineReason?: string; details?: { userOpId?: string } }
      assert.strictEqual(d.declineReason, "account_frozen")
      const userOpId = d.details?.userOpId as string
      const receipt = yield* user.api.userops.get({ params: { userOpId }, query: {} })
      assert.strictEqual(receipt.status, "failed")
      assert.strictEqual(receipt.outcome, "rejected")
      const entries = yield* auditEntriesOf(userOpId)
      assert.strictEqual(entries.length, 1)
      assert.strictEqual(entries[0]!.status, "declined")
      assert.strictEqual(entries[0]!.decline_reason, "account_frozen")
    }))

  it.effect("the same declined operation submitted concurrently: one 422, the others its receipt, one audit entry, no 500", () =>
    Effect.gen(function*() {
      const user = yield* newUser
      const network = yield* Network
      const builder = yield* OperationBuilder
      const sql = yield* SqlClient.SqlClient
      // Built while not frozen, relayed while frozen: every submission is declined by the re-check.
      const send = yield* builder.build({
        account: user.account,
        intentType: "send",
        calls: [{ to: network.tokens.usd.address, data: transfer(user.signer.address, 0n) }],
        humanSummary: "Send 0 USDC to the owner"
      })
      yield* sql`UPDATE accounts SET frozen = true WHERE id = ${user.account.id}`
      const signed = yield* signBuild(send.build, user.key)
      const answers = yield* Effect.all(
        Array.from({ length: 20 }, () =>
          user.api.userops.submit({ payload: signed }).pipe(
            Effect.map((r) => ({ tag: "Receipt", userOpId: r.userOpId, status: r.status })),
            Effect.catch((e) => Effect.succeed({ tag: (e as { _tag: string })._tag, userOpId: undefined, status: undefined }))
          )),
        { concurrency: "unbounded" }
      )
      assert.deepStrictEqual([...new Set(answers.map((a) => a.tag))].filter((t) => t !== "Receipt" && t !== "OutOfScope"), [])
      assert.strictEqual(answers.filter((a) => a.tag === "OutOfScope").length, 1)
      const ops = yield* sql<{ id: string }>`SELECT id FROM user_operations WHERE user_op_hash = ${send.build.userOpHash}`
      assert.strictEqual(ops.length, 1)
      assert.isTrue(answers.every((a) => a.tag !== "Receipt" || (a.userOpId === ops[0]!.id && a.status === "failed")))
      assert.strictEqual((yield* auditEntriesOf(ops[0]!.id)).length, 1)
    }))
})
