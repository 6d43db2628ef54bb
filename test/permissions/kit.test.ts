/**
 * A real client proves it (issue 24, item 6): a dApp's ERC-7715 request as the kit sends it, the
 * grant the service builds for it (its own caveats: Grant.ts), enabled with the owner's signature,
 * and the agent redeeming the permission context it got back with the kit alone, on the local chain:
 * a smart account with `erc7710BundlerActions`, an EOA with `sendTransactionWithDelegation`. Within
 * the limits tokens move; beyond a limit, after expiry, after revoke, with call data, to another
 * payee, and by a redeemer the grant does not name (the chained-redemption attack), the chain
 * refuses and nothing moves (balances read on chain). docs/permissions.md maps each case.
 */
import { assert, layer } from "@effect/vitest"
import { decodeDelegations } from "@metamask/smart-accounts-kit/utils"
import { Duration, Effect } from "effect"
import { type Address, type Hex, parseEther } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { Network } from "../../src/chain/Network.ts"
import { type Delegation, legTypedData } from "../../src/delegations/Caveats.ts"
import { NATIVE_ADDRESS } from "../../src/tokens/Native.ts"
import { delegationHashOf } from "../../src/follower/Redemptions.ts"
import { redeemBatchCall } from "../delegations/attacker.ts"
import { failure, newSession, relay, session, signLeg, signOp } from "../delegations/helpers.ts"
import { mint } from "../support/TestChain.ts"
import { TestServerLive } from "../support/TestServer.ts"
import {
  accepted,
  decodedRedemptions,
  eoaAgent,
  erc20Transfer,
  ethBalance,
  fundEth,
  grant7715,
  refusedOnChain,
  smartAgent,
  standingOf,
  tokenBalance
} from "./agent.ts"

process.env.DO_NOT_TRACK = "1"

const randomAddress = () => privateKeyToAccount(generatePrivateKey()).address.toLowerCase() as Address
const USD = (n: number) => BigInt(Math.round(n * 1_000_000))
const nowS = () => Math.floor(Date.now() / 1000)
const DAY = 86_400

