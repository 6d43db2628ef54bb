/**
 * One service over two chains (issue 29), end to end on the run's second local chain (31338,
 * the same contracts at the same addresses as 31337): a grant built, enabled, used and revoked
 * there, its record naming the chain and proven by an anchor on that chain, the account frozen
 * there alone; reads that span both chains and filter by one. Then what an attacker tries
 * across chains: an operation signed for one chain relayed (or sent straight to the bundler)
 * as the other, and a grant signed on one chain redeemed on the other around the service.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { type Address, type Hex, http } from "viem"
import { createBundlerClient } from "viem/account-abstraction"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { Anchor } from "../../src/anchor/Anchor.ts"
import { fromWire } from "../../src/builds/Wire.ts"
import { makeAttacker, redeemCall, refused, transfer } from "../delegations/attacker.ts"
import { failure, newSession, relay, signOp } from "../delegations/helpers.ts"
import { mint, secondNetwork, testNetwork } from "../support/TestChain.ts"
import { TestServerLive } from "../support/TestServer.ts"
import { accountOn, balanceOn, grantOn } from "./support.ts"

process.env.DO_NOT_TRACK = "1"

const A = 31337
const B = 31338

layer(TestServerLive(), { excludeTestServices: true, timeout: 180_000 })("two chains, one service", (it) => {
  it.effect("grant → act → revoke and freeze on the second chain; the record names it, spans both chains and filters by one", () =>
    Effect.gen(function*() {
      const owner = yield* newSession()
      const delegate = yield* newSession()
      const recipient = privateKeyToAccount(generatePrivateKey()).address.toLowerCase()
      const ownerB = yield* accountOn(owner, B)
      const ownerA = yield* accountOn(owner, A)
      assert.strictEqual(ownerB.address, ownerA.address, "the same account address on both chains")
      const usdB = secondNetwork().tokens.usd.address
      const usdA = testNetwork().tokens.usd.address
      yield* mint("usd", ownerB.address as Address, 20, B)

      const { created } = yield* grantOn(owner, delegate, B, recipient)
      assert.strictEqual(created.chainId, B)
      assert.strictEqual(created.chain, "Local devnet B")

      // The delegate acts on chain B: USDC moves there, and nothing on chain A.
      const action = yield* delegate.api.delegations.act({ params: { delegationId: created.id }, payload: { recipient, amount: 4 } })
      assert.strictEqual(action.userOp.chainId, B)
      const executed = yield* relay(delegate.api, yield* signOp(delegate.key, action.userOp))
      assert.strictEqual(executed.outcome, "mined")
      assert.strictEqual(executed.chainId, B)
      assert.strictEqual(yield* balanceOn(secondNetwork(), usdB, recipient), 4_000_000n)
      assert.strictEqual(yield* balanceOn(testNetwork(), usdA, recipient), 0n)

      // Reads span every chain; a chain filter keeps one.
      const all = yield* owner.api.delegations.list({ query: {} })
      const mine = all.find((d) => d.id === created.id)!
      assert.strictEqual(mine.spentToDate[0]!.spent, 4)
      assert.isFalse((yield* owner.api.delegations.list({ query: { chainId: A } })).some((d) => d.id === created.id))
      assert.isTrue((yield* owner.api.delegations.list({ query: { chainId: B } })).some((d) => d.id === created.id))
      const unserved = yield* failure(owner.api.delegations.list({ query: { chainId: 5 } }))
      assert.strictEqual(unserved.tag, "BadRequest")
      assert.deepStrictEqual(unserved.details["served"], [{ chainId: A, name: "Local devnet" }, { chainId: B, name: "Local devnet B" }])

      const activity = yield* owner.api.activity.list({ query: { limit: 100 } })
      const onB = activity.items.filter((e) => e.chainId === B)
      assert.isAbove(onB.length, 1, "the enable and the owner's entry of the action, on chain B")
      assert.isTrue(onB.every((e) => e.chain === "Local devnet B"))
      assert.strictEqual((yield* owner.api.activity.list({ query: { limit: 100, chainId: A } })).items.length, 0)

      // Anchored on the account's own chain; the proof names it.
      const anchored = yield* (yield* Anchor).anchorNow
      assert.isTrue(anchored.some((r) => r.chainId === B && r.heads.some((h) => h.accountId === ownerB.id)))
      const proof = yield* owner.api.activity.proof({ params: { eventId: onB[0]!.id } })
      assert.strictEqual(proof.anchor.chainId, B)

      // Revoked on chain B: the next action is declined.
      const revoke = yield* owner.api.delegations.revoke({ params: { delegationId: created.id } })
      assert.strictEqual(revoke.userOp.chainId, B)
      assert.strictEqual((yield* relay(owner.api, yield* signOp(owner.key, revoke.userOp))).outcome, "mined")
      const after = yield* failure(delegate.api.delegations.act({ params: { delegationId: created.id }, payload: { recipient, amount: 1 } }))
      assert.strictEqual(after.tag, "OutOfScope")

      // The account on chain B freezes alone.
      const freeze = yield* owner.api.accounts.buildRules({ payload: { intentType: "account_freeze", chainId: B } })
      assert.strictEqual(freeze.userOp.chainId, B)
      assert.strictEqual((yield* relay(owner.api, yield* signOp(owner.key, freeze.userOp))).outcome, "mined")
      assert.isTrue((yield* owner.api.accounts.getRules({ query: { chainId: B } })).frozen)
      assert.isFalse((yield* owner.api.accounts.getRules({ query: {} })).frozen)
    }))

  it.effect("an operation signed for chain A is refused as chain B: by the relay, and by chain B's bundler around it", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const owner = yield* newSession()
      const build = yield* owner.api.accounts.buildRules({ payload: { intentType: "account_freeze" } })
      assert.strictEqual(build.userOp.chainId, A)
      const signed = yield* signOp(owner.key, build.userOp)

      // Replayed through the relay as chain B: its hash names chain B, and nothing was built there.
      const replay = yield* failure(owner.api.userops.submit({ payload: { ...signed, chainId: B } }))
      assert.include(["NotFound", "BadRequest"], replay.tag)
      const stored = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM user_operations WHERE chain_id = ${B}
        AND sender = ${signed.sender.toLowerCase()}`
      assert.strictEqual(stored[0]!.n, 0, "nothing stored for chain B")

      // Straight to chain B's bundler: the owner's signature (and the paymaster's) name chain A.
      const net = secondNetwork()
      const bundler = createBundlerClient({ transport: http(net.bundlerUrl) })
      const direct = yield* Effect.promise(() =>
        bundler.sendUserOperation({ ...fromWire(signed), entryPointAddress: net.entryPoint } as never).then(
          () => "accepted",
          (e: unknown) => e instanceof Error ? e.message : String(e)
        )
      )
      assert.notStrictEqual(direct, "accepted")
      assert.match(direct, /AA2[34]|AA3[34]|signature/i)
      assert.isFalse((yield* owner.api.accounts.getRules({ query: { chainId: B } })).frozen)

      // Relayed as signed (chain A), it executes there.
      assert.strictEqual((yield* relay(owner.api, signed)).outcome, "mined")
      assert.isTrue((yield* owner.api.accounts.getRules({ query: {} })).frozen)
    }))

  it.effect("a grant signed on chain A authorizes nothing on chain B: the delegate's own redemptions there are refused", () =>
    Effect.gen(function*() {
      const owner = yield* newSession()
      const delegate = yield* newSession()
      const recipient = privateKeyToAccount(generatePrivateKey()).address.toLowerCase()
      const { signed } = yield* grantOn(owner, delegate, A, recipient)

      // The owner's account exists on chain B too (deployed by an operation there) and holds USDC.
      const ownerB = yield* accountOn(owner, B)
      const deploy = yield* owner.api.accounts.buildRules({ payload: { intentType: "account_freeze", chainId: B } })
      assert.strictEqual((yield* relay(owner.api, yield* signOp(owner.key, deploy.userOp))).outcome, "mined")
      yield* mint("usd", ownerB.address as Address, 20, B)

      const delegateB = yield* accountOn(delegate, B)
      const attacker = yield* makeAttacker(delegate.key as Hex, delegateB.address, undefined, secondNetwork())
      const usdB = secondNetwork().tokens.usd.address
      // Chain B's DelegationManager (the same address) checks the owner's signature for chain B: it is not.
      yield* refused(
        attacker,
        { tokens: [usdB], holders: [ownerB.address as Address, recipient as Address] },
        redeemCall(signed, transfer(usdB, recipient as Address, 1_000_000n)),
        "InvalidERC1271Signature"
      )
    }))
})
