/**
 * Chained redemptions recorded as they happened (issue 24, item 5). The delegate of a grant that
 * allows redelegation signs a child delegation (no caveats of its own) to a stranger's plain
 * wallet; the stranger redeems [child, grant] in an ordinary transaction and receives 4 USDC. The
 * chain follower decodes it: the owner's log shows the stranger as the actor, the 4 USDC, the
 * recipient and the grant; the delegate's log shows it too; the record keeps the whole chain; the
 * grant's `spentToDate` counts it. A redemption of a grant this service did not build (the owner's
 * key signed it with the kit directly) is recorded as such.
 */
import { assert, layer } from "@effect/vitest"
import { createDelegation } from "@metamask/smart-accounts-kit"
import { Duration, Effect, Schedule } from "effect"
import type { Address, Hex } from "viem"
import { generatePrivateKey } from "viem/accounts"
import { Network } from "../../src/chain/Network.ts"
import { type Delegation, legTypedData } from "../../src/delegations/Caveats.ts"
import { RedemptionRepo } from "../../src/follower/RedemptionRepo.ts"
import { delegationHashOf } from "../../src/follower/Redemptions.ts"
import { mint } from "../support/TestChain.ts"
import { TestServerLive } from "../support/TestServer.ts"
import { newSession, signLeg, signOp } from "../delegations/helpers.ts"
import { accepted, eoaAgent, erc20Transfer, smartAgent, standingOf, tokenBalance } from "../permissions/agent.ts"

process.env.DO_NOT_TRACK = "1"

const USD = (n: number) => BigInt(Math.round(n * 1_000_000))

/** Polls `read` until `ready` holds (the follower reads new blocks every 300 ms in tests). */
const eventually = <A, E, R>(read: Effect.Effect<A, E, R>, ready: (a: A) => boolean) =>
  read.pipe(
    Effect.flatMap((a) => ready(a) ? Effect.succeed(a) : Effect.fail("not yet" as const)),
    Effect.retry(Schedule.spaced(Duration.millis(250))),
    Effect.timeout(Duration.seconds(30)),
    Effect.orDie
  )

