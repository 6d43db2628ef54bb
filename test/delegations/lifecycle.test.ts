/**
 * Delegations end to end through HTTP on the real database and the local network:
 * build → sign → enable → read → act (executed, spent updated) → declines → freeze 400 →
 * revoke (executed, later actions declined, disabled on chain).
 */
import { assert, layer } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { decodeFunctionResult, type Hex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { DelegationManager } from "@metamask/delegation-abis"
import { fromWire } from "../../src/builds/Wire.ts"
import { AccountStack } from "../../src/chain/Accounts4337.ts"
import { Chain } from "../../src/chain/Chain.ts"
import { Network } from "../../src/chain/Network.ts"
import { signIn } from "../../src/client/signIn.ts"
import { disabledDelegationsCall } from "../../src/delegations/Caveats.ts"
import type { UserOperation } from "../../src/domain/Operations.ts"
import { mint } from "../support/TestChain.ts"
import { client, TestServer, TestServerLive } from "../support/TestServer.ts"

process.env.DO_NOT_TRACK = "1"

const session = (key: Hex) =>
  Effect.gen(function*() {
    const { baseUrl } = yield* TestServer
    const s = yield* signIn(baseUrl, privateKeyToAccount(key))
    const api = yield* client(s.token)
    const [account] = yield* api.accounts.listAccounts()
    return { api, account: account!, key }
  })

type Api = Effect.Success<ReturnType<typeof session>>["api"]

const signOp = (key: Hex, op: UserOperation) =>
  Effect.gen(function*() {
    const stack = yield* AccountStack
    const { signature: _s, ...unsigned } = fromWire(op)
    const signature = yield* stack.signUserOperation(key, unsigned)
    return { ...op, signature }
  })

/**
 * Relays through POST /userops and waits for the outcome (`?wait=1s`: answered as soon as the
 * watcher settles it, else asked of the bundler again each second), for at most 2 minutes in
 * all: on a loaded machine inclusion took longer than the fixed number of short polls allowed.
 */
const relay = (api: Api, op: UserOperation) =>
  Effect.gen(function*() {
    let receipt = yield* api.userops.submit({ payload: op })
    const deadline = Date.now() + 120_000
    while (receipt.status === "submitted" && Date.now() < deadline) {
      receipt = yield* api.userops.get({ params: { userOpId: receipt.userOpId }, query: { wait: "1s" } })
    }
    return receipt
  })

const outOfScope = <A, E extends { readonly _tag: string }, R>(e: Effect.Effect<A, E, R>) =>
  e.pipe(
    Effect.flip,
    Effect.map((err) => {
      const x = err as unknown as { _tag: string; declineReason?: string; details?: Record<string, unknown> }
      return { tag: x._tag, reason: x.declineReason, details: x.details }
    })
  )

layer(TestServerLive(), { timeout: Duration.seconds(120), excludeTestServices: true })("delegations over HTTP", (it) => {
  it.effect("the whole lifecycle on the local network", () =>
    Effect.gen(function*() {
      const net = yield* Network
      const chain = yield* Chain
      const owner = yield* session(generatePrivateKey())
      const delegate = yield* session(generatePrivateKey())
      const alice = privateKeyToAccount(generatePrivateKey()).address.toLowerCase()
      const bob = privateKeyToAccount(generatePrivateKey()).address.toLowerCase()
      yield* mint("usd", owner.account.address as Hex, 100)

      // Build: nothing on chain; full policy, summary, enable op and the delegation to sign.
      const build = yield* owner.api.delegations.build({
        payload: {
          name: "Payroll bot",
          kind: "dApp",
          delegateeAddress: delegate.account.address,
          chainId: net.chainId,
          budgets: [{ token: { symbol: "USDC" }, amount: 30 }],
          perActionMax: { token: { symbol: "USDC" }, amount: 12 },
          maxActions: 3,
          recipientAllowlist: [{ name: "Alice", address: alice, chainId: net.chainId }]
        }
      })
      assert.strictEqual(build.policySet.maxActions, 3)
      assert.include(build.humanSummary, "30 USDC in total")
      assert.strictEqual(build.delegations.length, 1)
      assert.isFalse(yield* chain.isDeployed(owner.account.address as Hex))
      const unknownToken = yield* owner.api.delegations.build({
        payload: { name: "x", kind: "dApp", delegateeAddress: alice, chainId: net.chainId, budgets: [{ token: { symbol: "NOPE" }, amount: 1 }] }
      }).pipe(Effect.flip)
      assert.strictEqual(unknownToken._tag, "BadRequest")
      assert.include(unknownToken.message, "NOPE")

      // The owner signs the delegation (EIP-712) and the enable operation.
      const leg = build.delegations[0]!
      const delegationSignature = yield* Effect.promise(() =>
        privateKeyToAccount(owner.key).signTypedData({
          domain: leg.typedData.domain,
          types: leg.typedData.types,
          primaryType: "Delegation",
          message: { ...leg.typedData.message, salt: BigInt(leg.typedData.message.salt) }
        } as unknown as Parameters<ReturnType<typeof privateKeyToAccount>["signTypedData"]>[0])
      )
      const signedEnable = yield* signOp(owner.key, build.enableUserOp)
      // Without the delegation's signature: refused, nothing relayed.
      const missing = yield* owner.api.delegations.create({
        payload: { userOp: signedEnable, userOpHash: build.userOpHash, intentType: "delegation_enable" }
      }).pipe(Effect.flip)
      assert.strictEqual(missing._tag, "BadRequest")
      const created = yield* owner.api.delegations.create({
        payload: {
          userOp: signedEnable,
          userOpHash: build.userOpHash,
          intentType: "delegation_enable",
          delegationSignatures: [{ permissionId: leg.permissionId, signature: delegationSignature }]
        }
      })
      assert.strictEqual(created.status, "active")
      assert.strictEqual(created.permissionId, leg.permissionId)
      assert.isTrue(yield* chain.isDeployed(owner.account.address as Hex))
      assert.deepStrictEqual(created.spentToDate.map((s) => [s.limit, s.spent, s.remaining]), [[30, 0, 30]])
      assert.isUndefined(created.policySet.budgets[0]!.token.address)

      const listed = yield* owner.api.delegations.list({ query: {} })
      assert.deepStrictEqual(listed.map((d) => d.id), [created.id])
      assert.deepStrictEqual(yield* owner.api.delegations.list({ query: { status: "revoked" } }), [])
      const snapshots = yield* owner.api.delegations.policySnapshots({ params: { delegationId: created.id } })
      assert.strictEqual(snapshots.length, 1)
      const enableTx = yield* chain.getTransactionReceipt(snapshots[0]!.enableTxHash as Hex)
      assert.strictEqual(enableTx?.status, "success")
      // The delegatee reads the grant it holds (its own lane); another signer sees nothing.
      assert.strictEqual((yield* delegate.api.delegations.get({ params: { delegationId: created.id } })).id, created.id)
      const outsider = yield* session(generatePrivateKey())
      const stranger = yield* outsider.api.delegations.get({ params: { delegationId: created.id } }).pipe(Effect.flip)
      assert.strictEqual(stranger._tag, "NotFound")
      const otherAccount = yield* owner.api.delegations.list({ query: { accountId: delegate.account.id } }).pipe(Effect.flip)
      assert.strictEqual(otherAccount._tag, "NotFound")

      // Act within limits: the delegate signs and relays; executed → spent updated, tokens moved.
      const action = yield* owner.api.delegations.act({ params: { delegationId: created.id }, payload: { recipient: "Alice", amount: 10 } })
      assert.strictEqual(action.intentType, "delegated_action")
      assert.strictEqual(action.userOp.sender, delegate.account.address)
      const receipt = yield* relay(delegate.api, yield* signOp(delegate.key, action.userOp))
      assert.strictEqual(receipt.outcome, "mined")
      assert.strictEqual(yield* chain.erc20Balance(net.tokens.usd.address, alice as Hex), 10_000_000n)
      const afterOne = yield* owner.api.delegations.get({ params: { delegationId: created.id } })
      assert.deepStrictEqual(afterOne.spentToDate.map((s) => [s.limit, s.spent, s.remaining]), [[30, 10, 20]])

      // Declines: each with its reason, an audit event and a notification.
      const act = (payload: { recipient: string; amount: number; token?: string }) =>
        outOfScope(owner.api.delegations.act({ params: { delegationId: created.id }, payload }))
      const perAction = yield* act({ recipient: "Alice", amount: 13 })
      assert.deepStrictEqual([perAction.tag, perAction.reason], ["OutOfScope", "per_action_exceeded"])
      assert.strictEqual((yield* act({ recipient: bob, amount: 1 })).reason, "recipient_not_allowed")
      assert.strictEqual((yield* act({ recipient: "Alice", amount: 1, token: "USDT" })).reason, "token_not_allowed")
      const event = yield* owner.api.activity.get({ params: { eventId: perAction.details!["auditEventId"] as string } })
      assert.strictEqual(event.status, "declined")
      assert.strictEqual(event.declineReason, "per_action_exceeded")
      const notes = yield* owner.api.notifications.list({ query: { unreadOnly: false } })
      assert.isTrue(notes.some((n) => n.tone === "danger" && n.relatedId === event.id))

      // Budget: 20 left; 12 + 12 would exceed it.
      yield* owner.api.delegations.act({ params: { delegationId: created.id }, payload: { recipient: alice, amount: 12 } })
      assert.strictEqual((yield* act({ recipient: "Alice", amount: 9 })).reason, "cap_exceeded")
      // Count: 1 executed + 1 reserved + 1 more = 3, then exhausted.
      yield* owner.api.delegations.act({ params: { delegationId: created.id }, payload: { recipient: alice, amount: 1 } })
      assert.strictEqual((yield* act({ recipient: "Alice", amount: 1 })).reason, "count_exhausted")

      // Per-delegation freeze does not exist.
      const freeze = yield* owner.api.delegations.freeze({ params: { delegationId: created.id } }).pipe(Effect.flip)
      assert.strictEqual(freeze._tag, "BadRequest")
      const unfreeze = yield* owner.api.delegations.unfreeze({ params: { delegationId: created.id } }).pipe(Effect.flip)
      assert.strictEqual(unfreeze._tag, "BadRequest")
      assert.strictEqual((yield* owner.api.delegations.get({ params: { delegationId: created.id } })).status, "active")

      // Revoke: risk-reducing, instant, gasless; revoked once executed; disabled on chain.
      const revoke = yield* owner.api.delegations.revoke({ params: { delegationId: created.id } })
      assert.isTrue(revoke.riskReducing && revoke.instant && revoke.gasless)
      const revoked = yield* relay(owner.api, yield* signOp(owner.key, revoke.userOp))
      assert.strictEqual(revoked.outcome, "mined")
      const after = yield* owner.api.delegations.get({ params: { delegationId: created.id } })
      assert.strictEqual(after.status, "revoked")
      assert.strictEqual((yield* act({ recipient: "Alice", amount: 1 })).reason, "revoked")
      const disabled = yield* chain.call({ to: net.delegation.DelegationManager, data: disabledDelegationsCall(leg.permissionId as Hex) })
      assert.isTrue(decodeFunctionResult({ abi: DelegationManager, functionName: "disabledDelegations", data: disabled }))
      assert.deepStrictEqual(
        (yield* owner.api.delegations.list({ query: { status: "revoked" } })).map((d) => d.id),
        [created.id]
      )
    }))
})
