import { assert, describe, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import type { Address } from "../../src/domain/Primitives.ts"
import { decodeCursor, Marketplace } from "../../src/marketplace/Marketplace.ts"
import { mapAgent, mapJob } from "../../src/marketplace/UpstreamMapping.ts"
import { agentFixture, approve, fakeUpstream, type FakeUpstream, wallet } from "./FakeUpstream.ts"
import { type Knobs, withMarketplace } from "./helpers.ts"

const me = wallet(0xa11ce) as Address
const myAccount = wallet(0xacc0) as Address
const stranger = wallet(0xbad) as Address

const hash = (n: number) => `0x${n.toString(16).padStart(64, "0")}`

const jobFixture = (id: number, client: string, createdAt: string, extra: Record<string, unknown> = {}) => ({
  id: 900 + id,
  onChainJobId: id,
  chainId: 8453,
  phase: 3,
  description: "Summarise the filings",
  offeringName: "summary",
  providerName: "Agent 1",
  clientAddress: client,
  providerAddress: wallet(1),
  evaluatorAddress: wallet(0xe7a1),
  price: "12.5",
  createdAt,
  memos: [
    { id: 1, memoType: "MESSAGE", nextPhase: 1, createdAt, senderAddress: client, txHash: hash(1), content: "please" },
    { id: 2, nextPhase: 2, createdAt: "2026-03-01T00:01:00Z", senderAddress: wallet(1), txHash: hash(2) },
    {
      id: 3,
      nextPhase: "EVALUATION",
      createdAt: "2026-03-01T00:02:00Z",
      senderAddress: wallet(1),
      txHash: "not-a-hash",
      content: "line one\nline two"
    }
  ],
  ...extra
})

const seed = (fake: FakeUpstream, n: number) => {
  fake.state.agents = Array.from({ length: n }, (_, i) => agentFixture(i + 1, 1_000 * (i % 7) + i))
}

const withFake = <A, E>(f: (fake: FakeUpstream) => Effect.Effect<A, E, Marketplace>, knobs: Knobs = {}) =>
  Effect.scoped(Effect.flatMap(fakeUpstream, (fake) => withMarketplace(fake, f(fake), knobs)))

describe("upstream mapping", () => {
  it("maps the newer agent shape into the contract", () => {
    const agent = Option.getOrThrow(mapAgent(agentFixture(7, 5_000)))
    assert.strictEqual(agent.walletAddress, wallet(7))
    assert.strictEqual(agent.imageUrl, "https://img.example/7.png")
    assert.strictEqual(agent.totalVolumeUsd, 5_000)
    assert.strictEqual(agent.totalRevenueUsd, 500)
    assert.strictEqual(agent.totalJobs, 19)
    assert.strictEqual(agent.uniqueWallets, 3)
    assert.deepStrictEqual(agent.chainIds, [8453])
    assert.deepStrictEqual(agent.recentVolumeUsd, [{ timestamp: "2026-01-01T00:00:00.000Z", value: 2_500 }])
    assert.deepStrictEqual(agent.offerings[0], {
      id: "offer-7",
      name: "offer-7",
      description: "An offering",
      priceUsd: 2.07,
      slaMinutes: 30,
      requiresFunds: false,
      requirementsSchema: { type: "object", properties: { topic: { type: "string" } } }
    })
  })

  it("maps the older agent shape (profilePic, jobs[] offerings, priceV2)", () => {
    const agent = Option.getOrThrow(mapAgent({
      id: 3,
      name: "Old",
      walletAddress: wallet(3),
      profilePic: "p.png",
      jobs: [{ name: "x", price: 1, priceV2: { type: "fixed", value: "4.5" }, requirement: "a sentence", requiredFunds: true }],
      metrics: { successfulJobCount: 4, successRate: 0.5, uniqueBuyerCount: 2, isOnline: true }
    }))
    assert.strictEqual(agent.imageUrl, "p.png")
    assert.strictEqual(agent.offerings[0]!.priceUsd, 4.5)
    assert.strictEqual(agent.offerings[0]!.requiresFunds, true)
    assert.strictEqual(agent.offerings[0]!.requirementsSchema, "a sentence")
    assert.strictEqual(agent.totalJobs, 4)
  })

  it("drops an agent without a valid wallet address, whatever its name", () => {
    assert.isTrue(Option.isNone(mapAgent({ name: "Agent 1" })))
    assert.isTrue(Option.isNone(mapAgent({ name: "Agent 1", walletAddress: "0x1234" })))
    assert.isTrue(Option.isNone(mapAgent({ name: "Agent 1", walletAddress: wallet(1), rating: "high" })))
  })

  it("a job whose date cannot be a wire timestamp (year beyond 9999, microseconds) is dropped, not a 500", () => {
    assert.isTrue(Option.isNone(mapJob(jobFixture(5, me, "+010000-01-01T00:00:00Z"))))
    assert.isTrue(Option.isNone(mapJob({ ...jobFixture(5, me, "2026-03-01T00:00:00Z"), createdAt: 1_772_323_200_000_000 })))
  })

  it("maps a job: status, budget, events with actors, deliverable", () => {
    const { clientAddress, job } = Option.getOrThrow(mapJob(jobFixture(5, me, "2026-03-01T00:00:00Z")))
    assert.strictEqual(clientAddress, me)
    assert.strictEqual(job.jobId, "5")
    assert.strictEqual(job.status, "submitted")
    assert.strictEqual(job.budgetUsd, 12.5)
    assert.strictEqual(job.agentWallet, wallet(1))
    assert.deepStrictEqual(job.events.map((e) => [e.label, e.actor, e.txHash]), [
      ["Job created", "you", null],
      ["Terms agreed", "you", hash(1)],
      ["Escrow funded", "agent", hash(2)],
      ["Work delivered", "agent", null]
    ])
    assert.deepStrictEqual(job.deliverable, { title: "summary", lines: ["line one", "line two"], readByEvaluator: false })
    assert.strictEqual(job.updatedAt, "2026-03-01T00:02:00.000Z")
  })
})

describe("Marketplace against a loopback upstream", () => {
  it.live("pages the leaderboard by volume with an opaque cursor, without repeats", () =>
    withFake((fake) =>
      Effect.gen(function*() {
        seed(fake, 53)
        fake.state.agents.push({ name: "No wallet", metrics: { grossAgenticAmount: 1e9 } })
        fake.state.agents.push({ name: "Bad wallet", walletAddress: "0xabc", metrics: { grossAgenticAmount: 1e9 } })
        const m = yield* Marketplace
        const seen: Array<string> = []
        const volumes: Array<number> = []
        let cursor: string | undefined
        let pages = 0
        do {
          const page = yield* m.listAgents({ cursor, limit: 10 })
          assert.isAtMost(page.agents.length, 10)
          assert.strictEqual(page.total, 55)
          for (const a of page.agents) {
            seen.push(a.walletAddress)
            volumes.push(a.totalVolumeUsd)
          }
          cursor = page.nextCursor
          pages++
          // Between pages the upstream order shifts: a low agent's volume jumps to the top.
          if (pages === 2) (fake.state.agents[0]!.metrics as { grossAgenticAmount: number }).grossAgenticAmount = 1e8
        } while (cursor !== "" && pages < 20)
        assert.strictEqual(new Set(seen).size, seen.length, "no agent repeats across pages")
        assert.isFalse(seen.some((w) => !/^0x[0-9a-f]{40}$/i.test(w)), "wallet-less agents are dropped")
        assert.isAtLeast(seen.length, 52)
        for (let i = 1; i < volumes.length; i++) assert.isAtMost(volumes[i]!, volumes[i - 1]!, "volume descending")
        // The cursor is opaque but ours: garbage is a 400.
        const bad = yield* m.listAgents({ cursor: "not-a-cursor!", limit: 10 }).pipe(Effect.flip)
        assert.strictEqual(bad._tag, "BadRequest")
        assert.isTrue(Option.isNone(decodeCursor("eyJ2IjoyfQ")))
      })
    ))

  it.live("pages to the end when the upstream gives no total", () =>
    withFake((fake) =>
      Effect.gen(function*() {
        seed(fake, 30)
        fake.state.omitMeta = true
        const m = yield* Marketplace
        const seen: Array<string> = []
        let cursor: string | undefined
        let pages = 0
        do {
          const page = yield* m.listAgents({ cursor, limit: 7 })
          seen.push(...page.agents.map((a) => a.walletAddress))
          cursor = page.nextCursor
          pages++
        } while (cursor !== "" && pages < 20)
        assert.strictEqual(seen.length, 30)
        assert.strictEqual(new Set(seen).size, 30)
      })
    ))

  it.live("forwards search parameters and never browses all", () =>
    withFake((fake) =>
      Effect.gen(function*() {
        seed(fake, 12)
        const m = yield* Marketplace
        const found = yield* m.searchAgents({ query: "task number 1", chainIds: "8453,84532", topK: 3 })
        const req = fake.state.requests.find((r) => r.path === "/agents/search")!
        assert.strictEqual(req.query.get("query"), "task number 1")
        assert.strictEqual(req.query.get("chainIds"), "8453,84532")
        assert.strictEqual(req.query.get("topK"), "3")
        assert.strictEqual(found.length, 3)
        const empty = yield* m.searchAgents({ query: "   " }).pipe(Effect.flip)
        assert.strictEqual(empty._tag, "BadRequest")
        const badChains = yield* m.searchAgents({ query: "x", chainIds: "base" }).pipe(Effect.flip)
        assert.strictEqual(badChains._tag, "BadRequest")
        assert.strictEqual(fake.count("/agents/search"), 1, "invalid searches never reach the upstream")
      })
    ))

  it.live("finds an agent by wallet only; unknown wallet is 404", () =>
    withFake((fake) =>
      Effect.gen(function*() {
        seed(fake, 3)
        fake.state.agents.push({ name: "Agent 9" }) // same name pattern, no wallet
        const m = yield* Marketplace
        const a = yield* m.getAgent(wallet(2) as Address)
        assert.strictEqual(a.name, "Agent 2")
        const missing = yield* m.getAgent(wallet(9) as Address).pipe(Effect.flip)
        assert.strictEqual(missing._tag, "NotFound")
      })
    ))

  it.live("lists only the caller's jobs, newest first, and hides others' jobs", () =>
    withFake((fake) =>
      Effect.gen(function*() {
        fake.state.leakyJobs = true // the upstream ignores the filter: the service must not
        fake.state.jobs = [
          jobFixture(1, me, "2026-03-01T00:00:00Z"),
          jobFixture(2, stranger, "2026-03-05T00:00:00Z"),
          jobFixture(3, myAccount, "2026-03-03T00:00:00Z"),
          { ...jobFixture(4, me, "2026-03-04T00:00:00Z"), providerAddress: "Agent 1" }
        ]
        const m = yield* Marketplace
        const jobs = yield* m.listJobs([me, myAccount])
        assert.deepStrictEqual(jobs.map((j) => j.jobId), ["3", "1"])
        const req = fake.state.requests.find((r) => r.path === "/jobs")!
        assert.strictEqual(req.query.get("clientAddress"), `${me},${myAccount}`)
        const one = yield* m.getJob([me], 8453, "1")
        assert.strictEqual(one.events.length, 4)
        const theirs = yield* m.getJob([me], 8453, "2").pipe(Effect.flip)
        assert.strictEqual(theirs._tag, "NotFound")
      })
    ))

  it.live("evaluator status comes from configuration", () =>
    Effect.gen(function*() {
      const on = yield* withFake(() => Effect.gen(function*() { return yield* (yield* Marketplace).evaluator }), {
        evaluatorWallet: wallet(0xe7a1)
      })
      assert.deepStrictEqual(on, { connected: true, wallet: wallet(0xe7a1) })
      const off = yield* withFake(() => Effect.gen(function*() { return yield* (yield* Marketplace).evaluator }))
      assert.deepStrictEqual(off, { connected: false })
    }))

  it.live("managed connect: start, poll, keep only the wallet, short-circuit next time", () =>
    withFake((fake) =>
      Effect.gen(function*() {
        const m = yield* Marketplace
        assert.deepStrictEqual(yield* m.managedConnection(me), { connected: false })
        const start = yield* m.managedConnect(me)
        assert.isFalse(start.alreadyConnected)
        assert.match(start.loginUrl, /^https:\/\/login\.example\//)
        assert.deepStrictEqual(yield* m.managedConnectStatus(me, start.requestId), { connected: false })
        // Another signer cannot poll (or hijack) this request.
        const other = yield* m.managedConnectStatus(stranger, start.requestId).pipe(Effect.flip)
        assert.strictEqual(other._tag, "NotFound")
        approve(fake.state, start.requestId, wallet(0x3a3a))
        const done = yield* m.managedConnectStatus(me, start.requestId)
        assert.deepStrictEqual(done, { connected: true, walletAddress: wallet(0x3a3a) })
        // The token went to the upstream once, as a bearer, and nowhere else.
        const lite = fake.state.requests.filter((r) => r.path === "/agents/lite")
        assert.strictEqual(lite.length, 1)
        assert.strictEqual(lite[0]!.authorization, `Bearer tok-${start.requestId}`)
        assert.deepStrictEqual(yield* m.managedConnection(me), { connected: true, walletAddress: wallet(0x3a3a) })
        const again = yield* m.managedConnect(me)
        assert.deepStrictEqual(again, { loginUrl: "", requestId: "", alreadyConnected: true, walletAddress: wallet(0x3a3a) })
        assert.strictEqual(fake.count("/auth/lite/auth-url"), 1)
        const unknown = yield* m.managedConnectStatus(stranger, "req-404").pipe(Effect.flip)
        assert.strictEqual(unknown._tag, "NotFound")
      })
    ))
})

describe("upstream failures answer typed errors quickly", () => {
  const cases = [
    { mode: "down", tag: "UpstreamUnavailable" },
    { mode: "500", tag: "UpstreamUnavailable" },
    { mode: "malformed", tag: "UpstreamUnavailable" },
    { mode: "wrong-shape", tag: "UpstreamUnavailable" },
    { mode: "slow", tag: "UpstreamTimeout" }
  ] as const
  for (const { mode, tag } of cases) {
    it.live(`${mode} → ${tag} within a bounded time`, () =>
      withFake((fake) =>
        Effect.gen(function*() {
          seed(fake, 5)
          fake.state.mode = mode
          const m = yield* Marketplace
          const started = Date.now()
          const calls: ReadonlyArray<Effect.Effect<unknown, { readonly _tag: string }>> = [
            m.listAgents({ limit: 5 }),
            m.searchAgents({ query: "task" }),
            m.listJobs([me]),
            m.getAgent(wallet(1) as Address)
          ]
          for (const call of calls) {
            const e = yield* Effect.flip(call)
            assert.strictEqual(e._tag, tag)
          }
          const elapsed = Date.now() - started
          assert.isBelow(elapsed, 3 * 500 + 1_000, `answered in ${elapsed} ms`)
        }), { timeoutMs: 300, retries: 2 }))
  }

  it.live("a transport fault is retried (bounded), a 500 is not", () =>
    withFake((fake) =>
      Effect.gen(function*() {
        seed(fake, 5)
        const m = yield* Marketplace
        fake.state.dropNext = 2
        const page = yield* m.listAgents({ limit: 5 })
        assert.strictEqual(page.agents.length, 5)
        assert.strictEqual(fake.count("/agents"), 3)
        fake.state.mode = "down"
        yield* Effect.flip(m.listAgents({ limit: 5 }))
        assert.strictEqual(fake.count("/agents"), 6, "1 + 2 retries, then give up")
        fake.state.mode = "500"
        yield* Effect.flip(m.listAgents({ limit: 5 }))
        assert.strictEqual(fake.count("/agents"), 7, "no retry on a status")
      }), { retries: 2 }))
})
