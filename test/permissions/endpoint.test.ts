/**
 * The ERC-7715 endpoints end to end (issue 24, item 1): a dApp's request as the kit sends it, over
 * the HTTP twin and over JSON-RPC (`POST /wallet`, the kit's own `erc7715ProviderActions` as the
 * client); the owner's wallet signs what the approval asks (build → sign → submit); the answer's
 * permission context redeemed by the agent with the kit alone (`erc7710BundlerActions`,
 * `sendTransactionWithDelegation`) on the local chain: within the limits tokens move, beyond them
 * the chain refuses and nothing moves. The granted listing, revoke by context, and the chain a
 * request names. docs/permissions.md.
 */
import { assert, layer } from "@effect/vitest"
import { Duration, Effect, Result } from "effect"
import { type Address, createPublicClient, type Hex, http, toHex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { Network } from "../../src/chain/Network.ts"
import { failure, newSession, session } from "../delegations/helpers.ts"
import { mint, secondNetwork, testNetwork } from "../support/TestChain.ts"
import { TestServerLive } from "../support/TestServer.ts"
import { accepted, eoaAgent, erc20Transfer, kitWire, refusedOnChain, smartAgent, tokenBalance } from "./agent.ts"
import { approveNext, kitOverWallet, nextPending, signApproval } from "./wallet.ts"

const randomAddress = () => privateKeyToAccount(generatePrivateKey()).address.toLowerCase() as Address
const USD = (n: number) => BigInt(Math.round(n * 1_000_000))
const nowS = () => Math.floor(Date.now() / 1000)
const DAY = 86_400

layer(TestServerLive({ config: { DELEGATION_MIN_LIFETIME: "1 second", PERMISSIONS_APPROVAL_WAIT: "60 seconds" } }), {
  timeout: Duration.seconds(240),
  excludeTestServices: true
})("the ERC-7715 endpoints", (it) => {
  it.effect("HTTP twin: request → the owner signs → the standard response; the agent's smart account redeems it within the period, not beyond; granted lists it; revoke by context, then the chain refuses", () =>
    Effect.gen(function*() {
      const net = yield* Network
      const usdc = net.tokens.usd.address
      const owner = yield* newSession()
      const agentKey = generatePrivateKey()
      const agent = yield* smartAgent(agentKey)
      const alice = randomAddress()
      yield* mint("usd", owner.account.address as Hex, 50)
      const requests = yield* Effect.promise(() =>
        kitWire([{
          chainId: net.chainId,
          to: agent.address,
          expiry: nowS() + 7 * DAY, // several periods: a grant that ends within its first period reads as a one-off budget
          permission: {
            type: "erc20-token-periodic",
            isAdjustmentAllowed: false,
            data: { tokenAddress: usdc, periodAmount: USD(5), periodDuration: DAY, justification: "weekly groceries" }
          }
        }])
      )

      const offered = yield* owner.api.permissions.request({ payload: { requests: requests as never } })
      assert.strictEqual(offered.status, "pending")
      const [item] = offered.grants!
      assert.include(item!.build.humanSummary, "at most 5 USDC per day")
      assert.strictEqual(item!.build.enableUserOp.chainId, net.chainId)
      assert.strictEqual(item!.request.to, agent.address)
      assert.deepStrictEqual(item!.request.rules?.map((r) => r.type), ["expiry", "redeemer"], "the defaults the grant holds are stated")
      // Nothing on chain until the owner signs: the grant is not listed yet.
      assert.lengthOf(yield* owner.api.permissions.granted(), 0)

      const approved = yield* owner.api.permissions.approve({ params: { approvalId: offered.id }, payload: { signatures: yield* signApproval(owner, offered) } })
      assert.strictEqual(approved.status, "granted")
      const [response] = approved.permissions!
      assert.strictEqual(response!.from, owner.account.address.toLowerCase())
      assert.strictEqual(response!.to, agent.address)
      assert.strictEqual(response!.chainId, toHex(net.chainId))
      assert.strictEqual(response!.delegationManager.toLowerCase(), net.delegation.DelegationManager.toLowerCase())
      assert.deepStrictEqual(response!.dependencies, [], "the enable deployed the owner's account")
      // Approving again answers the same (a retried answer changes nothing).
      const again = yield* owner.api.permissions.approve({ params: { approvalId: offered.id }, payload: { signatures: yield* signApproval(owner, offered) } })
      assert.deepStrictEqual(again.permissions, approved.permissions)

      const context = response!.context as Hex
      accepted(yield* Effect.promise(() => agent.redeem({ to: usdc, data: erc20Transfer(alice, USD(3)) }, context)))
      assert.strictEqual(yield* tokenBalance(usdc, alice), USD(3))
      const balances = Effect.all([tokenBalance(usdc, alice), tokenBalance(usdc, owner.account.address)])
      const before = yield* balances
      refusedOnChain(yield* Effect.promise(() => agent.redeem({ to: usdc, data: erc20Transfer(alice, USD(2) + 1n) }, context)),
        "MultiTokenPeriodEnforcer:transfer-amount-exceeded", before, yield* balances)

      const granted = yield* owner.api.permissions.granted()
      assert.deepStrictEqual(granted.map((g) => g.context), [context], "the listing carries the same context")
      assert.strictEqual(granted[0]!.permission.type, "erc20-token-periodic")

      // Someone else's session cannot revoke (or even find) the grant by its context.
      const stranger = yield* newSession()
      assert.strictEqual((yield* failure(stranger.api.permissions.revoke({ payload: { permissionContext: context } }))).tag, "NotFound")

      const revokeOffer = yield* owner.api.permissions.revoke({ payload: { permissionContext: context } })
      assert.strictEqual(revokeOffer.kind, "revoke")
      const revoked = yield* owner.api.permissions.approve({ params: { approvalId: revokeOffer.id }, payload: { signatures: yield* signApproval(owner, revokeOffer) } })
      assert.strictEqual(revoked.status, "revoked")
      refusedOnChain(yield* Effect.promise(() => agent.redeem({ to: usdc, data: erc20Transfer(alice, USD(1)) }, context)),
        "CannotUseADisabledDelegation", before, yield* balances)
      assert.lengthOf(yield* owner.api.permissions.granted(), 0)
      const twice = yield* failure(owner.api.permissions.revoke({ payload: { permissionContext: context } }))
      assert.strictEqual(twice.tag, "Conflict")
    }))

  it.effect("one request of two permissions for an account not yet deployed: the first enable deploys it, the second takes the next nonce; both granted, each redeemable within its own limit only", () =>
    Effect.gen(function*() {
      const net = yield* Network
      const usdc = net.tokens.usd.address
      const owner = yield* newSession()
      const code = yield* Effect.promise(() =>
        createPublicClient({ transport: http(testNetwork().rpcUrl) }).getCode({ address: owner.account.address as Address }))
      assert.isTrue(code === undefined || code === "0x", "the owner's account is counterfactual")
      const smart = yield* smartAgent(generatePrivateKey())
      const eoa = yield* eoaAgent(generatePrivateKey())
      const alice = randomAddress()
      yield* mint("usd", owner.account.address as Hex, 50)
      const periodic = (to: Address, amount: number) => ({
        chainId: net.chainId,
        to,
        expiry: nowS() + 7 * DAY,
        permission: {
          type: "erc20-token-periodic" as const,
          isAdjustmentAllowed: false,
          data: { tokenAddress: usdc, periodAmount: USD(amount), periodDuration: DAY, justification: `${amount} a day` }
        }
      })
      const requests = yield* Effect.promise(() => kitWire([periodic(smart.address, 5), periodic(eoa.address, 2)]))
      const offered = yield* owner.api.permissions.request({ payload: { requests: requests as never } })
      const [first, second] = offered.grants!
      assert.isDefined(first!.build.enableUserOp.factory, "the first enable deploys the account")
      assert.isUndefined(second!.build.enableUserOp.factory, "the second does not deploy it again")
      assert.strictEqual(BigInt(second!.build.enableUserOp.nonce), BigInt(first!.build.enableUserOp.nonce) + 1n)

      const approved = yield* owner.api.permissions.approve({ params: { approvalId: offered.id }, payload: { signatures: yield* signApproval(owner, offered) } })
      assert.strictEqual(approved.status, "granted")
      const [toSmart, toEoa] = approved.permissions!
      assert.strictEqual(toSmart!.to, smart.address)
      assert.strictEqual(toEoa!.to, eoa.address)
      assert.lengthOf(yield* owner.api.permissions.granted(), 2)

      accepted(yield* Effect.promise(() => smart.redeem({ to: usdc, data: erc20Transfer(alice, USD(4)) }, toSmart!.context as Hex)))
      accepted(yield* Effect.promise(() => eoa.redeem({ to: usdc, data: erc20Transfer(alice, USD(2)) }, toEoa!.context as Hex)))
      assert.strictEqual(yield* tokenBalance(usdc, alice), USD(6))
      const balances = Effect.all([tokenBalance(usdc, alice), tokenBalance(usdc, owner.account.address)])
      const before = yield* balances
      // Each grant holds its own limit: the EOA's 2 a day is used up, whatever the other grant has left.
      refusedOnChain(yield* Effect.promise(() => eoa.redeem({ to: usdc, data: erc20Transfer(alice, 1n) }, toEoa!.context as Hex)),
        "MultiTokenPeriodEnforcer:transfer-amount-exceeded", before, yield* balances)
    }))

  it.effect("JSON-RPC through the kit (a wallet proxying its dApp): the call waits for the owner's approval and answers the standard response; the EOA agent redeems it within the allowance, not beyond; getSupported, getGranted, revoke; a rejection answers 4001", () =>
    Effect.gen(function*() {
      const net = yield* Network
      const usdc = net.tokens.usd.address
      const owner = yield* newSession()
      const kit = yield* kitOverWallet(owner)
      const agentKey = generatePrivateKey()
      const agent = yield* eoaAgent(agentKey)
      const alice = randomAddress()
      yield* mint("usd", owner.account.address as Hex, 50)

      const supported = yield* Effect.promise(() => kit.getSupportedExecutionPermissions())
      assert.deepStrictEqual([...supported["erc20-token-periodic"]!.chainIds].sort(), [net.chainId, secondNetwork().chainId].sort())
      assert.deepStrictEqual([...supported["erc20-token-periodic"]!.ruleTypes].sort(), ["expiry", "payee", "redeemer"])
      assert.deepStrictEqual([...supported["erc20-token-revocation"]!.ruleTypes].sort(), ["expiry", "redeemer"], "a revocation grant pays no one")

      const [responses, approval] = yield* Effect.all([
        Effect.promise(() =>
          kit.requestExecutionPermissions([{
            chainId: net.chainId,
            to: agent.address,
            expiry: nowS() + DAY,
            permission: { type: "erc20-token-allowance", isAdjustmentAllowed: false, data: { tokenAddress: usdc, allowanceAmount: USD(4) } }
          }])
        ),
        approveNext(owner)
      ], { concurrency: 2 })
      assert.strictEqual(approval.status, "granted")
      assert.lengthOf(responses, 1)
      const context = responses[0]!.context
      assert.strictEqual(context, approval.permissions![0]!.context)
      assert.strictEqual(responses[0]!.from?.toLowerCase(), owner.account.address.toLowerCase())

      accepted(yield* Effect.promise(() => agent.redeem({ to: usdc, data: erc20Transfer(alice, USD(3)) }, context)))
      assert.strictEqual(yield* tokenBalance(usdc, alice), USD(3))
      const balances = Effect.all([tokenBalance(usdc, alice), tokenBalance(usdc, owner.account.address)])
      const before = yield* balances
      refusedOnChain(yield* Effect.promise(() => agent.redeem({ to: usdc, data: erc20Transfer(alice, USD(1) + 1n) }, context)),
        "MultiTokenPeriodEnforcer:transfer-amount-exceeded", before, yield* balances)

      // The follower's record, over HTTP: who redeemed (the EOA, by a plain transaction) and what moved, from the receipt.
      const delegationId = approval.grants![0]!.delegationId!
      let seen = yield* owner.api.delegations.redemptions({ params: { delegationId } })
      for (let i = 0; i < 100 && seen.length === 0; i++) {
        yield* Effect.sleep(Duration.millis(200))
        seen = yield* owner.api.delegations.redemptions({ params: { delegationId } })
      }
      assert.deepStrictEqual(
        seen.map((r) => [r.redeemer, r.via, r.chain.map((l) => [l.delegator, l.delegate]), r.moved.map((m) => [m.recipient, m.units])]),
        [[agent.address, "transaction", [[owner.account.address.toLowerCase(), agent.address]], [[alice, USD(3).toString()]]]]
      )
      assert.strictEqual((yield* failure((yield* newSession()).api.delegations.redemptions({ params: { delegationId } }))).tag, "NotFound")

      const listed = yield* Effect.promise(() => kit.getGrantedExecutionPermissions())
      assert.deepStrictEqual(listed.map((g) => g.context), [context])

      // The revoke method (the kit has no action for it: the raw call, as a wallet forwards it).
      const [revokeAnswer] = yield* Effect.all([
        Effect.promise(() => kit.request({ method: "wallet_revokeExecutionPermission" as never, params: { permissionContext: context } as never })),
        approveNext(owner)
      ], { concurrency: 2 })
      assert.deepStrictEqual(revokeAnswer, {})
      refusedOnChain(yield* Effect.promise(() => agent.redeem({ to: usdc, data: erc20Transfer(alice, USD(1)) }, context)),
        "CannotUseADisabledDelegation", before, yield* balances)
      assert.lengthOf(yield* Effect.promise(() => kit.getGrantedExecutionPermissions()), 0)

      // The owner says no: the dApp's call answers 4001 (EIP-1193 user rejected); nothing is granted.
      const [rejected] = yield* Effect.all([
        Effect.flip(Effect.tryPromise(() =>
          kit.requestExecutionPermissions([{
            chainId: net.chainId,
            to: agent.address,
            expiry: nowS() + DAY,
            permission: { type: "erc20-token-allowance", isAdjustmentAllowed: false, data: { tokenAddress: usdc, allowanceAmount: USD(4) } }
          }])
        )),
        Effect.flatMap(nextPending(owner), (p) => owner.api.permissions.reject({ params: { approvalId: p.id } }))
      ], { concurrency: 2 })
      assert.strictEqual((rejected.cause as { code?: number }).code, 4001, String(rejected.cause))
      assert.lengthOf(yield* owner.api.permissions.granted(), 0)
    }))

  it.effect("a request's chainId picks the chain: a grant on the second chain is built, signed and enabled there", () =>
    Effect.gen(function*() {
      const b = secondNetwork()
      const owner = yield* newSession()
      const agent = randomAddress()
      const offered = yield* owner.api.permissions.request({
        payload: {
          requests: [{
            chainId: toHex(b.chainId),
            to: agent,
            permission: { type: "native-token-allowance", isAdjustmentAllowed: false, data: { allowanceAmount: toHex(10n ** 15n) } }
          }]
        }
      })
      const build = offered.grants![0]!.build
      assert.strictEqual(build.enableUserOp.chainId, b.chainId)
      const approved = yield* owner.api.permissions.approve({ params: { approvalId: offered.id }, payload: { signatures: yield* signApproval(owner, offered) } })
      assert.strictEqual(approved.status, "granted")
      assert.strictEqual(approved.permissions![0]!.chainId, toHex(b.chainId))
      const held = yield* owner.api.delegations.list({ query: { chainId: b.chainId } })
      assert.deepStrictEqual(held.map((d) => [d.delegateeAddress, d.status]), [[agent, "active"]])
    }))

  it.effect("a stream's maximum that cannot accrue before the expiry: refused naming the field without isAdjustmentAllowed (both endpoints, nothing stored); with it, lowered and the answer says what changed", () =>
    Effect.gen(function*() {
      const net = yield* Network
      const owner = yield* newSession()
      // 4 USDC asked; 0.000001 USDC per second for a day can accrue 0.0864 USDC at most. The start
      // is named: left to the service's clock, a second passed between this line and its answer
      // (at load) made the day 86,399 s.
      const stream = (isAdjustmentAllowed: boolean) => {
        const start = nowS()
        return {
          chainId: toHex(net.chainId),
          to: randomAddress(),
          permission: {
            type: "erc20-token-stream",
            isAdjustmentAllowed,
            data: { tokenAddress: net.tokens.usd.address, amountPerSecond: "0x1", maxAmount: toHex(USD(4)), startTime: start }
          },
          rules: [{ type: "expiry", data: { timestamp: start + DAY } }]
        }
      }
      const e = yield* failure(owner.api.permissions.request({ payload: { requests: [stream(false)] as never } }))
      assert.deepStrictEqual([e.tag, e.details["field"]], ["BadRequest", "requests[0].permission.data.maxAmount"], e.message)
      assert.include(e.message, "cannot be held exactly: at most 0.0864")
      const rpc = yield* owner.api.permissions.rpc({ payload: { jsonrpc: "2.0", id: 3, method: "wallet_requestExecutionPermissions", params: [stream(false)] } as never })
      assert.deepStrictEqual([rpc.error?.code, (rpc.error?.data as { field?: string }).field], [-32602, "params[0].permission.data.maxAmount"])
      assert.lengthOf(yield* owner.api.permissions.approvals({ query: {} }), 0, "nothing was stored")

      const offered = yield* owner.api.permissions.request({ payload: { requests: [stream(true)] as never } })
      const [adjusted] = offered.grants![0]!.adjustments!
      assert.deepStrictEqual([adjusted!.field, adjusted!.requested, adjusted!.granted], ["permission.data.maxAmount", toHex(USD(4)), toHex(86_400n)])
      assert.strictEqual((offered.grants![0]!.request.permission.data as { maxAmount: string }).maxAmount, toHex(86_400n))
      assert.include(offered.grants![0]!.build.humanSummary, "at most 0.0864 USDC in total as a stream")
      const approved = yield* owner.api.permissions.approve({ params: { approvalId: offered.id }, payload: { signatures: yield* signApproval(owner, offered) } })
      assert.strictEqual(approved.status, "granted")
      assert.deepStrictEqual(approved.permissions![0]!.adjustments, offered.grants![0]!.adjustments, "the dApp's answer says what changed")
    }))

  it.effect("bad input: a 400 naming the field (unserved chain lists the served ones); nothing is stored; JSON-RPC answers the same as invalid params", () =>
    Effect.gen(function*() {
      const net = yield* Network
      const owner = yield* newSession()
      const good = {
        chainId: toHex(net.chainId),
        to: randomAddress(),
        permission: { type: "erc20-token-periodic", isAdjustmentAllowed: false, data: { tokenAddress: net.tokens.usd.address, periodAmount: "0x989680", periodDuration: DAY } },
        rules: [{ type: "expiry", data: { timestamp: nowS() + DAY } }]
      }
      const withData = (data: object) => ({ ...good, permission: { ...good.permission, data: { ...good.permission.data, ...data } } })
      const cases: ReadonlyArray<readonly [unknown, string, string?]> = [
        [{ ...good, chainId: "0x1" }, "requests[0].chainId", "not served here"],
        [{ ...good, to: "0x1234" }, "requests[0].to", "20 bytes"],
        [{ ...good, permission: { ...good.permission, type: "nft-lease" } }, "requests[0].permission.type", "supported"],
        [withData({ periodAmount: "-0x1" }), "requests[0].permission.data.periodAmount"],
        [withData({ periodAmount: "0x1" + "0".repeat(64) }), "requests[0].permission.data.periodAmount", "256 bits"],
        [withData({ periodDuration: 0 }), "requests[0].permission.data.periodDuration"],
        [withData({ justification: "a\u0000b" }), "requests[0].permission.data.justification", "NUL"],
        [{ ...good, rules: [{ type: "expiry", data: { timestamp: nowS() - 10 } }] }, "requests[0].rules[0].data.timestamp", "in the past"],
        [{ ...good, to: net.delegation.DelegationManager }, "requests[0].to", "cannot redeem"]
      ]
      for (const [request, field, words] of cases) {
        // The bad request second: every request is checked before anything is built or stored.
        const e = yield* failure(owner.api.permissions.request({ payload: { requests: [good, request] as never } }))
        const at = field.replace("requests[0]", "requests[1]")
        assert.strictEqual(e.tag, "BadRequest", `${at}: ${e.message}`)
        assert.strictEqual(e.details["field"], at, e.message)
        if (words !== undefined) assert.include(e.message, words)
      }
      const unserved = yield* failure(owner.api.permissions.request({ payload: { requests: [{ ...good, chainId: "0x1" }] as never } }))
      assert.deepStrictEqual((unserved.details["served"] as ReadonlyArray<{ chainId: number }>).map((c) => c.chainId).sort(), [net.chainId, secondNetwork().chainId].sort())
      assert.lengthOf(yield* owner.api.permissions.approvals({ query: {} }), 0, "nothing was stored")

      // JSON-RPC: the same refusal as invalid params (-32602) naming the field; envelope errors as EIP-1474 says.
      const rpc = (body: unknown) => owner.api.permissions.rpc({ payload: body as never })
      const bad = yield* rpc({ jsonrpc: "2.0", id: 7, method: "wallet_requestExecutionPermissions", params: [{ ...good, chainId: "0x1" }] })
      assert.deepStrictEqual([bad.id, bad.error?.code, (bad.error?.data as { field?: string }).field], [7, -32602, "params[0].chainId"])
      const batch = yield* rpc([{ jsonrpc: "2.0", id: 1, method: "wallet_getSupportedExecutionPermissions", params: [] }])
      assert.strictEqual(batch.error?.code, -32600)
      const unknown = yield* rpc({ jsonrpc: "2.0", id: "x", method: "eth_sendTransaction", params: [] })
      assert.deepStrictEqual([unknown.id, unknown.error?.code], ["x", -32601])
      const noId = yield* rpc({ jsonrpc: "2.0", method: "wallet_getGrantedExecutionPermissions", params: [] })
      assert.strictEqual(noId.error?.code, -32600)
      const badContext = yield* rpc({ jsonrpc: "2.0", id: 9, method: "wallet_revokeExecutionPermission", params: { permissionContext: "0x1234" } })
      assert.deepStrictEqual([badContext.error?.code, (badContext.error?.data as { field?: string }).field], [-32602, "params.permissionContext"])
      assert.lengthOf(yield* owner.api.permissions.approvals({ query: {} }), 0, "nothing was stored")
    }))

  it.effect("the owner's signatures: another session cannot see or approve an approval; a wrong signature is a 400 and nothing is relayed; two approvals at once enable once", () =>
    Effect.gen(function*() {
      const net = yield* Network
      const owner = yield* newSession()
      const stranger = yield* newSession()
      const agent = randomAddress()
      const offered = yield* owner.api.permissions.request({
        payload: {
          requests: [{
            chainId: toHex(net.chainId),
            to: agent,
            permission: { type: "native-token-periodic", isAdjustmentAllowed: false, data: { periodAmount: toHex(10n ** 15n), periodDuration: DAY } }
          }]
        }
      })
      const signatures = yield* signApproval(owner, offered)
      assert.strictEqual((yield* failure(stranger.api.permissions.approval({ params: { approvalId: offered.id } }))).tag, "NotFound")
      assert.strictEqual(
        (yield* failure(stranger.api.permissions.approve({ params: { approvalId: offered.id }, payload: { signatures } }))).tag,
        "NotFound"
      )

      // The stranger's signature of the owner's delegation: refused before anything is relayed.
      const strangers = yield* signApproval(yield* session(stranger.key), offered)
      const forged = yield* failure(owner.api.permissions.approve({
        params: { approvalId: offered.id },
        payload: { signatures: [{ ...signatures[0]!, delegationSignatures: strangers[0]!.delegationSignatures ?? [] }] }
      }))
      assert.strictEqual(forged.tag, "BadRequest")
      assert.strictEqual(forged.details["field"], "signatures[0].delegationSignatures")
      assert.strictEqual((yield* owner.api.permissions.approval({ params: { approvalId: offered.id } })).status, "pending")
      assert.lengthOf(yield* owner.api.delegations.list({ query: {} }), 0)

      // The owner's wallet sends its answer twice at once: one grant, both answers say what happened.
      const answers = yield* Effect.all(
        [0, 1].map(() => Effect.result(owner.api.permissions.approve({ params: { approvalId: offered.id }, payload: { signatures } }))),
        { concurrency: 2 }
      )
      const ok = answers.filter(Result.isSuccess).map((a) => a.success)
      assert.isAtLeast(ok.length, 1)
      for (const a of ok) assert.strictEqual(a.status, "granted")
      const held = yield* owner.api.delegations.list({ query: {} })
      assert.deepStrictEqual(held.map((d) => d.status), ["active"])
      const after = yield* owner.api.permissions.approval({ params: { approvalId: offered.id } })
      assert.strictEqual(after.status, "granted")
      assert.strictEqual(after.grants![0]!.delegationId, held[0]!.id)
    }))
})
