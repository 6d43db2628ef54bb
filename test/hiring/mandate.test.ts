import { assert, describe, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { decodeFunctionData, erc20Abi, getAddress, type Hex } from "viem"
import type { Address } from "../../src/domain/Primitives.ts"
import { acpAbi } from "../../src/hiring/AcpAbi.ts"
import {
  checkCreate,
  checkFund,
  draftMandate,
  encodeCreateJob,
  encodeFund,
  mandatePolicy,
  Mandates,
  selectors,
  toBaseUnits
} from "../../src/hiring/Mandate.ts"
import { mandateDelegation } from "../../src/hiring/MandateDelegation.ts"
import { decodeSignedMandate, mandateSummary } from "../../src/hiring/MandateSummary.ts"
import type { DelegationEnvironment } from "../../src/chain/Network.ts"
import { wallet } from "../marketplace/FakeUpstream.ts"

const signer = wallet(0x5) as Address
const account = wallet(0xacc) as Address
const agent = wallet(0xa6e7) as Address
const delegatee = wallet(0xde1e) as Address
const evaluator = wallet(0xe7a1) as Address

const draft = (perJobBudget = 25, salt = 1n) =>
  draftMandate({
    signer,
    account,
    chainId: 8453,
    agentWallet: agent,
    delegatee,
    perJobBudget,
    evaluator: Option.some(evaluator),
    now: new Date("2026-01-01T00:00:00Z"),
    salt
  })

describe("mandate", () => {
  it.effect("drafts a mandate pinned to the agent with its cap in base units", () =>
    Effect.gen(function*() {
      const m = yield* draft(25.5)
      assert.match(m.mandateId, /^0x[0-9a-f]{64}$/)
      assert.strictEqual(m.perJobBudgetBaseUnits, "25500000")
      assert.strictEqual(m.deployment.paymentToken.symbol, "USDC")
      assert.strictEqual((yield* draft(25.5)).mandateId, m.mandateId, "deterministic")
      assert.notStrictEqual((yield* draft(25.5, 2n)).mandateId, m.mandateId, "salted")
      const policy = mandatePolicy(m)
      assert.deepStrictEqual(
        policy.argumentGates.filter((g) => g.argument === "provider"),
        [{ target: m.deployment.contract, selector: selectors.createJob, argument: "provider", rule: "equals", value: agent }]
      )
      assert.isTrue(policy.argumentGates.some((g) => g.argument === "amount" && g.rule === "at_most" && g.value === "25500000"))
      // The summary is read back from the signed caveats: full addresses, the figures the chain holds.
      const names = ["TimestampEnforcer", "ValueLteEnforcer", "AllowedTargetsEnforcer", "AllowedMethodsEnforcer", "AllowedCalldataEnforcer",
        "LimitedCallsEnforcer", "LogicalOrWrapperEnforcer", "ArgumentCapEnforcer"]
      const environment: DelegationEnvironment = {
        DelegationManager: wallet(1) as Hex,
        EntryPoint: wallet(2) as Hex,
        SimpleFactory: wallet(3) as Hex,
        implementations: {},
        caveatEnforcers: Object.fromEntries(names.map((n, i) => [n, wallet(0x900 + i) as Hex]))
      }
      const delegation = mandateDelegation(environment, m, { expiresAtSeconds: 1_800_000_000, maxJobs: 10, salt: "0x01" })
      const signed = decodeSignedMandate(environment, delegation)
      if ("problem" in signed) throw new Error(signed.problem)
      assert.deepStrictEqual([signed.agent, signed.evaluator, signed.perJobUnits, signed.totalUnits, signed.maxJobs], [
        agent.toLowerCase(), evaluator.toLowerCase(), 25_500_000n, 255_000_000n, 10n
      ])
      const summary = mandateSummary(signed, 8453, m.deployment.paymentToken)
      assert.include(summary, `Lets ${delegatee.toLowerCase()} hire the marketplace agent ${agent.toLowerCase()} — and no other`)
      assert.include(summary, "at most 10 jobs and 255 USDC in all, until 2027-01-15T08:00:00.000Z")
      // A caveat that is not the mandate's shape: no summary.
      assert.isTrue("problem" in decodeSignedMandate(environment, { ...delegation, caveats: delegation.caveats.slice(1) }))
      assert.include(summary, "25.5 USDC per job")
      assert.include(summary, "no other")
      assert.include(summary, "revoke")
    }))

  it.effect("refuses unknown chains, non-positive or over-precise budgets", () =>
    Effect.gen(function*() {
      assert.strictEqual((yield* Effect.flip(draft(0)))._tag, "BadRequest")
      assert.strictEqual((yield* Effect.flip(draft(1.0000001)))._tag, "BadRequest")
      const other = yield* Effect.flip(draftMandate({
        signer, account, chainId: 1, agentWallet: agent, delegatee, perJobBudget: 1,
        evaluator: Option.none(), now: new Date(), salt: 0n
      }))
      assert.strictEqual(other._tag, "BadRequest")
      assert.deepStrictEqual(toBaseUnits(0.1 + 0.2, 6), Option.some(300000n))
      // A huge amount is a number like any other (toFixed switches to exponent form at 1e21): no defect.
      assert.deepStrictEqual(toBaseUnits(1e21, 6), Option.some(10n ** 27n))
    }))

  it.effect("declines a budget above the cap out_of_scope, and any other provider", () =>
    Effect.gen(function*() {
      const m = yield* draft(25)
      assert.strictEqual(yield* checkFund(m, { perJobBudget: 25, chainId: 8453 }), 25_000_000n)
      const over = yield* Effect.flip(checkFund(m, { perJobBudget: 25.000001, chainId: 8453 }))
      assert.strictEqual(over._tag, "OutOfScope")
      assert.strictEqual((over as { declineReason: string }).declineReason, "cap_exceeded")
      const huge = yield* Effect.flip(checkFund(m, { perJobBudget: 1e21, chainId: 8453 }))
      assert.strictEqual(huge._tag, "OutOfScope")
      const otherAgent = yield* Effect.flip(checkCreate(m, { agentWallet: wallet(0xbad) as Address, chainId: 8453 }))
      assert.strictEqual(otherAgent._tag, "OutOfScope")
      yield* checkCreate(m, { agentWallet: agent.toUpperCase().replace("0X", "0x") as Address, chainId: 8453 })
      const wrongChain = yield* Effect.flip(checkFund(m, { perJobBudget: 1, chainId: 84532 }))
      assert.strictEqual(wrongChain._tag, "BadRequest")
    }))

  it.effect("encodes the marketplace calls from the published ABI", () =>
    Effect.gen(function*() {
      const m = yield* draft(25)
      const create = encodeCreateJob(m, { description: "Summarise", expiresAt: new Date("2026-01-02T00:00:00Z") })
      assert.strictEqual(create.to, m.deployment.contract)
      assert.strictEqual(create.data.slice(0, 10), selectors.createJob)
      const decoded = decodeFunctionData({ abi: acpAbi, data: create.data as `0x${string}` })
      assert.strictEqual(decoded.functionName, "createJob")
      assert.deepStrictEqual(decoded.args, [
        getAddress(agent),
        getAddress(evaluator),
        1767312000n,
        getAddress(m.deployment.paymentToken.address),
        25_000_000n,
        "Summarise"
      ])
      const [approve, fund] = encodeFund(m, 42n, 10_000_000n)
      const a = decodeFunctionData({ abi: erc20Abi, data: approve!.data as `0x${string}` })
      assert.strictEqual(approve!.to, m.deployment.paymentToken.address)
      assert.deepStrictEqual(a.args, [m.deployment.contract, 10_000_000n])
      const f = decodeFunctionData({ abi: acpAbi, data: fund!.data as `0x${string}` })
      assert.deepStrictEqual(f.args, [42n, 10_000_000n, m.deployment.paymentToken.address])
    }))

  it.effect("a mandate is read back only by its signer", () =>
    Effect.gen(function*() {
      const store = yield* Mandates
      const m = yield* draft(5)
      yield* store.save({
        ...m,
        accountId: "acc_1",
        delegation: { delegate: delegatee as `0x${string}`, delegator: account as `0x${string}`, authority: `0x${"f".repeat(64)}`, caveats: [], salt: "0x01", signature: "0x" },
        expiresAt: "2026-02-01T00:00:00.000Z",
        enableBuildId: "bld_1",
        enableUserOpHash: `0x${"1".repeat(64)}`
      })
      assert.isTrue(Option.isSome(yield* store.get(signer, m.mandateId)))
      assert.isTrue(Option.isNone(yield* store.get(wallet(0x6) as Address, m.mandateId)))
    }).pipe(Effect.provide(Mandates.layerMemory)))
})
