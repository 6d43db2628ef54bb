/**
 * The marketplace's operation builds in the real app (real database, the local
 * ERC-4337 network, the loopback fake upstream), through HTTP with the typed
 * client: hire by mandate (id = delegation hash, enable op stored, signed with a
 * real key and mined), job create / fund under the mandate and its declines, and
 * the managed deposit relayed and mined.
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { decodeFunctionData, decodeFunctionResult, encodeFunctionData, erc20Abi, getAddress, type Hex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { AccountStack } from "../../src/chain/Accounts4337.ts"
import { Chain } from "../../src/chain/Chain.ts"
import { Network } from "../../src/chain/Network.ts"
import type { ApiClient } from "../../src/client/Client.ts"
import { pollUserOp } from "../../src/client/poll.ts"
import { signIn } from "../../src/client/signIn.ts"
import { recoverLegSigner } from "../../src/delegations/Caveats.ts"
import type { Eip712TypedData, UserOperation } from "../../src/domain/Operations.ts"
import { acpAbi } from "../../src/hiring/AcpAbi.ts"
import { mint } from "../support/TestChain.ts"
import { client, TestServer, TestServerLive } from "../support/TestServer.ts"
import { agentFixture, approve, fakeUpstream, wallet } from "../marketplace/FakeUpstream.ts"

process.env.DO_NOT_TRACK = "1"

/** No contract lives here on the local network: the job builds must say so. */
const ACP = "0x00000000000000000000000000000000000ac9ac"
const AGENT = wallet(0xa6e7)

const user = Effect.gen(function*() {
  const { baseUrl } = yield* TestServer
  const key = generatePrivateKey()
  const session = yield* signIn(baseUrl, privateKeyToAccount(key))
  const api = yield* client(session.token)
  return { key, api, account: session.accounts[0]!, signer: session.signerAddress }
})

const signAndRelay = (api: ApiClient, key: Hex, op: UserOperation, typedData: Eip712TypedData | undefined) =>
  Effect.gen(function*() {
    assert.isDefined(typedData)
    const signature = yield* Effect.promise(() => privateKeyToAccount(key).signTypedData(typedData as never))
    const submitted = yield* api.userops.submit({ payload: { ...op, signature } })
    return yield* pollUserOp(api, submitted.userOpId, { interval: "150 millis", maxTries: 200 })
  })

const failure = <A, E, R>(e: Effect.Effect<A, E, R>) =>
  e.pipe(
    Effect.flip,
    Effect.map((err) => {
      const x = err as unknown as { _tag: string; declineReason?: string }
      return { tag: x._tag, reason: x.declineReason }
    })
  )

const balanceOf = (token: string, holder: string) =>
  Effect.gen(function*() {
    const chain = yield* Chain
    const data = yield* chain.call({
      to: token as Hex,
      data: encodeFunctionData({ abi: erc20Abi, functionName: "balanceOf", args: [holder as Hex] })
    }).pipe(Effect.orDie)
    return decodeFunctionResult({ abi: erc20Abi, functionName: "balanceOf", data })
  })

