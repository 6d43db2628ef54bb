/**
 * The standard's revocation types end to end (issue 24), with the kit as the client: a dApp's
 * `erc20-token-revocation` / `token-approval-revocation` request over `POST /wallet`
 * (`erc7715ProviderActions`), the owner's wallet signing the grant the service built (no budget:
 * `ApprovalRevocationEnforcer`, Grant.ts), and the agent redeeming the returned context with the
 * kit alone: an EOA with `sendTransactionWithDelegation`, a smart account with
 * `erc7710BundlerActions`. Within the rule an approval the owner gave is set back to 0; beyond it
 * (a non-zero approve, a transfer, a primitive the grant does not allow, a redeemer it does not
 * name) and after revoke the chain refuses, and nothing moves: balances and allowances are read on
 * chain. docs/permissions.md maps each case.
 */
import { assert, layer } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { type Address, createPublicClient, createWalletClient, encodeFunctionData, erc20Abi, type Hex, http, toHex, zeroAddress } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { Network } from "../../src/chain/Network.ts"
import { failure, newSession, type Session } from "../delegations/helpers.ts"
import { mint } from "../support/TestChain.ts"
import { TestServerLive } from "../support/TestServer.ts"
import { accepted, eoaAgent, erc20Transfer, fundEth, refusedOnChain, smartAgent, tokenBalance } from "./agent.ts"
import { approveNext, kitOverWallet } from "./wallet.ts"

const USD = (n: number) => BigInt(Math.round(n * 1_000_000))
const nowS = () => Math.floor(Date.now() / 1000)
const DAY = 86_400
const randomAddress = () => privateKeyToAccount(generatePrivateKey()).address.toLowerCase() as Address
const none = { erc20Approve: false, erc721Approve: false, erc721SetApprovalForAll: false, permit2Approve: false, permit2Lockdown: false, permit2InvalidateNonces: false }

const approve = (spender: Address, units: bigint) => encodeFunctionData({ abi: erc20Abi, functionName: "approve", args: [spender, units] })

const clientsOf = (rpcUrl: string) => ({
  publicClient: createPublicClient({ transport: http(rpcUrl), pollingInterval: 50 }),
  wallet: createWalletClient({ transport: http(rpcUrl) })
})

/** An approval the owner's account gave earlier, by its own call (impersonated on the local chain for the setup only). */
const ownerApproves = (owner: Session, token: Address, spender: Address, units: bigint) =>
  Effect.gen(function*() {
    const net = yield* Network
    const account = owner.account.address as Address
    yield* fundEth(account, "1")
    yield* Effect.promise(async () => {
      const { publicClient, wallet } = clientsOf(net.rpcUrl)
      await publicClient.request({ method: "anvil_impersonateAccount" as never, params: [account] as never })
      const hash = await wallet.sendTransaction({ account, chain: null, to: token, data: approve(spender, units) })
      await publicClient.waitForTransactionReceipt({ hash })
      await publicClient.request({ method: "anvil_stopImpersonatingAccount" as never, params: [account] as never })
    })
  })

const allowance = (token: Address, owner: string, spender: Address) =>
  Effect.gen(function*() {
    const net = yield* Network
    return yield* Effect.promise(() =>
      clientsOf(net.rpcUrl).publicClient.readContract({ address: token, abi: erc20Abi, functionName: "allowance", args: [owner as Address, spender] }))
  })

/** The JSON-RPC error a viem call failed with: its code and `data` (`field`), from the error's causes. */
const rpcErrorOf = (e: unknown) => {
  const seen: Array<{ code?: number; data?: unknown; message?: string; details?: string }> = []
  for (let c = e as { cause?: unknown } | undefined; c !== undefined && c !== null; c = c.cause as typeof c) seen.push(c as never)
  const data = seen.map((c) => c.data).find((d) => typeof d === "object" && d !== null) as { field?: string } | undefined
  return { code: seen.find((c) => typeof c.code === "number")?.code, data, text: seen.map((c) => `${c.message ?? ""} ${c.details ?? ""}`).join(" | ") }
}

