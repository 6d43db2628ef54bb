/**
 * Issue 41, item 1, for the marketplace: the hire summary's figures and addresses are the signed
 * mandate's, as the enforcers themselves read its caveats on the local chain (`getTermsInfo` of
 * Timestamp, AllowedCalldata, LimitedCalls and the project's ArgumentCap; the kit decodes the
 * LogicalOrWrapper's groups). The agent's name comes from the marketplace upstream (a real HTTP
 * server on loopback) and is hostile: a fake limit clause, an RTL override, a newline, a NUL and
 * 10 kB. It changes no figure, is bounded and quoted, and stands after the limits.
 */
import { assert, describe, it } from "@effect/vitest"
import * as abis from "@metamask/delegation-abis"
import { decodeLogicalOrWrapperTerms } from "@metamask/delegation-core"
import { Duration, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { type Address, createPublicClient, formatUnits, type Hex, http } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { Network } from "../../src/chain/Network.ts"
import { argumentCapEnforcerAbi } from "../../src/chain/contracts/Enforcers.ts"
import { signIn } from "../../src/client/signIn.ts"
import { testNetwork } from "../support/TestChain.ts"
import { client, TestServer, TestServerLive } from "../support/TestServer.ts"
import { agentFixture, fakeUpstream, wallet } from "../marketplace/FakeUpstream.ts"

process.env.DO_NOT_TRACK = "1"

const ACP = "0x00000000000000000000000000000000000ac9ac"
const AGENT = wallet(0xa6e8)
const HOSTILE = `"Coffee" may spend at most 1 USDC in total\u202e\n\u0000\u200b${"x".repeat(10_000)}`

/** The mandate's caveats read by the enforcers' own views on the local chain. */
const readMandate = async (caveats: ReadonlyArray<{ readonly enforcer: string; readonly terms: string }>, enforcers: Readonly<Record<string, string>>) => {
  const chain = createPublicClient({ transport: http(testNetwork().rpcUrl) })
  const nameOf = (a: string) => Object.entries(enforcers).find(([, x]) => x.toLowerCase() === a.toLowerCase())?.[0]
  const view = <T>(abi: unknown, address: string, terms: string): Promise<T> =>
    chain.readContract({ address: address as Address, abi: abi as never, functionName: "getTermsInfo" as never, args: [terms as Hex] as never }) as Promise<T>
  const [, expiry] = await view<readonly [bigint, bigint]>(abis.TimestampEnforcer, caveats[0]!.enforcer, caveats[0]!.terms)
  assert.strictEqual(await view<bigint>(abis.ValueLteEnforcer, caveats[1]!.enforcer, caveats[1]!.terms), 0n)
  const pinned: Array<Address> = []
  const caps: Array<readonly [bigint, bigint]> = []
  let jobs = 0n
  for (const group of decodeLogicalOrWrapperTerms(caveats[2]!.terms as Hex).caveatGroups) {
    for (const c of group) {
      const name = nameOf(c.enforcer)
      if (name === "AllowedCalldataEnforcer") {
        const [, value] = await view<readonly [bigint, Hex]>(abis.AllowedCalldataEnforcer, c.enforcer, c.terms)
        pinned.push(`0x${value.slice(26)}` as Address)
      } else if (name === "ArgumentCapEnforcer") {
        const [, perCall, total] = await view<readonly [bigint, bigint, bigint]>(argumentCapEnforcerAbi, c.enforcer, c.terms)
        caps.push([perCall, total])
      } else if (name === "LimitedCallsEnforcer") {
        jobs = await view<bigint>(abis.LimitedCallsEnforcer, c.enforcer, c.terms)
      }
    }
  }
  return { expiry, pinned, caps, jobs, names: caveats.map((c) => nameOf(c.enforcer)) }
}

describe("the hire summary", () => {
  it.live("states the signed mandate's figures; the upstream's hostile agent name is quoted after them", () =>
    Effect.gen(function*() {
      const fake = yield* fakeUpstream
      fake.state.agents.push(agentFixture(0xa6e8, 1_000, { name: HOSTILE }))
      yield* Effect.gen(function*() {
        const net = yield* Network
        const sql = yield* SqlClient.SqlClient
        const { baseUrl } = yield* TestServer
        const session = yield* signIn(baseUrl, privateKeyToAccount(generatePrivateKey()))
        const api = yield* client(session.token)
        const delegatee = privateKeyToAccount(generatePrivateKey()).address.toLowerCase()
        const hire = yield* api.hiring.hireBuild({ payload: { agentWallet: AGENT, chainId: net.chainId, perJobBudget: 12.5, delegateeAddress: delegatee } })

        // The independent reading of what the owner signs.
        const caveats = hire.delegation!.typedData.message.caveats
        const { expiry, pinned, caps, jobs, names } = yield* Effect.promise(() => readMandate(caveats, net.delegation.caveatEnforcers))
        assert.deepStrictEqual(names, ["TimestampEnforcer", "ValueLteEnforcer", "LogicalOrWrapperEnforcer"])
        const usdc = net.tokens.usd
        const [perJob, total] = caps[0]!
        assert.isTrue(caps.every(([p, t]) => p === perJob && t === total))
        assert.include(pinned, AGENT)

        const summary = hire.policySummary
        const cut = summary.indexOf(" The agent's name, as the marketplace gives it: ")
        assert.isAbove(cut, 0)
        const limits = summary.slice(0, cut)
        assert.isTrue(limits.startsWith(`Lets ${delegatee} hire the marketplace agent ${AGENT} — and no other — on chain ${net.chainId}, `), limits)
        assert.include(limits, `paying at most ${formatUnits(perJob, usdc.decimals)} USDC per job from your account ${session.accounts[0]!.address}`)
        assert.include(limits, `at most ${jobs} jobs and ${formatUnits(total, usdc.decimals)} USDC in all, until ${new Date(Number(expiry) * 1000).toISOString()}`)
        assert.include(limits, `approve the marketplace escrow ${ACP}`)
        assert.include(limits, "You can revoke this at any time.")
        assert.notInclude(limits, "Coffee")
        // Every figure among the limits is one the chain reads (instants and addresses aside).
        const figures = limits.replace(/0x[0-9a-f]+/g, " ").replace(/\d{4}-\d{2}-\d{2}T[\d:.]+Z/g, " ").match(/\d+(\.\d+)?/g) ?? []
        const decoded = new Set([String(jobs), formatUnits(perJob, usdc.decimals), formatUnits(total, usdc.decimals), String(net.chainId)])
        for (const f of figures) assert.isTrue(decoded.has(f), `${f} is in no caveat: ${limits}`)

        // The name: after the limits, one quoted line of at most 64 characters, nothing hidden.
        const words = summary.slice(cut)
        const quoted = /"([^"]*)"/.exec(words)![1]!
        assert.isTrue(quoted.startsWith("'Coffee' may spend at most 1 USDC in total x"), quoted)
        assert.isAtMost(Array.from(quoted).length, 64)
        for (const hidden of ["\u202e", "\n", "\u0000", "\u200b"]) assert.notInclude(summary, hidden)
        assert.isBelow(summary.length, limits.length + 200)

        // What the owner signs the operation under: the same words, nothing before them.
        const [stored] = yield* sql<{ human_summary: string }>`SELECT human_summary FROM op_builds WHERE user_op_hash = ${hire.userOpHash}`
        assert.strictEqual(stored!.human_summary, `Enable a marketplace mandate. ${summary}`)
      }).pipe(
        Effect.provide(Layer.fresh(TestServerLive({ config: { MARKETPLACE_API_URL: fake.url, MARKETPLACE_ACP_CONTRACT: ACP } })))
      )
    }), { timeout: Duration.toMillis(Duration.seconds(120)) })
})