describe("marketplace operation builds", () => {
  it.live("hire by mandate, job create/fund under it, managed deposit relayed and mined", () =>
    Effect.gen(function*() {
      const fake = yield* fakeUpstream
      fake.state.agents.push(agentFixture(0xa6e7, 1_000))
      yield* Effect.gen(function*() {
        const net = yield* Network
        const stack = yield* AccountStack
        const sql = yield* SqlClient.SqlClient
        const owner = yield* user
        const other = yield* user
        const delegatee = privateKeyToAccount(generatePrivateKey()).address.toLowerCase()

        // Hire: resolved by wallet through the upstream; unknown wallet → 404.
        const unknown = yield* failure(owner.api.hiring.hireBuild({
          payload: { agentWallet: wallet(0xdead), chainId: net.chainId, perJobBudget: 25, delegateeAddress: delegatee }
        }))
        assert.strictEqual(unknown.tag, "NotFound")
        const hire = yield* owner.api.hiring.hireBuild({
          payload: { agentWallet: AGENT, chainId: net.chainId, perJobBudget: 25, delegateeAddress: delegatee }
        })
        assert.isTrue(fake.state.requests.some((r) => r.path === `/agents/wallet/${AGENT}`))
        assert.strictEqual(hire.account.address, owner.account.address)
        assert.strictEqual(hire.account.id, owner.account.id)
        const delegation = hire.delegation!.delegation
        assert.strictEqual(hire.mandateId, stack.permissionIdOf(delegation as never).toLowerCase(), "mandateId = delegation hash")
        assert.strictEqual(delegation.delegator.toLowerCase(), owner.account.address)
        assert.strictEqual(delegation.delegate.toLowerCase(), delegatee)
        assert.lengthOf(delegation.caveats, 3, "timestamp, no value, one LogicalOrWrapper of the three allowed calls")
        assert.include(hire.policySummary, "25 USDC per job")
        assert.include(hire.policySummary, "no other")
        assert.strictEqual(hire.simulation.intentType, "delegation_enable")
        assert.isTrue(hire.simulation.willSucceed, "the enable itself can execute")
        assert.isTrue(hire.simulation.warnings.some((w) => w.includes("no marketplace contract")))

        // Stored before answering: the enable build and the mandate.
        const builds = yield* sql<{ intent_type: string; metadata: { mandateId?: string } }>`
          SELECT intent_type, metadata FROM op_builds WHERE user_op_hash = ${hire.userOpHash}`
        assert.deepStrictEqual(builds.map((b) => [b.intent_type, b.metadata.mandateId]), [["delegation_enable", hire.mandateId]])
        const stored = yield* sql<{ agent_wallet: string; per_job_budget_units: string; signer_address: string }>`
          SELECT agent_wallet, per_job_budget_units, signer_address FROM marketplace_mandates WHERE mandate_id = ${hire.mandateId}`
        assert.deepStrictEqual(stored.map((r) => [r.agent_wallet, String(r.per_job_budget_units), r.signer_address]), [[
          AGENT,
          "25000000",
          owner.signer.toLowerCase()
        ]])

        // The owner signs the mandate (its typed data recovers to the owner) and the enable op, which is mined.
        const mandateSig = yield* Effect.promise(() =>
          privateKeyToAccount(owner.key).signTypedData({
            ...hire.delegation!.typedData,
            message: { ...hire.delegation!.typedData.message, salt: BigInt(hire.delegation!.typedData.message.salt) }
          } as never)
        )
        const recovered = yield* Effect.promise(() =>
          recoverLegSigner(delegation as never, mandateSig, net.chainId, net.delegation.DelegationManager)
        )
        assert.strictEqual(recovered.toLowerCase(), owner.signer.toLowerCase())
        const enabled = yield* signAndRelay(owner.api, owner.key, hire.enableUserOp, hire.typedData)
        assert.strictEqual(enabled.outcome, "mined")

        // Job creation: the provider is the mandate's agent.
        const create = yield* owner.api.hiring.createJobBuild({
          payload: { mandateId: hire.mandateId, agentWallet: AGENT, description: "Summarise the filings", chainId: net.chainId }
        })
        const [createCall] = stack.decodeExecute(create.userOp.callData as Hex)!
        assert.strictEqual(createCall!.to.toLowerCase(), ACP)
        const decoded = decodeFunctionData({ abi: acpAbi, data: createCall!.data! })
        assert.strictEqual(decoded.functionName, "createJob")
        assert.strictEqual((decoded.args as ReadonlyArray<unknown>)[0], getAddress(AGENT))
        assert.isDefined(create.typedData)
        assert.strictEqual(create.simulation?.willSucceed, false, "honest: no contract at the configured address")
        assert.strictEqual(create.simulation?.declineReason, "marketplace_contract_missing")

        const mismatch = yield* failure(owner.api.hiring.createJobBuild({
          payload: { mandateId: hire.mandateId, agentWallet: wallet(0xbad), description: "x", chainId: net.chainId }
        }))
        assert.deepStrictEqual(mismatch, { tag: "OutOfScope", reason: "provider_not_allowed" })

        // Fund: approve exactly the budget to the escrow, then set the job's budget; above the cap → cap_exceeded.
        const fund = yield* owner.api.hiring.fundJobBuild({
          payload: { mandateId: hire.mandateId, jobId: "42", perJobBudget: 10, chainId: net.chainId }
        })
        const [approveCall, budgetCall] = stack.decodeExecute(fund.userOp.callData as Hex)!
        assert.strictEqual(approveCall!.to.toLowerCase(), net.tokens.usd.address.toLowerCase())
        assert.deepStrictEqual(decodeFunctionData({ abi: erc20Abi, data: approveCall!.data! }).args, [getAddress(ACP), 10_000_000n])
        assert.deepStrictEqual(
          decodeFunctionData({ abi: acpAbi, data: budgetCall!.data! }).args,
          [42n, 10_000_000n, getAddress(net.tokens.usd.address)]
        )
        const over = yield* failure(owner.api.hiring.fundJobBuild({
          payload: { mandateId: hire.mandateId, jobId: "42", perJobBudget: 25.01, chainId: net.chainId }
        }))
        assert.deepStrictEqual(over, { tag: "OutOfScope", reason: "cap_exceeded" })

        // Another signer's mandate, or none: 404.
        const foreign = yield* failure(other.api.hiring.fundJobBuild({
          payload: { mandateId: hire.mandateId, jobId: "42", perJobBudget: 1, chainId: net.chainId }
        }))
        assert.strictEqual(foreign.tag, "NotFound")
        const foreignCreate = yield* failure(other.api.hiring.createJobBuild({
          payload: { mandateId: hire.mandateId, agentWallet: AGENT, description: "x", chainId: net.chainId }
        }))
        assert.strictEqual(foreignCreate.tag, "NotFound")
        const missing = yield* failure(owner.api.hiring.createJobBuild({
          payload: { mandateId: `0x${"ab".repeat(32)}`, agentWallet: AGENT, description: "x", chainId: net.chainId }
        }))
        assert.strictEqual(missing.tag, "NotFound")

        // Managed deposit: 409 until a managed wallet is connected; then a custodial transfer, relayed and mined.
        const usd = net.tokens.usd
        const depositPayload = { chainId: net.chainId, amount: 12.5, tokenSymbol: "usdc", tokenAddress: usd.address.toLowerCase() }
        const notConnected = yield* failure(owner.api.hiring.managedDepositBuild({ payload: depositPayload }))
        assert.strictEqual(notConnected.tag, "Conflict")
        const start = yield* owner.api.marketplace.managedConnect()
        const managedWallet = privateKeyToAccount(generatePrivateKey()).address.toLowerCase()
        approve(fake.state, start.requestId, managedWallet)
        assert.isTrue((yield* owner.api.marketplace.managedConnectStatus({ query: { requestId: start.requestId } })).connected)
        const wrongToken = yield* failure(owner.api.hiring.managedDepositBuild({
          payload: { ...depositPayload, tokenAddress: net.tokens.usdt.address.toLowerCase() }
        }))
        assert.strictEqual(wrongToken.tag, "BadRequest")

        yield* mint("usd", owner.account.address as Hex, 50)
        const deposit = yield* owner.api.hiring.managedDepositBuild({ payload: depositPayload })
        assert.strictEqual(deposit.intentType, "managed_deposit")
        assert.isTrue(deposit.custodial)
        assert.strictEqual(deposit.managedAgentWallet, managedWallet)
        assert.include(deposit.custodyLabel, "leaves your custody")
        const [transfer] = stack.decodeExecute(deposit.userOp.callData as Hex)!
        assert.deepStrictEqual(decodeFunctionData({ abi: erc20Abi, data: transfer!.data! }).args, [getAddress(managedWallet), 12_500_000n])
        const mined = yield* signAndRelay(owner.api, owner.key, deposit.userOp, deposit.typedData)
        assert.strictEqual(mined.outcome, "mined")
        assert.strictEqual(yield* balanceOf(usd.address, managedWallet), 12_500_000n)
        assert.strictEqual(yield* balanceOf(usd.address, owner.account.address), 37_500_000n)
      }).pipe(
        Effect.provide(Layer.fresh(TestServerLive({ config: { MARKETPLACE_API_URL: fake.url, MARKETPLACE_ACP_CONTRACT: ACP } })))
      )
    }), { timeout: Duration.toMillis(Duration.seconds(120)) })
})
