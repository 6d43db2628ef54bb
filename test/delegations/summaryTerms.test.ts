/**
 * Issue 41, item 1, from outside: every figure of the summary the owner reads equals what the
 * delegation it signs holds, as an independent reader decodes it (the enforcers' own `getTermsInfo`
 * on the local chain: termsOnChain.ts), for every grant shape of `POST /delegations/build` and
 * every permission type of ERC-7715 (`POST /permissions/request`, `POST /wallet`). Hostile names
 * (a fake limit clause, RTL override, newline, zero-width, 10 kB) change no figure, are bounded and
 * quoted, and stand after the limits as the requester's words.
 */
import { assert, layer } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { type Address, toHex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { Network } from "../../src/chain/Network.ts"
import { NATIVE_ADDRESS } from "../../src/tokens/Native.ts"
import { kitWire } from "../permissions/agent.ts"
import { kitOverWallet, nextPending } from "../permissions/wallet.ts"
import { TestServerLive } from "../support/TestServer.ts"
import { newSession, type Session } from "./helpers.ts"
import { assertSummaryMatches, figuresIn, limitsPart, readOnChain, type TokenFacts } from "./termsOnChain.ts"

const randomAddress = () => privateKeyToAccount(generatePrivateKey()).address.toLowerCase() as Address
const nowS = () => Math.floor(Date.now() / 1000)
const DAY = 86_400
const USD = (n: number) => BigInt(Math.round(n * 1_000_000))

/** The attack: a name that reads as a limit, then text that hides or reorders what follows. */
const FAKE_CLAUSE = `"Coffee" may spend at most 1 USDC in total`
const HOSTILE_NAME = `${FAKE_CLAUSE}\u202e\n\u200bRTL\u2066`
const LONG_NAME = `${FAKE_CLAUSE} ${"x".repeat(10_000)}`

/** What the requester's words must look like: after the limits, on one line, quoted, bounded, nothing hidden. */
const assertQuotedAfterLimits = (summary: string, raw: string, label = "Named by the requester") => {
  const limits = limitsPart(summary)
  assert.notInclude(limits, "Coffee", "no outside word among the limits")
  const at = summary.indexOf(`${label}: "`)
  assert.isAbove(at, limits.length - 1, "the requester's words come after the limits")
  assert.isTrue(summary.indexOf("the chain enforces each of these limits") < at)
  for (const hidden of ["\u202e", "\n", "\u200b", "\u2066", "\u0000"]) assert.notInclude(summary, hidden)
  const quoted = /"([^"]*)"/.exec(summary.slice(at))![1]!
  assert.isAtMost(Array.from(quoted).length, 64)
  assert.isTrue(quoted.startsWith("'Coffee' may spend at most 1 USDC in total"), quoted)
  assert.isAbove(raw.length, 0)
}