layer(TestServerLive({ config: { PERMISSIONS_APPROVAL_WAIT: "60 seconds" } }), { timeout: Duration.seconds(180), excludeTestServices: true })(
  "the revocation types, with the kit as the client",
  (it) => {
    it.effect("erc20-token-revocation: the EOA agent sets an approval back to 0; a non-zero approve, a transfer and, after revoke, any revocation are refused on chain", () =>
      Effect.gen(function*() {
        const net = yield* Network
        const usdc = net.tokens.usd.address as Address
        const owner = yield* newSession()
        const kit = yield* kitOverWallet(owner)
        const agent = yield* eoaAgent(generatePrivateKey())
        const [spenderA, spenderB] = [randomAddress(), randomAddress()]
        yield* mint("usd", owner.account.address as Hex, 20)

        const supported = yield* Effect.promise(() => kit.getSupportedExecutionPermissions())
        assert.deepStrictEqual([...supported["erc20-token-revocation"]!.ruleTypes].sort(), ["expiry", "redeemer"])
        assert.include(supported["token-approval-revocation"]!.chainIds, net.chainId)

        const [responses, approval] = yield* Effect.all([
          Effect.promise(() =>
            kit.requestExecutionPermissions([{
              chainId: net.chainId,
              to: agent.address,
              expiry: nowS() + DAY,
              permission: { type: "erc20-token-revocation", isAdjustmentAllowed: false, data: { justification: "revoke risky allowances" } }
            }])
          ),
          approveNext(owner)
        ], { concurrency: 2 })
        assert.strictEqual(approval.status, "granted")
        const build = approval.grants![0]!.build
        assert.deepStrictEqual(build.policySet.budgets, [])
        assert.include(build.humanSummary, "may only revoke token approvals this account gave: set an ERC-20 allowance back to 0 (approve(spender, 0))")
        assert.include(build.humanSummary, "It cannot move any token or ETH, nor give or raise an approval.")
        const [response] = responses
        assert.strictEqual(response!.permission.type, "erc20-token-revocation")
        assert.strictEqual(response!.from?.toLowerCase(), owner.account.address.toLowerCase())
        assert.strictEqual(response!.delegationManager.toLowerCase(), net.delegation.DelegationManager.toLowerCase())
        const context = response!.context

        yield* ownerApproves(owner, usdc, spenderA, USD(5))
        yield* ownerApproves(owner, usdc, spenderB, USD(7))
        const state = Effect.all([
          allowance(usdc, owner.account.address, spenderA),
          allowance(usdc, owner.account.address, spenderB),
          tokenBalance(usdc, owner.account.address),
          tokenBalance(usdc, agent.address)
        ])
        const before = yield* state
        assert.deepStrictEqual(before, [USD(5), USD(7), USD(20), 0n])

        // Beyond the rule: raising (or giving) an approval, moving a token. The chain refuses; nothing changes.
        refusedOnChain(yield* Effect.promise(() => agent.redeem({ to: usdc, data: approve(spenderA, 1n) }, context)),
          "ApprovalRevocationEnforcer:non-zero-amount", before, yield* state)
        refusedOnChain(yield* Effect.promise(() => agent.redeem({ to: usdc, data: approve(agent.address, USD(20)) }, context)),
          "ApprovalRevocationEnforcer:non-zero-amount", before, yield* state)
        refusedOnChain(yield* Effect.promise(() => agent.redeem({ to: usdc, data: erc20Transfer(agent.address, USD(1)) }, context)),
          "ApprovalRevocationEnforcer:invalid-method", before, yield* state)
        refusedOnChain(yield* Effect.promise(() => agent.redeem({ to: usdc, data: approve(spenderA, 0n), value: 1n }, context)),
          "ApprovalRevocationEnforcer:invalid-value", before, yield* state)
        // "Revoking" an approval never given would only be a no-op: the enforcer refuses it too.
        refusedOnChain(yield* Effect.promise(() => agent.redeem({ to: usdc, data: approve(randomAddress(), 0n) }, context)),
          "ApprovalRevocationEnforcer:no-approval-to-revoke", before, yield* state)

        // Within it: the approval to A is set back to 0; B's and every balance unchanged.
        accepted(yield* Effect.promise(() => agent.redeem({ to: usdc, data: approve(spenderA, 0n) }, context)))
        const afterRevocation = yield* state
        assert.deepStrictEqual(afterRevocation, [0n, USD(7), USD(20), 0n])

        // The service's reads of a grant without a budget: nothing spent, what it may do; the follower's record of
        // the redemption (who, by a plain transaction; nothing moved).
        const delegationId = approval.grants![0]!.delegationId!
        const seen = yield* owner.api.delegations.get({ params: { delegationId } })
        assert.deepStrictEqual([seen.status, seen.spentToDate, seen.policySet.revocation], ["active", [], { ...none, erc20Approve: true }])
        let redeemed = yield* owner.api.delegations.redemptions({ params: { delegationId } })
        for (let i = 0; i < 100 && redeemed.length === 0; i++) {
          yield* Effect.sleep(Duration.millis(200))
          redeemed = yield* owner.api.delegations.redemptions({ params: { delegationId } })
        }
        assert.deepStrictEqual(redeemed.map((r) => [r.redeemer, r.via, r.moved]), [[agent.address, "transaction", []]])

        // getGranted lists it in the standard's shape, with the same context.
        const listed = yield* Effect.promise(() => kit.getGrantedExecutionPermissions())
        assert.deepStrictEqual(listed.map((g) => [g.permission.type, g.context]), [["erc20-token-revocation", context]])

        // After revoke (the standard method, the owner signing): the chain refuses even a revocation.
        const [revoked] = yield* Effect.all([
          Effect.promise(() => kit.request({ method: "wallet_revokeExecutionPermission" as never, params: { permissionContext: context } as never })),
          approveNext(owner)
        ], { concurrency: 2 })
        assert.deepStrictEqual(revoked, {})
        refusedOnChain(yield* Effect.promise(() => agent.redeem({ to: usdc, data: approve(spenderB, 0n) }, context)),
          "CannotUseADisabledDelegation", afterRevocation, yield* state)
        assert.lengthOf(yield* Effect.promise(() => kit.getGrantedExecutionPermissions()), 0)
      }))

    it.effect("token-approval-revocation: each grant holds its own primitives; the smart-account agent revokes within them, a stranger and a primitive not granted are refused on chain", () =>
      Effect.gen(function*() {
        const net = yield* Network
        const usdc = net.tokens.usd.address as Address
        const owner = yield* newSession()
        const kit = yield* kitOverWallet(owner)
        const agentSession = yield* newSession()
        const agent = yield* smartAgent(agentSession.key)
        const stranger = yield* eoaAgent(generatePrivateKey())
        const spender = randomAddress()
        yield* mint("usd", owner.account.address as Hex, 10)
        const request = (data: typeof none) => ({
          chainId: net.chainId,
          to: agent.address,
          expiry: nowS() + DAY,
          permission: { type: "token-approval-revocation" as const, isAdjustmentAllowed: false, data }
        })

        // Two grants, each with its own primitives: ERC-20 approvals (and ERC-721 per token), and operator approvals only.
        // (One request each: two enables built for a counterfactual account would both carry its deployment.)
        const grantOne = (data: typeof none) =>
          Effect.all([Effect.promise(() => kit.requestExecutionPermissions([request(data)])), approveNext(owner)], { concurrency: 2 })
        const [first, approval1] = yield* grantOne({ ...none, erc20Approve: true, erc721Approve: true })
        const [second, approval] = yield* grantOne({ ...none, erc721SetApprovalForAll: true })
        assert.deepStrictEqual([approval1.status, approval.status], ["granted", "granted"])
        const responses = [...first, ...second]
        assert.deepStrictEqual(responses.map((r) => r.permission.data), [
          { ...none, erc20Approve: true, erc721Approve: true },
          { ...none, erc721SetApprovalForAll: true }
        ])
        assert.include(approval.grants![0]!.build.humanSummary, "withdraw an ERC-721 operator's approval for all (setApprovalForAll false)")
        assert.notInclude(approval.grants![0]!.build.humanSummary, "ERC-20")
        const [both, operatorsOnly] = responses.map((r) => r.context) as [Hex, Hex]

        yield* ownerApproves(owner, usdc, spender, USD(3))
        const state = Effect.all([allowance(usdc, owner.account.address, spender), tokenBalance(usdc, owner.account.address)])
        const before = yield* state
        assert.deepStrictEqual(before, [USD(3), USD(10)])

        // The grant that does not allow ERC-20 revocations, a stranger redeeming the right grant (not its delegate), an ERC-721-shaped approve: refused.
        refusedOnChain(yield* Effect.promise(() => agent.redeem({ to: usdc, data: approve(spender, 0n) }, operatorsOnly)),
          "ApprovalRevocationEnforcer:erc20-approve-not-allowed", before, yield* state)
        refusedOnChain(yield* Effect.promise(() => stranger.redeem({ to: usdc, data: approve(spender, 0n) }, both)),
          "InvalidDelegate", before, yield* state)
        const notAnNft = yield* Effect.promise(() => agent.redeem({ to: usdc, data: approve(zeroAddress, 1n) }, both))
        assert.isFalse(notAnNft.ok, "approve(address(0), tokenId) is an ERC-721 revocation: USDC has no getApproved")
        assert.deepStrictEqual(yield* state, before)

        // Within the rule, by the delegate's own user operation.
        accepted(yield* Effect.promise(() => agent.redeem({ to: usdc, data: approve(spender, 0n) }, both)))
        assert.deepStrictEqual(yield* state, [0n, USD(10)])
        // Nothing left to revoke: refused rather than a no-op.
        refusedOnChain(yield* Effect.promise(() => agent.redeem({ to: usdc, data: approve(spender, 0n) }, both)),
          "ApprovalRevocationEnforcer:no-approval-to-revoke", [0n, USD(10)], yield* state)

        // Asking for more does not apply: a revocation grant has no budget to carry over (400 naming the grant).
        const more = yield* failure(agentSession.api.approvals.askChange({
          payload: { delegationId: approval1.grants![0]!.delegationId!, changes: { maxActions: 5 }, reason: "more revocations" }
        }))
        assert.deepStrictEqual([more.tag, more.details["field"]], ["BadRequest", "delegationId"], more.message)
        assert.include(more.message, "revocation grant")

        const listed = yield* Effect.promise(() => kit.getGrantedExecutionPermissions())
        assert.sameMembers(listed.map((g) => g.context), [both, operatorsOnly])
        assert.isTrue(listed.every((g) => g.permission.type === "token-approval-revocation"))
      }))

    it.effect("bad revocation requests from the kit: -32602 naming the field; nothing is offered to the owner", () =>
      Effect.gen(function*() {
        const net = yield* Network
        const owner = yield* newSession()
        const kit = yield* kitOverWallet(owner)
        const agent = randomAddress()
        const expiry = nowS() + DAY
        const cases: ReadonlyArray<readonly [unknown, string]> = [
          [{ chainId: net.chainId, to: agent, expiry, permission: { type: "token-approval-revocation", isAdjustmentAllowed: false, data: none } }, "params[0].permission.data"],
          [{ chainId: net.chainId, to: agent, expiry, payee: [randomAddress()], permission: { type: "erc20-token-revocation", isAdjustmentAllowed: false, data: {} } }, "params[0].rules[1].type"],
          [{ chainId: net.chainId, to: agent, expiry: nowS() - 10, permission: { type: "erc20-token-revocation", isAdjustmentAllowed: false, data: {} } }, "params[0].rules[0].data.timestamp"],
          [{ chainId: 999_999, to: agent, expiry, permission: { type: "erc20-token-revocation", isAdjustmentAllowed: false, data: {} } }, "params[0].chainId"]
        ]
        for (const [request, field] of cases) {
          const e = rpcErrorOf(yield* Effect.flip(Effect.tryPromise(() => kit.requestExecutionPermissions([request] as never))))
          assert.strictEqual(e.code, -32602, e.text)
          assert.strictEqual(e.data?.field, field, e.text)
        }
        // The HTTP twin: 400s naming the field, a good request first (all or none). A field the type does not have
        // (the kit's client would drop it) is refused: the dApp may believe it narrows the grant.
        const good = { chainId: toHex(net.chainId), to: agent, permission: { type: "erc20-token-revocation", isAdjustmentAllowed: false, data: {} } }
        const twin: ReadonlyArray<readonly [unknown, string]> = [
          [{ ...good, permission: { ...good.permission, data: { tokenAddress: net.tokens.usd.address } } }, "requests[1].permission.data.tokenAddress"],
          [{ ...good, permission: { type: "token-approval-revocation", isAdjustmentAllowed: false, data: { ...none, erc20Approve: "yes" } } }, "requests[1].permission.data.erc20Approve"],
          [{ ...good, permission: { type: "token-approval-revocation", isAdjustmentAllowed: false, data: { erc20Approve: true, erc721Approve: false, erc721SetApprovalForAll: false, permit2Approve: false, permit2InvalidateNonces: false } } }, "requests[1].permission.data.permit2Lockdown"],
          [{ ...good, to: "0x" + "ab".repeat(19) }, "requests[1].to"],
          [{ ...good, rules: [{ type: "redeemer", data: { addresses: [randomAddress()] } }] }, "requests[1].rules[0].data.addresses"]
        ]
        for (const [request, field] of twin) {
          const e = yield* failure(owner.api.permissions.request({ payload: { requests: [good, request] as never } }))
          assert.strictEqual(e.tag, "BadRequest", `${field}: ${e.message}`)
          assert.strictEqual(e.details["field"], field, e.message)
        }
        assert.lengthOf(yield* owner.api.permissions.approvals({ query: { status: "pending" } }), 0, "nothing offered to the owner")
      }))
  }
)