layer(TestServerLive(), { timeout: Duration.seconds(120), excludeTestServices: true })("chained redemptions", (it) => {
  it.effect("the stranger at the end of a chain is recorded as the redeemer, with the 4 USDC, on the owner's log and the delegate's", () =>
    Effect.gen(function*() {
      const net = yield* Network
      const usdc = net.tokens.usd.address
      const owner = yield* newSession()
      const delegateSession = yield* newSession()
      const delegate = yield* smartAgent(delegateSession.key)
      const stranger = yield* eoaAgent(generatePrivateKey())
      yield* mint("usd", owner.account.address as Hex, 50)
      const build = yield* owner.api.delegations.build({
        payload: {
          name: "passes it on", kind: "agent", delegateeAddress: delegate.address, chainId: net.chainId,
          budgets: [{ token: { symbol: "USDC" }, amount: 10 }], perActionMax: { token: { symbol: "USDC" }, amount: 5 }, maxActions: 5,
          redeemers: { mode: "redelegation" }
        }
      })
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
      const grant = yield* standingOf(build, signature)

      // The delegate spends 1 USDC itself (its own user operation, around the relay).
      accepted(yield* Effect.promise(() => delegate.redeem({ to: usdc, data: erc20Transfer(delegate.address, USD(1)) }, [grant])))
      // It signs a child delegation with no caveats to the stranger, who redeems [child, grant] in a plain transaction.
      const unsigned: Delegation = {
        delegate: stranger.address,
        delegator: delegate.address,
        authority: delegationHashOf({ ...grant, salt: BigInt(grant.salt) }),
        caveats: [],
        salt: "0x07",
        signature: "0x"
      }
      const child = { ...unsigned, signature: yield* signLeg(delegateSession.key, legTypedData(unsigned, net.chainId, net.delegation.DelegationManager) as never) }
      const mined = accepted(yield* Effect.promise(() => stranger.redeem({ to: usdc, data: erc20Transfer(stranger.address, USD(4)) }, [child, grant])))
      assert.strictEqual(yield* tokenBalance(usdc, stranger.address), USD(4))
      const tx = mined.transactionHash.toLowerCase()

      // The owner's log: the stranger as actor, what moved, the grant, the transaction.
      const history = yield* eventually(
        owner.api.activity.list({ query: { limit: 50, delegationId: created.id } }).pipe(Effect.map((p) => p.items)),
        (items) => items.some((e) => e.txHash === tx)
      )
      const entry = history.find((e) => e.txHash === tx)!
      assert.deepStrictEqual(
        [entry.action, entry.actor, entry.amount, entry.token, entry.recipient, entry.status, entry.provenance],
        ["delegated_action", stranger.address, 4, "USDC", stranger.address, "executed", "onchain_unrelayed"]
      )
      // The delegate's own redemption: the delegate as actor, 1 USDC.
      const own = history.find((e) => e.action === "delegated_action" && e.txHash !== tx)!
      assert.deepStrictEqual([own.actor, own.amount], [delegate.address, 1])

      // The delegate's log: someone it passed the grant to redeemed it.
      const delegateLog = yield* eventually(
        delegateSession.api.activity.list({ query: { limit: 50 } }).pipe(Effect.map((p) => p.items)),
        (items) => items.some((e) => e.txHash === tx)
      )
      const passed = delegateLog.find((e) => e.txHash === tx)!
      assert.deepStrictEqual([passed.actor, passed.amount, passed.recipient, passed.delegationId], [stranger.address, 4, stranger.address, created.id])

      // The record: every delegation of the chain with its delegator and delegate, the redeemer, what moved.
      const records = yield* RedemptionRepo.use((r) => r.listByDelegation(created.id)).pipe(Effect.provide(RedemptionRepo.layer))
      assert.lengthOf(records, 2)
      const chained = records.find((r) => r.tx_hash === tx)!
      assert.deepStrictEqual(chained.chain.map((l) => [l.delegator, l.delegate]), [
        [delegate.address, stranger.address],
        [owner.account.address.toLowerCase(), delegate.address]
      ])
      assert.strictEqual(chained.root_hash, leg.permissionId.toLowerCase())
      assert.deepStrictEqual([chained.redeemer, chained.via], [stranger.address, "transaction"])
      assert.deepStrictEqual(chained.moved, [{ token: usdc.toLowerCase(), to: stranger.address, units: USD(4).toString() }])
      assert.strictEqual(chained.owner_entry_id, entry.id)
      assert.strictEqual(chained.delegate_entry_id, passed.id)
      const direct = records.find((r) => r.tx_hash !== tx)!
      assert.deepStrictEqual([direct.redeemer, direct.via, direct.chain.length, direct.delegate_entry_id], [delegate.address, "user_operation", 1, null])

      // Counted: 5 of 10 spent, read from the chain.
      const spent = (yield* owner.api.delegations.get({ params: { delegationId: created.id } })).spentToDate[0]!
      assert.deepStrictEqual([spent.spent, spent.remaining], [5, 5])
      // Read once each, even as the follower keeps going.
      yield* Effect.sleep(Duration.millis(800))
      const again = yield* owner.api.activity.list({ query: { limit: 50, delegationId: created.id } })
      assert.lengthOf(again.items.filter((e) => e.txHash === tx), 1)
    }))

  it.effect("a grant this service did not build: its redemption is on the owner's log as foreign_grant_redeemed", () =>
    Effect.gen(function*() {
      const net = yield* Network
      const usdc = net.tokens.usd.address
      const owner = yield* newSession()
      const agent = yield* eoaAgent(generatePrivateKey())
      yield* mint("usd", owner.account.address as Hex, 20)
      // The owner's account exists on chain (an enable deploys it); then the owner's key signs a delegation with the kit alone.
      yield* owner.api.delegations.build({
        payload: { name: "deploy", kind: "agent", delegateeAddress: agent.address, chainId: net.chainId, budgets: [{ token: { symbol: "USDC" }, amount: 1 }] }
      }).pipe(Effect.flatMap((b) =>
        Effect.gen(function*() {
          const leg = b.delegations[0]!
          return yield* owner.api.delegations.create({
            payload: {
              userOp: yield* signOp(owner.key, b.enableUserOp),
              userOpHash: b.userOpHash,
              intentType: "delegation_enable",
              delegationSignatures: [{ permissionId: leg.permissionId, signature: yield* signLeg(owner.key, leg.typedData) }]
            }
          })
        })
      ))
      const foreign = createDelegation({
        environment: net.delegation as never,
        scope: { type: "erc20TransferAmount", tokenAddress: usdc, maxAmount: USD(2) },
        from: owner.account.address as Address,
        to: agent.address
      }) as unknown as Delegation
      const signed = { ...foreign, signature: yield* signLeg(owner.key, legTypedData(foreign, net.chainId, net.delegation.DelegationManager) as never) }
      const mined = accepted(yield* Effect.promise(() => agent.redeem({ to: usdc, data: erc20Transfer(agent.address, USD(1.5)) }, [signed])))
      const tx = mined.transactionHash.toLowerCase()
      const history = yield* eventually(
        owner.api.activity.list({ query: { limit: 50 } }).pipe(Effect.map((p) => p.items)),
        (items) => items.some((e) => e.txHash === tx)
      )
      const entry = history.find((e) => e.txHash === tx)!
      assert.deepStrictEqual(
        [entry.action, entry.actor, entry.amount, entry.token, entry.recipient, entry.delegationId],
        ["foreign_grant_redeemed", agent.address, 1.5, "USDC", agent.address, undefined]
      )
      const records = yield* RedemptionRepo.use((r) => r.listForeign(owner.account.id)).pipe(Effect.provide(RedemptionRepo.layer))
      assert.lengthOf(records, 1)
      assert.deepStrictEqual([records[0]!.delegation_id, records[0]!.redeemer, records[0]!.owner_entry_id], [null, agent.address, entry.id])
    }))
})
