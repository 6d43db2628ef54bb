/**
 * Hiring on the run's second local chain (31338): the owner hires there by mandate over HTTP,
 * the mandate is recorded with chain B and enabled on chain B only; the agent runtime (the
 * delegatee) goes around the service on chain B and the chain refuses everything beyond the
 * mandate while nothing moves, and the same signed mandate is refused on chain A; the owner's
 * job and funding under it execute on chain B's ACP contract and are read from chain B; the
 * revoke executes on chain B and the chain then refuses the mandate there.
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Layer } from "effect"
import { type Address, createPublicClient, decodeEventLog, encodeFunctionData, erc20Abi, type Hex, http } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { viemChainOf } from "../../src/chain/Chain.ts"
import { agentCommerceAbi } from "../../src/chain/contracts/AgentCommerce.ts"
import { acpAbi } from "../../src/hiring/AcpAbi.ts"
import { mandateRedeemArgs } from "../../src/hiring/MandateDelegation.ts"
import { accountOn, balanceOn } from "../chains/support.ts"
import { makeAttacker, redeemCall, refused, succeeds } from "../delegations/attacker.ts"
import { failure, newSession, relay, signOp } from "../delegations/helpers.ts"
import { agentFixture, fakeUpstream } from "../marketplace/FakeUpstream.ts"
import { mint, secondNetwork, testNetwork } from "../support/TestChain.ts"
import { TestServerLive } from "../support/TestServer.ts"

process.env.DO_NOT_TRACK = "1"

const A = 31337
const B = 31338
const USD = (n: number) => BigInt(Math.round(n * 1_000_000))
const randomAddress = () => privateKeyToAccount(generatePrivateKey()).address.toLowerCase() as Address

describe("hiring on the second chain", () => {
  it.live("hire on chain B: recorded and enabled there, caged there by the chain, worthless on chain A, revoked there", () =>
    Effect.gen(function*() {
      const fake = yield* fakeUpstream
      const provider = privateKeyToAccount(generatePrivateKey())
      const evaluator = privateKeyToAccount(generatePrivateKey())
      fake.state.agents.push(agentFixture(0xb0b8, 1_000, { walletAddress: provider.address.toLowerCase() }))
      yield* Effect.gen(function*() {
        const netA = testNetwork()
        const netB = secondNetwork()
        const acp = netB.marketplace.acp
        assert.strictEqual(acp.toLowerCase(), netA.marketplace.acp.toLowerCase(), "the same contracts at the same addresses")
        const usdB = netB.tokens.usd.address
        const usdA = netA.tokens.usd.address
        const owner = yield* newSession()
        const runtime = yield* newSession()
        const stranger = randomAddress()
        const ownerB = yield* accountOn(owner, B)
        const runtimeB = yield* accountOn(runtime, B)
        yield* mint("usd", ownerB.address as Address, 100, B)
        yield* mint("usd", ownerB.address as Address, 100, A)
        const clientB = createPublicClient({ chain: viemChainOf(netB), transport: http(netB.rpcUrl) })
        const clientA = createPublicClient({ chain: viemChainOf(netA), transport: http(netA.rpcUrl) })
        const jobCount = (client: typeof clientA) =>
          Effect.promise(() => client.readContract({ address: acp, abi: agentCommerceAbi, functionName: "jobCount" }))
        /** The job a mined transaction on chain B created (its `JobCreated` event). */
        const jobOf = (hash: string) =>
          Effect.promise(async () => {
            const receipt = await clientB.getTransactionReceipt({ hash: hash as Hex })
            const created = receipt.logs
              .filter((l) => l.address.toLowerCase() === acp.toLowerCase())
              .map((l) => decodeEventLog({ abi: agentCommerceAbi, topics: l.topics, data: l.data }))
              .find((e) => e.eventName === "JobCreated")
            assert.isDefined(created, "the transaction created a job on chain B")
            return (created!.args as { jobId: bigint }).jobId
          })
        // Other test files use the same chains at once: look for this account's jobs, not at the job count.
        const hasJobOf = (client: typeof clientA, owner: string) =>
          Effect.gen(function*() {
            const count = yield* jobCount(client)
            const jobs = yield* Effect.forEach(Array.from({ length: Number(count) }, (_, i) => BigInt(i + 1)), (id) =>
              Effect.promise(() => client.readContract({ address: acp, abi: agentCommerceAbi, functionName: "jobs", args: [id] })))
            return jobs.some((j) => j[0].toLowerCase() === owner.toLowerCase())
          })

        // An unserved chain is a 400 naming the chains served, before anything is stored.
        const unserved = yield* failure(owner.api.hiring.hireBuild({
          payload: { agentWallet: provider.address, chainId: 5, perJobBudget: 25, delegateeAddress: runtimeB.address }
        }))
        assert.strictEqual(unserved.tag, "BadRequest")
        assert.deepStrictEqual(unserved.details["served"], [{ chainId: A, name: "Local devnet" }, { chainId: B, name: "Local devnet B" }])
        assert.lengthOf(yield* owner.api.hiring.listMandates(), 0)

        // The hire on chain B: the paying account, the enable operation and the mandate's signature domain are chain B's.
        const hire = yield* owner.api.hiring.hireBuild({
          payload: { agentWallet: provider.address, chainId: B, perJobBudget: 25, delegateeAddress: runtimeB.address }
        })
        assert.strictEqual(hire.account.chainId, B)
        assert.strictEqual(hire.account.id, ownerB.id)
        assert.strictEqual(hire.enableUserOp.chainId, B)
        assert.strictEqual(hire.delegation!.typedData.domain.chainId, B, "the owner signs the mandate for chain B")
        assert.include(hire.policySummary, `on chain ${B}`)
        assert.isFalse(hire.simulation.warnings.some((w) => w.includes("no marketplace contract")), "chain B has its ACP contract")
        const pending = (yield* owner.api.hiring.listMandates()).find((m) => m.mandateId === hire.mandateId)
        assert.deepStrictEqual([pending?.chainId, pending?.accountId, pending?.status], [B, ownerB.id, "pending"])
        const enabled = yield* relay(owner.api, yield* signOp(owner.key, hire.enableUserOp))
        assert.deepStrictEqual([enabled.outcome, enabled.chainId], ["mined", B])
        const active = (yield* owner.api.hiring.listMandates()).find((m) => m.mandateId === hire.mandateId)
        assert.deepStrictEqual([active?.chainId, active?.status], [B, "active"])
        const typed = hire.delegation!.typedData
        const mandateSignature = yield* Effect.promise(() =>
          privateKeyToAccount(owner.key).signTypedData({ ...typed, message: { ...typed.message, salt: BigInt(typed.message.salt) } } as never)
        )
        const signed = { ...hire.delegation!.delegation, signature: mandateSignature } as never

        // The agent runtime goes around the service on chain B: beyond the mandate, chain B refuses and nothing moves.
        const agent = yield* makeAttacker(runtime.key, runtimeB.address, undefined, netB)
        const as = (group: "approve" | "createJob" | "setBudget") => mandateRedeemArgs(netB.delegation, signed, group)
        const watch = { tokens: [usdB], holders: [ownerB.address as Address, stranger, acp] }
        const judge = evaluator.address.toLowerCase() as Address
        const approveCall = (spender: Address, units: bigint) =>
          ({ target: usdB, callData: encodeFunctionData({ abi: erc20Abi, functionName: "approve", args: [spender, units] }) })
        const createJobCall = (providerWallet: Address, budget: bigint) => ({
          target: acp,
          callData: encodeFunctionData({
            abi: acpAbi,
            functionName: "createJob",
            args: [providerWallet, judge, BigInt(Math.floor(Date.now() / 1000) + 3600), usdB, budget, "job"]
          })
        })
        yield* refused(agent, watch, redeemCall(as("approve"), approveCall(stranger, 2n ** 256n - 1n)), "AllowedCalldataEnforcer:invalid-calldata")
        yield* refused(agent, watch, redeemCall(as("approve"), approveCall(acp, USD(25) + 1n)), "ArgumentCapEnforcer:per-call-exceeded")
        yield* refused(agent, watch, redeemCall(as("createJob"), createJobCall(stranger, USD(1))), "AllowedCalldataEnforcer:invalid-calldata")
        yield* refused(agent, watch, redeemCall(as("createJob"), createJobCall(provider.address, USD(26))), "ArgumentCapEnforcer:per-call-exceeded")
        const transfer = { target: usdB, callData: encodeFunctionData({ abi: erc20Abi, functionName: "transfer", args: [stranger, USD(1)] }) }
        yield* refused(agent, watch, redeemCall(as("approve"), transfer), "AllowedMethodsEnforcer:method-not-allowed")
        // Within the mandate its own redemption works on chain B (and creates nothing on chain A).
        yield* succeeds(agent, redeemCall(as("createJob"), createJobCall(provider.address, USD(25))))
        const agentJob = yield* jobCount(clientB) // the newest job on chain B (the cap refuses whatever its id)
        assert.isTrue(yield* hasJobOf(clientB, ownerB.address), "the job is the owner's account's, on chain B")
        yield* succeeds(agent, redeemCall(as("approve"), approveCall(acp, USD(25))))
        const overFund = {
          target: acp,
          callData: encodeFunctionData({ abi: acpAbi, functionName: "setBudgetWithPaymentToken", args: [agentJob, USD(25) + 1n, usdB] })
        }
        yield* refused(agent, watch, redeemCall(as("setBudget"), overFund), "ArgumentCapEnforcer:per-call-exceeded")
        assert.strictEqual(yield* balanceOn(netB, usdB, ownerB.address), USD(100), "nothing left the account on chain B")

        // The same signed mandate on chain A: chain A checks the owner's signature for chain A, and it is not.
        const ownerA = yield* accountOn(owner, A)
        assert.strictEqual(ownerA.address, ownerB.address, "the same account address on both chains")
        const deployA = yield* owner.api.accounts.buildRules({ payload: { intentType: "account_freeze", chainId: A } })
        assert.strictEqual((yield* relay(owner.api, yield* signOp(owner.key, deployA.userOp))).outcome, "mined")
        const agentA = yield* makeAttacker(runtime.key, runtimeB.address, undefined, netA)
        const approveA = { target: usdA, callData: encodeFunctionData({ abi: erc20Abi, functionName: "approve", args: [acp, USD(1)] }) }
        yield* refused(
          agentA,
          { tokens: [usdA], holders: [ownerA.address as Address, acp] },
          redeemCall(mandateRedeemArgs(netA.delegation, signed, "approve"), approveA),
          "InvalidERC1271Signature"
        )
        assert.isFalse(yield* hasJobOf(clientA, ownerA.address), "no job of this account on chain A")

        // The owner's lane through the service on chain B: a mandate of chain B is refused as chain A's.
        const wrongChain = yield* failure(owner.api.hiring.createJobBuild({
          payload: { mandateId: hire.mandateId, agentWallet: provider.address, description: "on A", chainId: A }
        }))
        assert.deepStrictEqual([wrongChain.tag, wrongChain.message], ["BadRequest", `This mandate is for chain ${B}.`])
        const create = yield* owner.api.hiring.createJobBuild({
          payload: { mandateId: hire.mandateId, agentWallet: provider.address, description: "Summarise the filings", chainId: B }
        })
        assert.strictEqual(create.userOp.chainId, B)
        const created = yield* relay(owner.api, yield* signOp(owner.key, create.userOp))
        assert.deepStrictEqual([created.outcome, created.chainId], ["mined", B])
        const jobId = yield* jobOf(created.transactionHash!)
        const fund = yield* owner.api.hiring.fundJobBuild({
          payload: { mandateId: hire.mandateId, jobId: jobId.toString(), perJobBudget: 20, chainId: B }
        })
        assert.strictEqual((yield* relay(owner.api, yield* signOp(owner.key, fund.userOp))).outcome, "mined")
        assert.strictEqual(yield* balanceOn(netB, usdB, ownerB.address), USD(80), "chain B's account moved by the funded budget only")
        assert.strictEqual(yield* balanceOn(netA, usdA, ownerA.address), USD(100), "nothing moved on chain A")
        // Read from chain B's contract (its events): created and funded by the owner, each step with its transaction.
        const read = yield* owner.api.marketplace.getJob({ params: { chainId: B, jobId: jobId.toString() } })
        assert.deepStrictEqual([read.chainId, read.budgetUsd], [B, 20])
        assert.deepStrictEqual(read.events.map((e) => [e.label, e.actor]), [["Job created", "you"], ["Budget set, escrow funded", "you"]])
        assert.strictEqual(read.events[0]!.txHash, created.transactionHash)

        // The revoke executes on chain B; chain B then refuses the mandate even within its limits.
        const revoke = yield* owner.api.hiring.revokeMandate({ params: { mandateId: hire.mandateId } })
        assert.strictEqual(revoke.userOp.chainId, B)
        const revoked = yield* relay(owner.api, yield* signOp(owner.key, revoke.userOp))
        assert.deepStrictEqual([revoked.outcome, revoked.chainId], ["mined", B])
        const after = (yield* owner.api.hiring.listMandates()).find((m) => m.mandateId === hire.mandateId)
        assert.deepStrictEqual([after?.chainId, after?.status, after?.revokeTxHash], [B, "revoked", revoked.transactionHash])
        yield* refused(agent, watch, redeemCall(as("createJob"), createJobCall(provider.address, USD(1))), "CannotUseADisabledDelegation")
      }).pipe(
        Effect.provide(Layer.fresh(TestServerLive({
          config: {
            MARKETPLACE_API_URL: fake.url,
            MARKETPLACE_EVALUATOR_WALLET: evaluator.address.toLowerCase(),
            MARKETPLACE_MANDATE_MAX_JOBS: "3",
            MARKETPLACE_JOB_WATCH_INTERVAL: "0 seconds"
          }
        })))
      )
    }), { timeout: Duration.toMillis(Duration.seconds(180)) })
})