layer(TestServerLive({ config: { DELEGATION_MIN_LIFETIME: "1 second", PERMISSIONS_APPROVAL_WAIT: "60 seconds" } }), {
  timeout: Duration.seconds(240),
  excludeTestServices: true
})("the summary states the signed terms and nothing else", (it) => {
  const tokensOf = Effect.gen(function*() {
    const net = yield* Network
    return [net.tokens.usd, net.tokens.usdt, { address: NATIVE_ADDRESS, symbol: "ETH", decimals: 18 }] as ReadonlyArray<TokenFacts>
  })
  /** The built grant's typed data read on chain; the summary checked against it; the summary returned. */
  const check = (build: { readonly humanSummary: string; readonly delegations: ReadonlyArray<{ readonly typedData: unknown }> }) =>
    Effect.gen(function*() {
      const net = yield* Network
      assert.lengthOf(build.delegations, 1)
      const onChain = yield* Effect.promise(() => readOnChain(build.delegations[0]!.typedData as never, net.delegation.caveatEnforcers))
      assertSummaryMatches(build.humanSummary, onChain, yield* tokensOf)
      return onChain
    })

  const build = (owner: Session, delegate: string, extra: Record<string, unknown>, name = "grant") =>
    Effect.gen(function*() {
      const net = yield* Network
      return yield* owner.api.delegations.build({
        payload: { name, kind: "agent", delegateeAddress: delegate, chainId: net.chainId, ...extra } as never
      })
    })

  // A revocation-only grant is built through ERC-7715 alone (POST /delegations/build asks for a budget): the next test.
  it.effect("POST /delegations/build, every grant shape: each figure is the enforcers' own; hostile names change none", () =>
    Effect.gen(function*() {
      const owner = yield* newSession()
      const delegate = randomAddress()
      const [alice, bob] = [randomAddress(), randomAddress()]
      const expiresAt = new Date((nowS() + 20 * DAY) * 1000).toISOString()
      const shapes: ReadonlyArray<readonly [string, Record<string, unknown>]> = [
        ["two tokens in total, per-action maximum, action count, two recipients, expiry", {
          budgets: [{ token: { symbol: "USDC" }, amount: 1000 }, { token: { symbol: "USDT" }, amount: 250.5 }],
          perActionMax: { token: { symbol: "USDC" }, amount: 500 },
          maxActions: 7,
          recipientAllowlist: [{ name: HOSTILE_NAME, address: alice, chainId: 31337 }, { name: LONG_NAME, address: bob, chainId: 31337 }],
          expiresAt
        }],
        ["a daily budget, one recipient, named redeemers", {
          budgets: [{ token: { symbol: "USDC" }, amount: 12.25, period: { every: "day" } }],
          maxActions: 3,
          recipientAllowlist: [{ name: "Alice", address: alice, chainId: 31337 }],
          redeemers: { mode: "named", addresses: [randomAddress()] },
          expiresAt
        }],
        ["a period in seconds from a later start", {
          budgets: [{ token: { symbol: "USDT" }, amount: 3, period: { seconds: 3_600, start: new Date((nowS() + 120) * 1000).toISOString() } }],
          maxActions: 50,
          expiresAt
        }],
        ["an approval rule (2 of 3 above 5 USDC), open to redelegation", {
          budgets: [{ token: { symbol: "USDC" }, amount: 100 }, { token: { symbol: "USDT" }, amount: 40 }],
          perActionMax: { token: { symbol: "USDC" }, amount: 20 },
          maxActions: 9,
          approval: { required: 2, approvers: [randomAddress(), randomAddress(), randomAddress()], thresholds: [{ token: { symbol: "USDC" }, amount: 5 }] },
          redeemers: { mode: "redelegation" },
          expiresAt
        }],
        ["an ERC-20 stream", {
          budgets: [{ token: { symbol: "USDC" }, amount: 10, stream: { perSecond: 0.25, initial: 2 } }],
          maxActions: 4,
          expiresAt
        }],
        ["ETH in total to two recipients", {
          budgets: [{ token: { symbol: "ETH" }, amount: 0.5 }],
          perActionMax: { token: { symbol: "ETH" }, amount: 0.125 },
          maxActions: 2,
          recipientAllowlist: [{ name: "a", address: alice, chainId: 31337 }, { name: "b", address: bob, chainId: 31337 }],
          expiresAt
        }],
        ["an ETH stream", {
          budgets: [{ token: { symbol: "ETH" }, amount: 1, stream: { perSecond: 0.001 } }],
          maxActions: 6,
          expiresAt
        }]
      ]
      for (const [what, extra] of shapes) {
        const built = yield* build(owner, delegate, extra, HOSTILE_NAME)
        const onChain = yield* check(built).pipe(Effect.mapError((e) => new Error(`${what}: ${String(e)}`)))
        assertQuotedAfterLimits(built.humanSummary, HOSTILE_NAME)
        assert.isDefined(onChain.expiry, what)
      }

      // The first shape: 1,000 USDC is what the chain holds, and the only 1 near "USDC" is the requester's quote.
      const first = yield* build(owner, delegate, shapes[0]![1], FAKE_CLAUSE)
      assert.isTrue(first.humanSummary.startsWith(`The delegate ${delegate} may spend at most 1000 USDC and 250.5 USDT in total, at most 500 USDC or 500 USDT per action`))
      assert.notInclude(figuresIn(limitsPart(first.humanSummary)), "1")
      // Recipients are addresses among the limits; the names given to them are the requester's words, each bounded.
      assert.include(limitsPart(first.humanSummary), `only to ${alice} and ${bob}`)
      const names = first.humanSummary.slice(first.humanSummary.indexOf("Recipient names given by the requester:"))
      assert.include(names, `${alice} "'Coffee' may spend at most 1 USDC in total RTL"`)
      assert.isAtMost(names.length, 300, "a 10 kB name is bounded")
    }))

  it.effect("ERC-7715 over POST /permissions/request: every type the service accepts; a justification posing as a limit is the requester's words after the real ones", () =>
    Effect.gen(function*() {
      const net = yield* Network
      const owner = yield* newSession()
      const agent = randomAddress()
      const usdc = net.tokens.usd.address
      const expiry = nowS() + 10 * DAY
      const types = [
        { type: "erc20-token-periodic", data: { tokenAddress: usdc, periodAmount: USD(1000), periodDuration: DAY } },
        { type: "erc20-token-allowance", data: { tokenAddress: usdc, allowanceAmount: USD(1000) } },
        { type: "erc20-token-allowance", data: { tokenAddress: usdc, allowanceAmount: USD(7.5), startTime: nowS() + 3_600 } },
        { type: "erc20-token-stream", data: { tokenAddress: usdc, amountPerSecond: USD(0.5), initialAmount: USD(3), maxAmount: USD(1000) } },
        { type: "native-token-periodic", data: { periodAmount: 10n ** 17n, periodDuration: 7 * DAY } },
        { type: "native-token-allowance", data: { allowanceAmount: 3n * 10n ** 17n } },
        { type: "native-token-stream", data: { amountPerSecond: 10n ** 12n, maxAmount: 10n ** 16n } },
        { type: "erc20-token-revocation", data: {} },
        { type: "token-approval-revocation", data: { erc20Approve: false, erc721Approve: true, erc721SetApprovalForAll: false, permit2Approve: true, permit2Lockdown: false, permit2InvalidateNonces: false } }
      ] as const
      for (const t of types) {
        const payee = t.type.endsWith("revocation") || t.type.startsWith("native") ? {} : { payee: [randomAddress()] }
        const requests = yield* Effect.promise(() =>
          kitWire([{
            chainId: net.chainId,
            to: agent,
            expiry,
            ...payee,
            permission: { type: t.type, isAdjustmentAllowed: false, data: { ...t.data, justification: HOSTILE_NAME } }
          } as never])
        )
        const offered = yield* owner.api.permissions.request({ payload: { requests: requests as never } })
        const item = offered.grants![0]!
        yield* check(item.build).pipe(Effect.mapError((e) => new Error(`${t.type}: ${String(e)}`)))
        assertQuotedAfterLimits(item.build.humanSummary, HOSTILE_NAME)
        yield* owner.api.permissions.reject({ params: { approvalId: offered.id } })
      }
    }))

  it.effect("ERC-7715 over POST /wallet (the kit's wallet_requestExecutionPermissions): the approval's summary opens with the chain's 1000 USDC, the requester's \"1 USDC\" last", () =>
    Effect.gen(function*() {
      const net = yield* Network
      const owner = yield* newSession()
      const agent = randomAddress()
      const kit = yield* kitOverWallet(owner)
      const [, pending] = yield* Effect.all([
        Effect.flip(Effect.tryPromise(() =>
          kit.requestExecutionPermissions([{
            chainId: net.chainId,
            to: agent,
            expiry: nowS() + 5 * DAY,
            permission: { type: "erc20-token-allowance", isAdjustmentAllowed: false, data: { tokenAddress: net.tokens.usd.address, allowanceAmount: USD(1000), justification: FAKE_CLAUSE } }
          }])
        )),
        Effect.tap(nextPending(owner), (p) => owner.api.permissions.reject({ params: { approvalId: p.id } }))
      ], { concurrency: 2 })
      const summary = pending.grants![0]!.build.humanSummary
      yield* check(pending.grants![0]!.build)
      assert.isTrue(summary.startsWith(`The delegate ${agent} may spend at most 1000 USDC in total`), summary)
      assert.isTrue(summary.endsWith(` Named by the requester: "'Coffee' may spend at most 1 USDC in total".`), summary)
      assert.strictEqual(toHex(net.chainId), pending.grants![0]!.request.chainId)
    }))
})