layer(TestServerLive({ config: { DELEGATION_MIN_LIFETIME: "1 second" } }), { timeout: Duration.seconds(180), excludeTestServices: true })(
  "the kit as the client",
  (it) => {
    it.effect("erc20-token-periodic redeemed by the agent's smart account (erc7710BundlerActions): within the period, beyond it, after revoke", () =>
      Effect.gen(function*() {
        const net = yield* Network
        const usdc = net.tokens.usd.address
        const owner = yield* newSession()
        const agentSession = yield* newSession()
        const alice = randomAddress()
        yield* mint("usd", owner.account.address as Hex, 50)
        const g = yield* grant7715(owner, {
          chainId: net.chainId,
          to: agentSession.account.address as Hex,
          expiry: nowS() + DAY,
          permission: {
            type: "erc20-token-periodic",
            isAdjustmentAllowed: false,
            data: { tokenAddress: usdc, periodAmount: USD(5), periodDuration: DAY, justification: "weekly groceries" }
          }
        })
        // A day's period that lasts to the expiry is one allowance: the summary says what the chain holds.
        assert.include(g.summary, "at most 5 USDC in total")
        assert.include(g.summary, "Only the delegate itself may redeem it")
        assert.strictEqual(g.response.delegationManager, net.delegation.DelegationManager)
        assert.deepStrictEqual(g.response.dependencies, [], "the enable deployed the owner's account")

        const agent = yield* smartAgent(agentSession.key)
        assert.strictEqual(agent.address, agentSession.account.address.toLowerCase())
        const mined = accepted(yield* Effect.promise(() => agent.redeem({ to: usdc, data: erc20Transfer(alice, USD(3)) }, g.response.context)))
        assert.strictEqual(yield* tokenBalance(usdc, alice), USD(3))
        // The bundle's receipt and call data say who redeemed what: the agent's account, in its operation.
        const [seenOnChain, ...none] = yield* decodedRedemptions(mined)
        assert.lengthOf(none, 0)
        assert.strictEqual(seenOnChain!.rootHash, g.permissionId)
        assert.deepStrictEqual(seenOnChain!.chain.map((l) => [l.delegator, l.delegate]), [[owner.account.address.toLowerCase(), agent.address]])
        assert.deepStrictEqual([seenOnChain!.redeemer, seenOnChain!.via], [agent.address, "user_operation"])
        assert.deepStrictEqual(seenOnChain!.moved.map((m) => [m.token, m.to, m.units]), [[usdc.toLowerCase(), alice, USD(3)]])

        const before = [yield* tokenBalance(usdc, alice), yield* tokenBalance(usdc, owner.account.address)]
        const over = yield* Effect.promise(() => agent.redeem({ to: usdc, data: erc20Transfer(alice, USD(2) + 1n) }, g.response.context))
        refusedOnChain(over, "MultiTokenPeriodEnforcer:transfer-amount-exceeded", before, [yield* tokenBalance(usdc, alice), yield* tokenBalance(usdc, owner.account.address)])

        // The agent's own lane reads what the chain shows.
        const seen = yield* agentSession.api.delegations.get({ params: { delegationId: g.id } })
        assert.deepStrictEqual([seen.spentToDate[0]!.spent, seen.spentToDate[0]!.remaining], [3, 2])

        const revoke = yield* owner.api.delegations.revoke({ params: { delegationId: g.id } })
        assert.strictEqual((yield* relay(owner.api, yield* signOp(owner.key, revoke.userOp))).outcome, "mined")
        const afterRevoke = yield* Effect.promise(() => agent.redeem({ to: usdc, data: erc20Transfer(alice, USD(1)) }, g.response.context))
        refusedOnChain(afterRevoke, "CannotUseADisabledDelegation", before, [yield* tokenBalance(usdc, alice), yield* tokenBalance(usdc, owner.account.address)])
      }))

    it.effect("an EOA agent: its lane sees the grant; it redeems with sendTransactionWithDelegation within the allowance; beyond it and after expiry the chain refuses", () =>
      Effect.gen(function*() {
        const net = yield* Network
        const usdc = net.tokens.usd.address
        const owner = yield* newSession()
        const agentKey = generatePrivateKey()
        const agentLane = yield* session(agentKey)
        const agent = yield* eoaAgent(agentKey)
        const alice = randomAddress()
        yield* mint("usd", owner.account.address as Hex, 50)
        const madeAt = Date.now()
        const g = yield* grant7715(owner, {
          chainId: net.chainId,
          to: agent.address,
          expiry: nowS() + 3600,
          permission: { type: "erc20-token-allowance", isAdjustmentAllowed: false, data: { tokenAddress: usdc, allowanceAmount: USD(4) } }
        })
        // A grant that expires within seconds: its clock runs out while the other grant is used, so
        // the test waits for real time only for what is left of it. Its margin is three times what
        // making the first grant took (at least 6 s): a fixed 6 s ran out before its enable was on
        // chain on a loaded host ('expired' at creation).
        const expiry = nowS() + Math.max(6, Math.ceil((3 * (Date.now() - madeAt)) / 1000))
        const expiring = yield* grant7715(owner, {
          chainId: net.chainId,
          to: agent.address,
          expiry,
          permission: { type: "erc20-token-allowance", isAdjustmentAllowed: false, data: { tokenAddress: usdc, allowanceAmount: USD(4) } }
        })

        // A delegate that could never redeem is refused at build, with the reason.
        const noRedeemer = yield* failure(owner.api.delegations.build({
          payload: { name: "x", kind: "agent", delegateeAddress: net.delegation.DelegationManager, chainId: net.chainId, budgets: [{ token: { symbol: "USDC" }, amount: 1 }] }
        }))
        assert.strictEqual(noRedeemer.tag, "BadRequest")
        assert.include(noRedeemer.message, "delegateeAddress cannot redeem this grant: the delegate is this deployment's DelegationManager")

        // The signer's own key holds the grant: its lane lists and reads it; the action endpoint says how an EOA redeems.
        const held = yield* agentLane.api.delegations.list({ query: { role: "delegatee" } })
        assert.sameMembers(held.map((d) => d.id), [g.id, expiring.id])
        assert.strictEqual((yield* agentLane.api.delegations.get({ params: { delegationId: g.id } })).delegateeAddress, agent.address)
        const act = yield* failure(agentLane.api.delegations.act({ params: { delegationId: g.id }, payload: { recipient: alice, amount: 1 } }))
        assert.strictEqual(act.tag, "BadRequest")
        assert.include(act.message, "plain address (an EOA)")

        const mined = accepted(yield* Effect.promise(() => agent.redeem({ to: usdc, data: erc20Transfer(alice, USD(3)) }, g.response.context)))
        const [plain] = yield* decodedRedemptions(mined)
        assert.deepStrictEqual([plain!.redeemer, plain!.via, plain!.rootHash], [agent.address, "transaction", g.permissionId])
        assert.deepStrictEqual(plain!.moved.map((m) => [m.to, m.units]), [[alice, USD(3)]])
        const balances = Effect.all([tokenBalance(usdc, alice), tokenBalance(usdc, owner.account.address)])
        const before = yield* balances
        assert.strictEqual(before[0], USD(3))
        refusedOnChain(yield* Effect.promise(() => agent.redeem({ to: usdc, data: erc20Transfer(alice, USD(2)) }, g.response.context)),
          "MultiTokenPeriodEnforcer:transfer-amount-exceeded", before, yield* balances)

        yield* Effect.sleep(Duration.millis(Math.max(0, expiry * 1000 - Date.now()) + 1_500))
        refusedOnChain(yield* Effect.promise(() => agent.redeem({ to: usdc, data: erc20Transfer(alice, USD(1)) }, expiring.response.context)),
          "TimestampEnforcer:expired-delegation", before, yield* balances)
      }))

    it.effect("the chained-redemption attack: a child delegation to a stranger is refused unless the grant allows redelegation; a named redeemer may", () =>
      Effect.gen(function*() {
        const net = yield* Network
        const usdc = net.tokens.usd.address
        const dm = net.delegation.DelegationManager
        const owner = yield* newSession()
        const delegateSession = yield* newSession()
        const delegate = yield* smartAgent(delegateSession.key)
        const strangerKey = generatePrivateKey()
        const stranger = yield* eoaAgent(strangerKey)
        const facilitator = yield* eoaAgent(generatePrivateKey())
        yield* mint("usd", owner.account.address as Hex, 100)
        const request = (redeemer?: ReadonlyArray<Address>) => ({
          chainId: net.chainId,
          to: delegate.address,
          expiry: nowS() + DAY,
          ...(redeemer === undefined ? {} : { redeemer }),
          permission: { type: "erc20-token-allowance" as const, isAdjustmentAllowed: false, data: { tokenAddress: usdc, allowanceAmount: USD(10) } }
        })
        const only = yield* grant7715(owner, request())
        const named = yield* grant7715(owner, request([delegate.address, facilitator.address]))
        assert.include(named.summary, `Only the delegate and ${facilitator.address} may redeem it`)

        // The delegate's own redemption (deploys its account, whose ERC-1271 then vouches for its child delegations).
        accepted(yield* Effect.promise(() => delegate.redeem({ to: usdc, data: erc20Transfer(delegate.address, USD(1)) }, only.response.context)))

        /** The delegate signs a child delegation with no caveats of its own under `parent`, to `to`: the context [child, parent]. */
        const chain = (parent: Delegation, to: Address) =>
          Effect.gen(function*() {
            const unsigned: Delegation = {
              delegate: to,
              delegator: delegate.address,
              authority: delegationHashOf({ ...parent, salt: BigInt(parent.salt) }),
              caveats: [],
              salt: "0x01",
              signature: "0x"
            }
            const signature = yield* signLeg(delegateSession.key, legTypedData(unsigned, net.chainId, dm) as never)
            return [{ ...unsigned, signature } as Delegation, parent]
          })
        const viaChain = (redeemer: typeof stranger, parent: Delegation, amount: bigint) =>
          Effect.gen(function*() {
            const context = yield* chain(parent, redeemer.address)
            return yield* Effect.promise(() => redeemer.redeem({ to: usdc, data: erc20Transfer(redeemer.address, amount) }, context))
          })
        const balances = Effect.all([tokenBalance(usdc, stranger.address), tokenBalance(usdc, facilitator.address), tokenBalance(usdc, owner.account.address)])

        // Only the delegate may redeem: the stranger's [child, grant] reverts, whoever built the transaction.
        const before = yield* balances
        refusedOnChain(yield* viaChain(stranger, only.signed, USD(4)), "RedeemerEnforcer:unauthorized-redeemer", before, yield* balances)
        // Named redeemers: the facilitator may, the stranger still may not.
        refusedOnChain(yield* viaChain(stranger, named.signed, USD(4)), "RedeemerEnforcer:unauthorized-redeemer", before, yield* balances)
        accepted(yield* viaChain(facilitator, named.signed, USD(2)))
        assert.strictEqual(yield* tokenBalance(usdc, facilitator.address), USD(2))

        // Redelegation allowed (the service's own build input): the stranger's chain goes through, within the grant's limits.
        const open = yield* owner.api.delegations.build({
          payload: {
            name: "open", kind: "agent", delegateeAddress: delegate.address, chainId: net.chainId,
            budgets: [{ token: { symbol: "USDC" }, amount: 10 }], perActionMax: { token: { symbol: "USDC" }, amount: 5 }, maxActions: 5,
            redeemers: { mode: "redelegation" }
          }
        })
        assert.include(open.humanSummary, "The delegate may pass it on")
        const leg = open.delegations[0]!
        const signature = yield* signLeg(owner.key, leg.typedData)
        const created = yield* owner.api.delegations.create({
          payload: {
            userOp: yield* signOp(owner.key, open.enableUserOp),
            userOpHash: open.userOpHash,
            intentType: "delegation_enable",
            delegationSignatures: [{ permissionId: leg.permissionId, signature }]
          }
        })
        const openSigned = yield* standingOf(open, signature)
        accepted(yield* Effect.promise(() => delegate.redeem({ to: usdc, data: erc20Transfer(delegate.address, USD(1)) }, [openSigned])))
        const chained = accepted(yield* viaChain(stranger, openSigned, USD(4)))
        assert.strictEqual(yield* tokenBalance(usdc, stranger.address), USD(4))
        // Decoded as it happened: the chain [child, grant], the stranger as redeemer, 4 USDC to it.
        const [record] = yield* decodedRedemptions(chained)
        assert.strictEqual(record!.rootHash, leg.permissionId.toLowerCase())
        assert.deepStrictEqual(record!.chain.map((l) => [l.delegator, l.delegate]), [
          [delegate.address, stranger.address],
          [owner.account.address.toLowerCase(), delegate.address]
        ])
        assert.deepStrictEqual([record!.redeemer, record!.via], [stranger.address, "transaction"])
        assert.deepStrictEqual(record!.moved.map((m) => [m.token, m.to, m.units]), [[usdc.toLowerCase(), stranger.address, USD(4)]])
        // Its limits still hold on the chain: over the per-action maximum, the stranger is refused.
        const now = yield* balances
        refusedOnChain(yield* viaChain(stranger, openSigned, USD(5) + 1n), "TransferCapEnforcer:amount-exceeded", now, yield* balances)
        const spent = (yield* owner.api.delegations.get({ params: { delegationId: created.id } })).spentToDate[0]!
        assert.deepStrictEqual([spent.spent, spent.remaining], [5, 5], "spent 5 of 10, read from the chain")
      }))

    it.effect("erc20-token-stream: what has accrued can be redeemed, no more; the service declines the same (stream_exceeded)", () =>
      Effect.gen(function*() {
        const net = yield* Network
        const usdc = net.tokens.usd.address
        const owner = yield* newSession()
        const agentSession = yield* newSession()
        const alice = randomAddress()
        yield* mint("usd", owner.account.address as Hex, 50)
        const g = yield* grant7715(owner, {
          chainId: net.chainId,
          to: agentSession.account.address as Hex,
          expiry: nowS() + DAY,
          // The maximum asked is more than can accrue: held only because the request allows adjustment (erc7715.test.ts refuses it otherwise).
          permission: { type: "erc20-token-stream", isAdjustmentAllowed: true, data: { tokenAddress: usdc, initialAmount: USD(2), amountPerSecond: 1n, maxAmount: USD(10) } }
        })
        const madeAt = Date.now()
        // Asked for at most 10 USDC: in a day at most 2.0864 can accrue, which is all the chain would ever allow.
        assert.include(g.summary, "at most 2.0864 USDC in total as a stream (2 USDC at once, then 0.000001 USDC per second")
        const agent = yield* smartAgent(agentSession.key)
        accepted(yield* Effect.promise(() => agent.redeem({ to: usdc, data: erc20Transfer(alice, USD(2)) }, g.response.context)))
        const balances = Effect.all([tokenBalance(usdc, alice), tokenBalance(usdc, owner.account.address)])
        const before = yield* balances
        refusedOnChain(yield* Effect.promise(() => agent.redeem({ to: usdc, data: erc20Transfer(alice, USD(1)) }, g.response.context)),
          "ERC20StreamingEnforcer:allowance-exceeded", before, yield* balances)

        // At least a second after the stream's start (it started when the grant was made): something has accrued.
        yield* Effect.sleep(Duration.millis(Math.max(0, madeAt + 1_100 - Date.now())))
        const spent = (yield* agentSession.api.delegations.get({ params: { delegationId: g.id } })).spentToDate[0]!
        assert.strictEqual(spent.spent, 2, "the streaming enforcer's spent, read from the chain")
        assert.isAbove(spent.unlocked!, 2)
        assert.isBelow(spent.unlocked!, 2.01)
        assert.isBelow(spent.remaining, 0.01)
        // Not accrued yet: declined with when it will have; beyond what can ever accrue: declined for good.
        const later = yield* failure(agentSession.api.delegations.act({ params: { delegationId: g.id }, payload: { recipient: alice, amount: 0.05 } }))
        assert.strictEqual(later.reason, "stream_exceeded")
        const at = new Date(String(later.details["resetsAt"])).getTime()
        assert.isAbove(at, Date.now() + 40_000_000, "0.05 USDC at 0.000001 per second: about 50,000 s from now")
        const never = yield* failure(agentSession.api.delegations.act({ params: { delegationId: g.id }, payload: { recipient: alice, amount: 1 } }))
        assert.strictEqual(never.reason, "stream_exceeded")
        assert.include(never.message, "maximum does not allow it")
      }))

    it.effect("native-token-periodic and -stream: the EOA agent sends ETH within the limits; another payee, call data, over the period, beyond the stream are refused; the service's own native action", () =>
      Effect.gen(function*() {
        const net = yield* Network
        const owner = yield* newSession()
        const agent = yield* eoaAgent(generatePrivateKey())
        const [alice, bob] = [randomAddress(), randomAddress()]
        const g = yield* grant7715(owner, {
          chainId: net.chainId,
          to: agent.address,
          expiry: nowS() + DAY,
          payee: [alice],
          permission: { type: "native-token-periodic", isAdjustmentAllowed: false, data: { periodAmount: parseEther("0.01"), periodDuration: DAY } }
        })
        assert.include(g.summary, "It may only send ETH, with no call data")
        yield* fundEth(owner.account.address, "1")
        const sent = accepted(yield* Effect.promise(() => agent.redeem({ to: alice, value: parseEther("0.004") }, g.response.context)))
        assert.strictEqual(yield* ethBalance(alice), parseEther("0.004"))
        const [value] = yield* decodedRedemptions(sent)
        assert.deepStrictEqual(value!.moved, [{ token: NATIVE_ADDRESS, to: alice, units: parseEther("0.004") }])
        const balances = Effect.all([ethBalance(alice), ethBalance(bob), ethBalance(owner.account.address)])
        const before = yield* balances
        refusedOnChain(yield* Effect.promise(() => agent.redeem({ to: bob, value: 1n }, g.response.context)),
          "AllowedTargetsEnforcer:target-address-not-allowed", before, yield* balances)
        refusedOnChain(yield* Effect.promise(() => agent.redeem({ to: alice, value: 1n, data: "0xdeadbeef" }, g.response.context)),
          "ExactCalldataEnforcer:invalid-calldata", before, yield* balances)
        refusedOnChain(yield* Effect.promise(() => agent.redeem({ to: alice, value: parseEther("0.007") }, g.response.context)),
          "NativeTokenPeriodTransferEnforcer:transfer-amount-exceeded", before, yield* balances)
        // Two sends in one batch redemption, to count as one action: every enforcer of the grant takes single calls only.
        const [standing] = decodeDelegations(g.response.context)
        const batch = redeemBatchCall(standing as never, [{ target: alice, value: 1n, callData: "0x" }, { target: alice, value: 1n, callData: "0x" }])
        refusedOnChain(yield* Effect.promise(() => agent.send(batch)), "CaveatEnforcer:invalid-call-type", before, yield* balances)
        const spent = (yield* owner.api.delegations.get({ params: { delegationId: g.id } })).spentToDate[0]!
        assert.deepStrictEqual([spent.token.symbol, spent.spent, spent.remaining], ["ETH", 0.004, 0.006])

        // native-token-stream: what has accrued, no more (NativeTokenStreamingEnforcer).
        const stream = yield* grant7715(owner, {
          chainId: net.chainId,
          to: agent.address,
          expiry: nowS() + DAY,
          permission: { type: "native-token-stream", isAdjustmentAllowed: true, data: { initialAmount: parseEther("0.001"), amountPerSecond: 1n, maxAmount: parseEther("0.002") } }
        })
        accepted(yield* Effect.promise(() => agent.redeem({ to: bob, value: parseEther("0.001") }, stream.response.context)))
        const streamed = yield* balances
        refusedOnChain(yield* Effect.promise(() => agent.redeem({ to: bob, value: parseEther("0.0001") }, stream.response.context)),
          "NativeTokenStreamingEnforcer:allowance-exceeded", streamed, yield* balances)
        assert.strictEqual((yield* owner.api.delegations.get({ params: { delegationId: stream.id } })).spentToDate[0]!.spent, 0.001)

        // A smart-account delegate's ETH action built by the service and relayed.
        const agentSession = yield* newSession()
        const eth = yield* grant7715(owner, {
          chainId: net.chainId,
          to: agentSession.account.address as Hex,
          expiry: nowS() + DAY,
          permission: { type: "native-token-allowance", isAdjustmentAllowed: false, data: { allowanceAmount: parseEther("0.002") } }
        })
        const action = yield* agentSession.api.delegations.act({ params: { delegationId: eth.id }, payload: { recipient: bob, amount: 0.0015, token: "ETH" } })
        const bobBefore = yield* ethBalance(bob)
        assert.strictEqual((yield* relay(agentSession.api, yield* signOp(agentSession.key, action.userOp))).outcome, "mined")
        assert.strictEqual((yield* ethBalance(bob)) - bobBefore, parseEther("0.0015"))
        const over = yield* failure(agentSession.api.delegations.act({ params: { delegationId: eth.id }, payload: { recipient: bob, amount: 0.001, token: "ETH" } }))
        assert.strictEqual(over.reason, "cap_exceeded")
      }))
  }
)
