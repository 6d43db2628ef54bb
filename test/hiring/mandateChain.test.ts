/**
 * Hiring on the local chain, as every party would do it: the owner hires by mandate
 * (over HTTP, real signatures), the agent runtime (the delegatee) tries to go around the
 * mandate with its own redemptions — straight to the bundler and in its own `handleOps` —
 * and the chain refuses each with the enforcer's reason while nothing moves; then the
 * owner creates and funds a job through the service on the local ACP contract
 * (AgentCommerce.sol), the provider accepts and delivers, and the evaluator approves:
 * the escrow pays the provider, and the account's balance moved by the funded budget only.
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Layer } from "effect"
import { type Address, createWalletClient, decodeEventLog, encodeFunctionData, erc20Abi, type Hex, http, parseEther } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { viemChainOf } from "../../src/chain/Chain.ts"
import { agentCommerceAbi } from "../../src/chain/contracts/AgentCommerce.ts"
import { Network } from "../../src/chain/Network.ts"
import { Chains } from "../../src/chain/Chains.ts"
import { acpAbi } from "../../src/hiring/AcpAbi.ts"
import { mandateRedeemArgs } from "../../src/hiring/MandateDelegation.ts"
import { watchOnce } from "../../src/hiring/JobWatcher.ts"
import { EntryNotifierLive } from "../../src/notifications/EntryNotifier.ts"
import { AuditLive } from "../../src/audit/Recorder.ts"
import { TokenRegistry } from "../../src/tokens/TokenRegistry.ts"
import { makeAttacker, redeemCall, refused, succeeds } from "../delegations/attacker.ts"
import { newSession, relay, signOp } from "../delegations/helpers.ts"
import { mint } from "../support/TestChain.ts"
import { TestServerLive } from "../support/TestServer.ts"
import { agentFixture, fakeUpstream } from "../marketplace/FakeUpstream.ts"

process.env.DO_NOT_TRACK = "1"

const USD = (n: number) => BigInt(Math.round(n * 1_000_000))
const randomAddress = () => privateKeyToAccount(generatePrivateKey()).address.toLowerCase() as Address

describe("a mandate on the local chain", () => {
  it.live("cages the agent without the service, and hire → job → fund → accept → deliver → approve executes", () =>
    Effect.gen(function*() {
      const fake = yield* fakeUpstream
      const provider = privateKeyToAccount(generatePrivateKey())
      const evaluator = privateKeyToAccount(generatePrivateKey())
      fake.state.agents.push(agentFixture(0xa6e8, 1_000, { walletAddress: provider.address.toLowerCase() }))
      yield* Effect.gen(function*() {
        const net = yield* Network
        const acp = net.marketplace!.acp
        const usdc = net.tokens.usd.address
        const owner = yield* newSession()
        const runtime = yield* newSession()
        const stranger = randomAddress()
        yield* mint("usd", owner.account.address as Hex, 100)

        // Hire: the local ACP contract is the default; the summary states only what the chain enforces.
        const hire = yield* owner.api.hiring.hireBuild({
          payload: { agentWallet: provider.address, chainId: net.chainId, perJobBudget: 25, delegateeAddress: runtime.account.address }
        })
        assert.include(hire.policySummary, "The chain enforces each of these limits")
        assert.include(hire.policySummary, "at most 2 jobs and 50 USDC in all")
        assert.isFalse(hire.simulation.warnings.some((w) => w.includes("no marketplace contract")), "the local ACP contract is there")
        const typed = hire.delegation!.typedData
        const mandateSignature = yield* Effect.promise(() =>
          privateKeyToAccount(owner.key).signTypedData({ ...typed, message: { ...typed.message, salt: BigInt(typed.message.salt) } } as never)
        )
        assert.strictEqual((yield* relay(owner.api, yield* signOp(owner.key, hire.enableUserOp))).outcome, "mined")
        const signed = { ...hire.delegation!.delegation, signature: mandateSignature } as never

        // The agent runtime goes around the service with the mandate the owner gave it.
        const agent = yield* makeAttacker(runtime.key, runtime.account.address)
        const as = (group: "approve" | "createJob" | "setBudget") => mandateRedeemArgs(net.delegation, signed, group)
        // Not the escrow's balance: other test files fund jobs on the same contract at once (the job's own escrow is read below).
        const watch = { tokens: [usdc], holders: [owner.account.address as Address, stranger] }
        const approveCall = (spender: Address, units: bigint) =>
          ({ target: usdc, callData: encodeFunctionData({ abi: erc20Abi, functionName: "approve", args: [spender, units] }) })
        const createJobCall = (providerWallet: Address, evaluatorWallet: Address, budget: bigint) => ({
          target: acp,
          callData: encodeFunctionData({
            abi: acpAbi,
            functionName: "createJob",
            args: [providerWallet, evaluatorWallet, BigInt(Math.floor(Date.now() / 1000) + 3600), usdc, budget, "job"]
          })
        })
        const allowance = (spender: Address) =>
          Effect.promise(() =>
            agent.publicClient.readContract({ address: usdc, abi: erc20Abi, functionName: "allowance", args: [owner.account.address as Address, spender] })
          )
        const zero = "0x0000000000000000000000000000000000000000" as Address

        // Approve a stranger (the drain of issue 13), or the escrow for more than a job's budget.
        yield* refused(agent, watch, redeemCall(as("approve"), approveCall(stranger, 2n ** 256n - 1n)), "AllowedCalldataEnforcer:invalid-calldata")
        yield* refused(agent, watch, redeemCall(as("approve"), approveCall(acp, USD(25) + 1n)), "ArgumentCapEnforcer:per-call-exceeded")
        assert.strictEqual(yield* allowance(stranger), 0n)
        // A job for another provider, with another evaluator, or above the cap.
        const judge = evaluator.address.toLowerCase() as Address
        yield* refused(agent, watch, redeemCall(as("createJob"), createJobCall(stranger, judge, USD(1))), "AllowedCalldataEnforcer:invalid-calldata")
        yield* refused(agent, watch, redeemCall(as("createJob"), createJobCall(provider.address, zero, USD(1))), "AllowedCalldataEnforcer:invalid-calldata")
        yield* refused(agent, watch, redeemCall(as("createJob"), createJobCall(provider.address, judge, USD(26))), "ArgumentCapEnforcer:per-call-exceeded")
        // Anything that is not one of the three calls: a transfer to itself, ETH, a call through the wrong group.
        const transfer = { target: usdc, callData: encodeFunctionData({ abi: erc20Abi, functionName: "transfer", args: [stranger, USD(1)] }) }
        yield* refused(agent, watch, redeemCall(as("approve"), transfer), "AllowedMethodsEnforcer:method-not-allowed")
        yield* refused(agent, watch, redeemCall(as("approve"), { ...approveCall(acp, 1n), value: 1n }), "ValueLteEnforcer:value-too-high")
        yield* refused(agent, watch, redeemCall(as("setBudget"), approveCall(acp, 1n)), "AllowedTargetsEnforcer:target-address-not-allowed")

        // Within the mandate the agent's own redemptions work: a job for the agent, the escrow approved, then funded above the cap → refused.
        yield* succeeds(agent, redeemCall(as("createJob"), createJobCall(provider.address, judge, USD(25))))
        const agentJob = yield* Effect.promise(() => agent.publicClient.readContract({ address: acp, abi: agentCommerceAbi, functionName: "jobCount" }))
        yield* succeeds(agent, redeemCall(as("approve"), approveCall(acp, USD(25))))
        const overFund = {
          target: acp,
          callData: encodeFunctionData({ abi: acpAbi, functionName: "setBudgetWithPaymentToken", args: [agentJob, USD(25) + 1n, usdc] })
        }
        yield* refused(agent, watch, redeemCall(as("setBudget"), overFund), "ArgumentCapEnforcer:per-call-exceeded")
        assert.deepStrictEqual(
          yield* Effect.promise(() => Promise.all([usdc].map((t) => agent.publicClient.readContract({ address: t, abi: erc20Abi, functionName: "balanceOf", args: [owner.account.address as Address] })))),
          [USD(100)],
          "nothing left the account"
        )

        // The owner's lane over HTTP: create the job, fund it (approve + set budget), both mined on the local ACP contract.
        const create = yield* owner.api.hiring.createJobBuild({
          payload: { mandateId: hire.mandateId, agentWallet: provider.address, description: "Summarise the filings", chainId: net.chainId }
        })
        assert.isTrue(create.simulation?.willSucceed, `the contract is there: the build can execute (${JSON.stringify(create.simulation)})`)
        const created = yield* relay(owner.api, yield* signOp(owner.key, create.userOp))
        assert.strictEqual(created.outcome, "mined")
        const jobId = yield* Effect.promise(() => agent.publicClient.readContract({ address: acp, abi: agentCommerceAbi, functionName: "jobCount" }))
        assert.strictEqual(jobId, agentJob + 1n)
        const fund = yield* owner.api.hiring.fundJobBuild({
          payload: { mandateId: hire.mandateId, jobId: jobId.toString(), perJobBudget: 20, chainId: net.chainId }
        })
        assert.strictEqual((yield* relay(owner.api, yield* signOp(owner.key, fund.userOp))).outcome, "mined")
        const balance = (holder: Address) =>
          Effect.promise(() => agent.publicClient.readContract({ address: usdc, abi: erc20Abi, functionName: "balanceOf", args: [holder] }))
        assert.strictEqual(yield* balance(owner.account.address as Address), USD(80), "the account moved by the funded budget only")

        // The provider accepts and delivers, with its own key; only the pinned evaluator may approve the work.
        const chain = viemChainOf(net)
        const providerWallet = createWalletClient({ chain, transport: http(net.rpcUrl), account: provider })
        const evaluatorWallet = createWalletClient({ chain, transport: http(net.rpcUrl), account: evaluator })
        for (const a of [provider.address, evaluator.address]) {
          yield* Effect.promise(() =>
            agent.publicClient.request({ method: "anvil_setBalance" as never, params: [a, `0x${parseEther("1").toString(16)}`] as never })
          )
        }
        const mined = (hash: Promise<Hex>) =>
          Effect.promise(async () => {
            const receipt = await agent.publicClient.waitForTransactionReceipt({ hash: await hash })
            assert.strictEqual(receipt.status, "success")
            return receipt
          })
        const memo = (nextPhase: number, content: string) =>
          mined(providerWallet.writeContract({ address: acp, abi: agentCommerceAbi, functionName: "createMemo", args: [jobId, content, 0, false, nextPhase] }))
        yield* memo(2, "accepted")
        const delivered = yield* memo(3, "the summary")
        const memoId = (delivered.logs
          .filter((l) => l.address.toLowerCase() === acp.toLowerCase())
          .map((l) => decodeEventLog({ abi: agentCommerceAbi, topics: l.topics, data: l.data }))
          .find((e) => e.eventName === "MemoCreated")!.args as { memoId: bigint }).memoId
        const selfApproval = yield* Effect.promise(() =>
          agent.publicClient.simulateContract({ account: provider, address: acp, abi: agentCommerceAbi, functionName: "signMemo", args: [memoId, true, "mine"] })
            .then(() => "accepted", (e: unknown) => String(e))
        )
        assert.include(selfApproval, "ACP: not the evaluator")
        // The job's own escrow, not the contract's balance: other test files fund jobs on the same contract at once.
        const jobOf = Effect.promise(() => agent.publicClient.readContract({ address: acp, abi: agentCommerceAbi, functionName: "jobs", args: [jobId] }))
        assert.strictEqual((yield* jobOf)[6], USD(20), "the escrow holds the funded budget")
        yield* mined(evaluatorWallet.writeContract({ address: acp, abi: agentCommerceAbi, functionName: "signMemo", args: [memoId, true, "good work"] }))
        assert.strictEqual(yield* balance(provider.address), USD(20), "the escrow paid the provider")
        assert.strictEqual(yield* balance(owner.account.address as Address), USD(80))
        const job = yield* jobOf
        assert.strictEqual(job[6], 0n, "the job's escrow is paid out")
        assert.strictEqual(job[7], 4, "COMPLETED")

        // The job as the owner reads it over HTTP: from the local chain's events, each step with its transaction.
        const read = yield* owner.api.marketplace.getJob({ params: { chainId: net.chainId, jobId: jobId.toString() } })
        assert.strictEqual(read.status, "completed")
        assert.strictEqual(read.budgetUsd, 20)
        assert.strictEqual(read.agentWallet, provider.address.toLowerCase())
        assert.deepStrictEqual(read.events.map((e) => [e.label, e.actor]), [
          ["Job created", "you"],
          ["Budget set, escrow funded", "you"],
          ["Job accepted", "agent"],
          ["Work delivered", "agent"],
          ["Work approved", "evaluator"],
          ["Escrow paid to the agent", "marketplace"]
        ])
        assert.isTrue(read.events.every((e) => /^0x[0-9a-f]{64}$/.test(e.txHash ?? "")))
        assert.strictEqual(read.events[0]!.txHash, created.transactionHash)
        assert.deepStrictEqual(read.deliverable, { title: "Deliverable", lines: ["the summary"], readByEvaluator: true })
        assert.isFalse(read.refunded)
        const notTheirs = yield* runtime.api.marketplace.getJob({ params: { chainId: net.chainId, jobId: jobId.toString() } }).pipe(Effect.flip)
        assert.strictEqual(notTheirs._tag, "NotFound")

        // The other parties' steps are on the owner's log too (the job watcher), once each, with their transactions.
        const theirSteps = Effect.gen(function*() {
          const page = yield* owner.api.activity.list({ query: { limit: 100 } })
          return page.items.filter((e) => e.action.startsWith("marketplace_") && e.action.endsWith(`(job ${jobId})`))
        })
        let steps = yield* theirSteps
        for (let i = 0; i < 100 && steps.length < 4; i++) {
          yield* Effect.sleep("100 millis")
          steps = yield* theirSteps
        }
        assert.deepStrictEqual(steps.map((e) => [e.action, e.actor]).reverse(), [
          [`marketplace_job_accepted (job ${jobId})`, provider.address.toLowerCase()],
          [`marketplace_job_delivered (job ${jobId})`, provider.address.toLowerCase()],
          [`marketplace_work_approved (job ${jobId})`, evaluator.address.toLowerCase()],
          [`marketplace_escrow_paid (job ${jobId})`, acp.toLowerCase()]
        ])
        assert.isTrue(steps.every((e) => e.status === "executed" && e.provenance === "onchain" && /^0x[0-9a-f]{64}$/.test(e.txHash ?? "")))
        assert.strictEqual(steps.find((e) => e.action.startsWith("marketplace_escrow_paid"))?.amount, 20)
        const notes = yield* owner.api.notifications.list({ query: { unreadOnly: false } })
        assert.isTrue(steps.every((e) => notes.some((n) => n.relatedId === e.id)))
        // Read again from the chain's start (a restart, a second process): nothing is recorded twice.
        yield* Effect.flatMap(Chains.useSync((c) => c.primary), (net) => watchOnce(net, 0n)).pipe(Effect.provide(Layer.mergeAll(AuditLive.pipe(Layer.provide(EntryNotifierLive)), TokenRegistry.layer)))
        assert.lengthOf(yield* theirSteps, 4)

        // A grant like any other: listed, frozen with the account (on chain), revoked by a gasless risk-reducing build.
        const listed = (yield* owner.api.hiring.listMandates()).find((x) => x.mandateId === hire.mandateId)
        assert.strictEqual(listed?.status, "active")
        assert.strictEqual(listed?.kind, "mandate")
        assert.lengthOf(yield* runtime.api.hiring.listMandates(), 0, "another signer sees none of them")
        const createAgain = redeemCall(as("createJob"), createJobCall(provider.address, judge, USD(1)))
        const freeze = yield* owner.api.accounts.buildRules({ payload: { intentType: "account_freeze" } })
        assert.include(freeze.humanSummary ?? "", "1 marketplace mandate(s)")
        assert.strictEqual((yield* relay(owner.api, yield* signOp(owner.key, freeze.userOp))).outcome, "mined")
        assert.strictEqual((yield* owner.api.hiring.listMandates()).find((x) => x.mandateId === hire.mandateId)?.status, "frozen")
        yield* refused(agent, watch, createAgain, "CannotUseADisabledDelegation")
        const unfreeze = yield* owner.api.accounts.buildRules({ payload: { intentType: "account_unfreeze" } })
        assert.include(unfreeze.humanSummary ?? "", "1 marketplace mandate(s)")
        assert.strictEqual((yield* relay(owner.api, yield* signOp(owner.key, unfreeze.userOp))).outcome, "mined")
        yield* succeeds(agent, createAgain)
        // The agent has now created its 2 jobs on chain: the mandate is exhausted, declined before anything is signed.
        const exhausted = yield* owner.api.hiring.createJobBuild({
          payload: { mandateId: hire.mandateId, agentWallet: provider.address, description: "one more", chainId: net.chainId }
        }).pipe(Effect.flip)
        assert.deepStrictEqual([exhausted._tag, (exhausted as { declineReason?: string }).declineReason], ["OutOfScope", "mandate_exhausted"])
        yield* refused(agent, watch, redeemCall(as("createJob"), createJobCall(provider.address, judge, USD(1))), "LimitedCallsEnforcer:limit-exceeded")

        const foreign = yield* runtime.api.hiring.revokeMandate({ params: { mandateId: hire.mandateId } }).pipe(Effect.flip)
        assert.strictEqual(foreign._tag, "NotFound")
        const revoke = yield* owner.api.hiring.revokeMandate({ params: { mandateId: hire.mandateId } })
        assert.strictEqual(revoke.intentType, "delegation_revoke")
        assert.isTrue(revoke.riskReducing)
        assert.isTrue(revoke.gasless)
        const revoked = yield* relay(owner.api, yield* signOp(owner.key, revoke.userOp))
        assert.strictEqual(revoked.outcome, "mined")
        const after = (yield* owner.api.hiring.listMandates()).find((x) => x.mandateId === hire.mandateId)
        assert.strictEqual(after?.status, "revoked")
        assert.strictEqual(after?.revokeTxHash, revoked.transactionHash)
        yield* refused(agent, watch, createAgain, "CannotUseADisabledDelegation")
        const twice = yield* owner.api.hiring.revokeMandate({ params: { mandateId: hire.mandateId } }).pipe(Effect.flip)
        assert.strictEqual(twice._tag, "BadRequest")
        const underRevoked = yield* owner.api.hiring.fundJobBuild({
          payload: { mandateId: hire.mandateId, jobId: jobId.toString(), perJobBudget: 1, chainId: net.chainId }
        }).pipe(Effect.flip)
        assert.deepStrictEqual([underRevoked._tag, (underRevoked as { declineReason?: string }).declineReason], ["OutOfScope", "mandate_revoked"])
        // A later freeze and unfreeze leave the revoked mandate disabled.
        for (const intentType of ["account_freeze", "account_unfreeze"] as const) {
          const op = yield* owner.api.accounts.buildRules({ payload: { intentType } })
          assert.notInclude(op.humanSummary ?? "", "marketplace mandate")
          assert.strictEqual((yield* relay(owner.api, yield* signOp(owner.key, op.userOp))).outcome, "mined")
        }
        yield* refused(agent, watch, createAgain, "CannotUseADisabledDelegation")
      }).pipe(
        Effect.provide(Layer.fresh(TestServerLive({ config: { MARKETPLACE_API_URL: fake.url, MARKETPLACE_EVALUATOR_WALLET: evaluator.address.toLowerCase(), MARKETPLACE_MANDATE_MAX_JOBS: "2", MARKETPLACE_JOB_WATCH_INTERVAL: "200 millis" } })))
      )
    }), { timeout: Duration.toMillis(Duration.seconds(180)) })
})
