/**
 * The ERC-7715 mapping, as pure functions (src/permissions): requests as the kit's
 * `erc7715ProviderActions` puts them on the wire, mapped to the service's build input, whose
 * policy and grant hold exactly what was asked; every malformed or unholdable request refused
 * naming its field; what this deployment supports; the response an agent redeems; a stored grant
 * in the standard's shape. The chain side: kit.test.ts.
 */
import { assert, describe, it } from "@effect/vitest"
import { erc7715ProviderActions, type RequestExecutionPermissionsParameters } from "@metamask/smart-accounts-kit/actions"
import { decodeDelegations } from "@metamask/smart-accounts-kit/utils"
import { type Address, createClient, custom, type Hex, hexToBigInt, slice, toHex } from "viem"
import type { DelegationEnvironment } from "../../src/chain/Network.ts"
import { grantTermsOf, makeGrant, makeRevocationGrant, revocationTermsOf } from "../../src/delegations/Grant.ts"
import { NATIVE_ADDRESS, nativeToken } from "../../src/tokens/Native.ts"
import { evaluate, makePolicySet, makeRevocationPolicy } from "../../src/delegations/Policy.ts"
import { MAX_ACTIONS, mapRequest, type Mapped, type MappingContext, type Refusal } from "../../src/permissions/Erc7715.ts"
import { grantedRequest, permissionResponse } from "../../src/permissions/Response.ts"
import { supportedPermissions } from "../../src/permissions/Supported.ts"
import type { Token } from "../../src/tokens/TokenRegistry.ts"
import { summaryOf } from "../delegations/summaryOf.ts"

process.env.DO_NOT_TRACK = "1"

const addr = (n: number) => `0x${n.toString(16).padStart(40, "0")}` as Address
const names = ["TimestampEnforcer", "RedeemerEnforcer", "ValueLteEnforcer", "AllowedTargetsEnforcer", "AllowedMethodsEnforcer",
  "AllowedCalldataEnforcer", "LogicalOrWrapperEnforcer", "TransferCapEnforcer", "LimitedCallsEnforcer", "MultiTokenPeriodEnforcer",
  "ERC20StreamingEnforcer", "ExactCalldataEnforcer", "NativeTokenPeriodTransferEnforcer", "NativeTokenStreamingEnforcer",
  "ApprovalRevocationEnforcer"]
const environment = (without: ReadonlyArray<string> = []): DelegationEnvironment => ({
  DelegationManager: addr(1),
  EntryPoint: addr(2),
  SimpleFactory: addr(3),
  implementations: {},
  caveatEnforcers: Object.fromEntries(names.filter((n) => !without.includes(n)).map((n) => [n, addr(0x100 + names.indexOf(n))]))
})
const enforcerName = (env: DelegationEnvironment, a: string) => Object.entries(env.caveatEnforcers).find(([, x]) => x.toLowerCase() === a.toLowerCase())?.[0]

const CHAIN = 31337
const USDC: Token = { chainId: CHAIN, symbol: "USDC", name: "USD Coin", address: addr(0xa1).toLowerCase(), decimals: 6 }
const now = new Date("2026-01-01T00:00:00.000Z")
const nowS = now.getTime() / 1000
const agent = addr(0xa9e)
const owner = addr(0x0e)
const DAY = 86_400

const context = (env = environment()): MappingContext => ({
  chainIds: [CHAIN],
  supported: supportedPermissions([{ chainId: CHAIN, delegation: env }]),
  now,
  tokenOf: (chainId, a) => chainId === CHAIN && a.toLowerCase() === USDC.address ? USDC : undefined,
  knownTokens: () => [USDC],
  account: owner
})

/** What the kit's `requestExecutionPermissions` sends for `parameters` (a client whose transport records the call). */
const kitWire = async (parameters: RequestExecutionPermissionsParameters) => {
  let sent: ReadonlyArray<unknown> = []
  const client = createClient({
    transport: custom({
      request: async ({ method, params }: { method: string; params: ReadonlyArray<unknown> }) => {
        assert.strictEqual(method, "wallet_requestExecutionPermissions")
        sent = params
        return []
      }
    })
  }).extend(erc7715ProviderActions())
  await client.requestExecutionPermissions(parameters)
  return sent
}

const ok = (m: Mapped | Refusal): Mapped => {
  if (m._tag !== "Ok") throw new Error(`${m.field}: ${m.message}`)
  return m
}
const refused = (m: Mapped | Refusal) => {
  if (m._tag !== "Refused") throw new Error("expected a refusal")
  return m
}

/** The mapped input through the service's own policy and grant: the caveats and the budget enforcer's terms. */
const held = (m: Mapped, env = environment()) => {
  const tokens = m.input.budgets.map((b) => b.token.symbol === "ETH" ? nativeToken(CHAIN) : USDC)
  const policy = makePolicySet(m.input, tokens, now)
  if (policy._tag !== "Ok") throw new Error(policy.message)
  const terms = grantTermsOf(policy.policy, (a) => a === NATIVE_ADDRESS ? 18 : 6, { delegator: owner, delegate: agent, salt: "0x01" }, now)!
  const grant = makeGrant(env, terms)
  if (grant._tag !== "Ok") throw new Error(grant.message)
  const caveats = grant.delegation.caveats.map((c) => ({ name: enforcerName(env, c.enforcer)!, terms: c.terms as Hex }))
  return { policy: policy.policy, caveats, grant: grant.delegation, last: caveats.at(-1)! }
}
const word = (terms: Hex, at: number) => hexToBigInt(slice(terms, at, at + 32))

describe("each permission type the chain can hold, from the kit's own wire", () => {
  it("erc20-token-periodic: a period budget held by MultiTokenPeriod; expiry, payee and redeemer rules", async () => {
    const [wire] = await kitWire([{
      chainId: CHAIN,
      to: agent,
      expiry: nowS + 30 * DAY,
      payee: [addr(0xb0b)],
      permission: {
        type: "erc20-token-periodic",
        isAdjustmentAllowed: false,
        data: { tokenAddress: USDC.address as Address, periodAmount: 10_000_000n, periodDuration: DAY, startTime: nowS, justification: "subscription" }
      }
    }])
    const m = ok(mapRequest(wire, context()))
    assert.deepStrictEqual(m.input.budgets, [{ token: { symbol: "USDC" }, amount: 10, period: { every: "day", start: now.toISOString() } }])
    assert.deepStrictEqual(m.input.recipientAllowlist, [{ name: "payee 1", address: addr(0xb0b), chainId: CHAIN }])
    assert.deepStrictEqual(m.input.redeemers, { mode: "delegate" })
    assert.strictEqual(m.input.maxActions, MAX_ACTIONS)
    assert.strictEqual(m.input.name, "subscription")
    const h = held(m)
    assert.deepStrictEqual(h.caveats.map((c) => c.name), ["TimestampEnforcer", "RedeemerEnforcer", "ValueLteEnforcer", "AllowedTargetsEnforcer",
      "AllowedMethodsEnforcer", "AllowedCalldataEnforcer", "TransferCapEnforcer", "LimitedCallsEnforcer", "MultiTokenPeriodEnforcer"])
    assert.deepStrictEqual([20, 52, 84].map((at) => word(h.last.terms, at)), [10_000_000n, BigInt(DAY), BigInt(nowS)])
    // TimestampEnforcer: after (16 bytes) ‖ before (16 bytes).
    assert.strictEqual(hexToBigInt(slice(h.caveats[0]!.terms, 16, 32)), BigInt(nowS + 30 * DAY), "the expiry rule is the TimestampEnforcer's bound")
    // The granted request says what the grant holds: the redeemer the service added.
    assert.deepStrictEqual(m.granted.rules, [
      { type: "expiry", data: { timestamp: nowS + 30 * DAY } },
      { type: "redeemer", data: { addresses: [agent] } },
      { type: "payee", data: { addresses: [addr(0xb0b)] } }
    ])
    assert.deepStrictEqual(grantedRequest(h.policy, { delegatee: agent, chainId: CHAIN, decimals: 6 })?.permission.data,
      { tokenAddress: USDC.address, periodAmount: toHex(10_000_000n), periodDuration: DAY, startTime: nowS })
  })

  it("erc20-token-stream: ERC20StreamingEnforcer with the rate, the initial amount and a maximum no larger than can accrue", async () => {
    const [wire] = await kitWire([{
      chainId: CHAIN,
      to: agent,
      expiry: nowS + 1000,
      redeemer: [agent, addr(0xfac)],
      permission: { type: "erc20-token-stream", isAdjustmentAllowed: true, data: { tokenAddress: USDC.address as Address, amountPerSecond: 1_000n, initialAmount: 500_000n, startTime: nowS + 10 } }
    }])
    const m = ok(mapRequest(wire, context()))
    // No maxAmount: what can accrue before the expiry (0.5 + 0.001 × 990 USDC) is all the chain would allow.
    assert.deepStrictEqual(m.input.budgets, [{ token: { symbol: "USDC" }, amount: 1.49, stream: { perSecond: 0.001, initial: 0.5, start: new Date((nowS + 10) * 1000).toISOString() } }])
    assert.deepStrictEqual(m.input.redeemers, { mode: "named", addresses: [addr(0xfac)] })
    const h = held(m)
    assert.strictEqual(h.last.name, "ERC20StreamingEnforcer")
    assert.deepStrictEqual([20, 52, 84, 116].map((at) => word(h.last.terms, at)), [500_000n, 1_490_000n, 1_000n, BigInt(nowS + 10)])
    assert.strictEqual((m.granted.permission.data as { maxAmount: Hex }).maxAmount, toHex(1_490_000n))
    assert.deepStrictEqual(m.adjustments, [], "a maximum left out is a default, not a change")
    // A maximum above what can accrue, adjustment allowed: lowered to it, and the answer says so; one below it is kept.
    const withMax = (maxAmount: string, isAdjustmentAllowed = true) => {
      const w = wire as { permission: { data: object } }
      return { ...(wire as object), permission: { ...w.permission, isAdjustmentAllowed, data: { ...w.permission.data, maxAmount } } }
    }
    const capped = ok(mapRequest(withMax("0x" + (10n ** 30n).toString(16)), context()))
    assert.strictEqual(capped.input.budgets[0]!.amount, 1.49)
    assert.strictEqual((capped.granted.permission.data as { maxAmount: Hex }).maxAmount, toHex(1_490_000n))
    assert.deepStrictEqual(capped.adjustments.map((a) => [a.field, a.requested, a.granted]), [["permission.data.maxAmount", toHex(10n ** 30n), toHex(1_490_000n)]])
    assert.include(capped.adjustments[0]!.reason, "at most 1.49 USDC can accrue before the expiry")
    const kept = ok(mapRequest(withMax("0xf4240"), context()))
    assert.strictEqual(kept.input.budgets[0]!.amount, 1)
    assert.deepStrictEqual(kept.adjustments, [])
    // Adjustment not allowed: the same request is refused naming the field, never lowered silently (issue 43);
    // exactly what can accrue, or less, is held as asked.
    const no = refused(mapRequest(withMax(toHex(4_000_000n), false), context()))
    assert.strictEqual(no.field, "permission.data.maxAmount")
    assert.include(no.message, "permission.data.maxAmount 4 USDC cannot be held exactly: at most 1.49 USDC can accrue")
    assert.include(no.message, "isAdjustmentAllowed is false")
    const exactly = ok(mapRequest(withMax(toHex(1_490_000n), false), context()))
    assert.deepStrictEqual([exactly.input.budgets[0]!.amount, exactly.adjustments], [1.49, []])
    assert.strictEqual(ok(mapRequest(withMax("0xf4240", false), context())).input.budgets[0]!.amount, 1)
  })

  it("erc20-token-allowance: the amount over the grant's life; from a future start, one period from it to the expiry", async () => {
    const request = (startTime?: number) =>
      kitWire([{ chainId: CHAIN, to: agent, expiry: nowS + 7 * DAY, permission: { type: "erc20-token-allowance", isAdjustmentAllowed: false, data: { tokenAddress: USDC.address as Address, allowanceAmount: 25_000_000n, ...(startTime === undefined ? {} : { startTime }) } } }])
    const plain = ok(mapRequest((await request())[0], context()))
    assert.deepStrictEqual(plain.input.budgets, [{ token: { symbol: "USDC" }, amount: 25 }])
    const later = ok(mapRequest((await request(nowS + DAY))[0], context()))
    assert.deepStrictEqual(later.input.budgets, [{ token: { symbol: "USDC" }, amount: 25, period: { seconds: 6 * DAY, start: new Date((nowS + DAY) * 1000).toISOString() } }])
    assert.strictEqual(held(plain).last.name, "MultiTokenPeriodEnforcer")
  })

  it("a period longer than the grant's life is one period to the expiry (the chain allows nothing after it)", async () => {
    const [wire] = await kitWire([{ chainId: CHAIN, to: agent, expiry: nowS + 7 * DAY, permission: { type: "erc20-token-periodic", isAdjustmentAllowed: true, data: { tokenAddress: USDC.address as Address, periodAmount: 1_000_000n, periodDuration: 30 * DAY } } }])
    assert.deepStrictEqual(ok(mapRequest(wire, context())).input.budgets[0]!.period, { every: "week", start: now.toISOString() })
  })

  it("native-token-periodic, -stream and -allowance: the native enforcers, payees as targets", async () => {
    const wires = await kitWire([
      { chainId: CHAIN, to: agent, expiry: nowS + 30 * DAY, payee: [addr(0xb0b)], permission: { type: "native-token-periodic", isAdjustmentAllowed: false, data: { periodAmount: 10n ** 17n, periodDuration: DAY } } },
      { chainId: CHAIN, to: agent, expiry: nowS + 100, permission: { type: "native-token-stream", isAdjustmentAllowed: false, data: { amountPerSecond: 10n ** 12n, maxAmount: 5n * 10n ** 13n } } },
      { chainId: CHAIN, to: agent, permission: { type: "native-token-allowance", isAdjustmentAllowed: true, data: { allowanceAmount: 10n ** 18n } } }
    ])
    const [periodic, stream, allowance] = wires.map((w) => held(ok(mapRequest(w, context()))))
    assert.deepStrictEqual(periodic!.caveats.map((c) => c.name), ["TimestampEnforcer", "RedeemerEnforcer", "ExactCalldataEnforcer", "AllowedTargetsEnforcer",
      "ValueLteEnforcer", "LimitedCallsEnforcer", "NativeTokenPeriodTransferEnforcer"])
    assert.strictEqual(periodic!.caveats.find((c) => c.name === "AllowedTargetsEnforcer")!.terms, addr(0xb0b))
    assert.deepStrictEqual([0, 32].map((at) => word(periodic!.last.terms, at)), [10n ** 17n, BigInt(DAY)])
    assert.strictEqual(stream!.last.name, "NativeTokenStreamingEnforcer")
    assert.deepStrictEqual([0, 32, 64].map((at) => word(stream!.last.terms, at)), [0n, 5n * 10n ** 13n, 10n ** 12n])
    assert.strictEqual(allowance!.last.name, "NativeTokenPeriodTransferEnforcer")
    // No expiry rule: the service's 30 days, reported in the granted rules.
    const m = ok(mapRequest(wires[2], context()))
    assert.deepStrictEqual(m.granted.rules![0], { type: "expiry", data: { timestamp: nowS + 30 * DAY } })
  })
})

describe("what cannot be held exactly is refused, naming the field", () => {
  const base = () => ({
    chainId: toHex(CHAIN),
    to: agent,
    permission: { type: "erc20-token-periodic", isAdjustmentAllowed: false, data: { tokenAddress: USDC.address, periodAmount: "0x989680", periodDuration: DAY } },
    rules: [{ type: "expiry", data: { timestamp: nowS + 30 * DAY } }]
  })
  const withData = (data: object) => ({ ...base(), permission: { ...base().permission, data: { ...base().permission.data, ...data } } })
  const cases: ReadonlyArray<readonly [string, unknown, string, string?]> = [
    ["not an object", "hello", "request"],
    ["a chain id as a number", { ...base(), chainId: CHAIN }, "chainId"],
    ["an unknown chain", { ...base(), chainId: "0x1" }, "chainId", "not served here"],
    ["a delegate address of 19 bytes", { ...base(), to: "0x" + "ab".repeat(19) }, "to", "20 bytes"],
    ["a from of the wrong length", { ...base(), from: "0x1234" }, "from"],
    ["from another account", { ...base(), from: addr(0xbad) }, "from", "not the signer's account"],
    ["no permission", { ...base(), permission: null }, "permission"],
    ["an unknown type", { ...base(), permission: { ...base().permission, type: "nft-lease" } }, "permission.type", "supported: "],
    ["isAdjustmentAllowed missing", { ...base(), permission: { ...base().permission, isAdjustmentAllowed: "yes" } }, "permission.isAdjustmentAllowed"],
    ["an amount as a number", withData({ periodAmount: 10_000_000 }), "permission.data.periodAmount", "hex quantity"],
    ["a negative amount", withData({ periodAmount: "-0x1" }), "permission.data.periodAmount"],
    ["an amount over 256 bits", withData({ periodAmount: "0x1" + "0".repeat(64) }), "permission.data.periodAmount", "256 bits"],
    ["an amount of 0", withData({ periodAmount: "0x0" }), "permission.data.periodAmount", "above 0"],
    ["an amount too precise to hold exactly", withData({ periodAmount: "0x" + "f".repeat(64) }), "permission.data.periodAmount", "exactly"],
    ["a period of 0", withData({ periodDuration: 0 }), "permission.data.periodDuration"],
    ["a fractional period", withData({ periodDuration: 1.5 }), "permission.data.periodDuration"],
    ["a period over 10 years", withData({ periodDuration: 11 * 365 * DAY }), "permission.data.periodDuration"],
    ["a token address of the wrong length", withData({ tokenAddress: "0x1234" }), "permission.data.tokenAddress", "20 bytes"],
    ["an unknown token", withData({ tokenAddress: addr(0xdead) }), "permission.data.tokenAddress", "USDC ("],
    ["a start at the expiry", withData({ startTime: nowS + 30 * DAY }), "permission.data.startTime", "at or after the expiry"],
    ["a start of 0", withData({ startTime: 0 }), "permission.data.startTime"],
    ["an expiry in the past", { ...base(), rules: [{ type: "expiry", data: { timestamp: nowS - 1 } }] }, "rules[0].data.timestamp", "in the past"],
    ["an expiry beyond a year", { ...base(), rules: [{ type: "expiry", data: { timestamp: nowS + 400 * DAY } }] }, "rules[0].data.timestamp", "within a year"],
    ["an expiry as a string", { ...base(), rules: [{ type: "expiry", data: { timestamp: "tomorrow" } }] }, "rules[0].data.timestamp"],
    ["an unknown rule", { ...base(), rules: [{ type: "max-gas", data: {} }] }, "rules[0].type", "expiry, payee, redeemer"],
    ["a rule twice", { ...base(), rules: [{ type: "expiry", data: { timestamp: nowS + DAY } }, { type: "expiry", data: { timestamp: nowS + DAY } }] }, "rules[1].type", "twice"],
    ["a payee of the wrong length", { ...base(), rules: [{ type: "payee", data: { addresses: ["0x12"] } }] }, "rules[0].data.addresses[0]"],
    ["an empty payee list", { ...base(), rules: [{ type: "payee", data: { addresses: [] } }] }, "rules[0].data.addresses"],
    ["two payees of a token", { ...base(), rules: [{ type: "payee", data: { addresses: [addr(0x700), addr(0x701)] } }] }, "rules[0].data.addresses", "one address"],
    ["too many payees of ETH", { ...base(), permission: { type: "native-token-allowance", isAdjustmentAllowed: false, data: { allowanceAmount: "0x1" } }, rules: [{ type: "payee", data: { addresses: Array.from({ length: 33 }, (_, i) => addr(0x700 + i)) } }] }, "rules[0].data.addresses", "at most 32"],
    ["redeemers without the delegate", { ...base(), rules: [{ type: "redeemer", data: { addresses: [addr(0xfac)] } }] }, "rules[0].data.addresses", "must be among the redeemers"],
    ["rules not a list", { ...base(), rules: { type: "expiry" } }, "rules"],
    ["a stream without a rate", { ...base(), permission: { type: "erc20-token-stream", isAdjustmentAllowed: false, data: { tokenAddress: USDC.address, maxAmount: "0x10" } } }, "permission.data.amountPerSecond"],
    ["a stream whose maximum is its initial amount", { ...base(), permission: { type: "erc20-token-stream", isAdjustmentAllowed: false, data: { tokenAddress: USDC.address, amountPerSecond: "0x1", initialAmount: "0x10", maxAmount: "0x10" } } }, "permission.data.maxAmount", "above initialAmount"]
  ]
  for (const [what, request, field, words] of cases) {
    it(what, () => {
      const r = refused(mapRequest(request, context()))
      assert.strictEqual(r.field, field, r.message)
      if (words !== undefined) assert.include(r.message, words)
    })
  }

  it("text PostgreSQL cannot store or a client cannot read back (NUL, an unpaired surrogate, in a value or a key): refused naming it", () => {
    const nul = refused(mapRequest({ ...base(), permission: { ...base().permission, data: { ...base().permission.data, justification: "a\u0000b" } } }, context()))
    assert.strictEqual(nul.field, "permission.data.justification")
    const key = refused(mapRequest({ ...base(), extra: { "\uDC00": 1 } }, context()))
    assert.strictEqual(key.field, "extra.\uDC00")
  })

  it("a long justification is the grant's name cut at 64 characters, never inside a character; hidden characters and line breaks go", () => {
    const m = ok(mapRequest({ ...base(), permission: { ...base().permission, data: { ...base().permission.data, justification: "💰".repeat(100) } } }, context()))
    assert.strictEqual(m.input.name, "💰".repeat(63) + "…")
    const hidden = ok(mapRequest({ ...base(), permission: { ...base().permission, data: { ...base().permission.data, justification: "Cof\u202efee\n\u200bbeans\u2066" } } }, context()))
    assert.strictEqual(hidden.input.name, "Coffee beans")
  })

  it("a type or rule this deployment's enforcers cannot hold: refused with what is supported", () => {
    const env = environment(["ERC20StreamingEnforcer", "AllowedCalldataEnforcer"])
    const stream = { ...base(), permission: { type: "erc20-token-stream", isAdjustmentAllowed: false, data: { tokenAddress: USDC.address, amountPerSecond: "0x1" } } }
    const r = refused(mapRequest(stream, context(env)))
    assert.strictEqual(r.field, "permission.type")
    assert.notProperty(r.supported!, "erc20-token-stream")
    assert.property(r.supported!, "erc20-token-periodic")
    const payee = refused(mapRequest({ ...base(), rules: [{ type: "payee", data: { addresses: [addr(0xb0b)] } }] }, context(env)))
    assert.strictEqual(payee.field, "rules[0].type")
    assert.include(payee.message, "supported rules: expiry, redeemer")
  })
})

describe("what this deployment supports, and what an agent gets back", () => {
  it("getSupportedExecutionPermissions lists a type only where its enforcers are deployed", () => {
    const all = supportedPermissions([{ chainId: CHAIN, delegation: environment() }])
    assert.deepStrictEqual(Object.keys(all).sort(), ["erc20-token-allowance", "erc20-token-periodic", "erc20-token-revocation", "erc20-token-stream",
      "native-token-allowance", "native-token-periodic", "native-token-stream", "token-approval-revocation"])
    assert.deepStrictEqual(all["token-approval-revocation"], { chainIds: ["0x7a69"], ruleTypes: ["expiry", "redeemer"] }, "a revocation grant pays no one: no payee")
    const noRevocation = supportedPermissions([{ chainId: CHAIN, delegation: environment(["ApprovalRevocationEnforcer"]) }])
    assert.notProperty(noRevocation, "erc20-token-revocation")
    assert.notProperty(noRevocation, "token-approval-revocation")
    assert.property(noRevocation, "erc20-token-periodic")
    assert.deepStrictEqual(all["erc20-token-periodic"], { chainIds: ["0x7a69"], ruleTypes: ["expiry", "redeemer", "payee"] })
    const noRedeemer = supportedPermissions([{ chainId: CHAIN, delegation: environment(["RedeemerEnforcer"]) }])
    assert.deepStrictEqual(noRedeemer, {}, "every grant names its redeemers: without RedeemerEnforcer nothing is held")
    const noNativeStream = supportedPermissions([{ chainId: CHAIN, delegation: environment(["NativeTokenStreamingEnforcer"]) }])
    assert.notProperty(noNativeStream, "native-token-stream")
    assert.property(noNativeStream, "native-token-periodic")
  })

  it("the response: the request as granted, the permission context of the signed grant, the DelegationManager, dependencies while counterfactual", async () => {
    const [wire] = await kitWire([{ chainId: CHAIN, to: agent, expiry: nowS + DAY, permission: { type: "erc20-token-periodic", isAdjustmentAllowed: false, data: { tokenAddress: USDC.address as Address, periodAmount: 1_000_000n, periodDuration: 3600 } } }])
    const m = ok(mapRequest(wire, context()))
    const signed = { ...held(m).grant, signature: "0x1234" as Hex }
    const response = permissionResponse(m.granted, { signedGrant: signed, delegationManager: addr(1), account: owner, deployment: { factory: addr(3), factoryData: "0xabcd" } })
    assert.strictEqual(response.from, owner)
    assert.strictEqual(response.delegationManager, addr(1))
    assert.deepStrictEqual(response.dependencies, [{ factory: addr(3), factoryData: "0xabcd" }])
    const [decoded] = decodeDelegations(response.context)
    assert.strictEqual(decoded!.delegate.toLowerCase(), agent)
    assert.strictEqual(decoded!.signature, "0x1234")
    assert.deepStrictEqual(permissionResponse(m.granted, { signedGrant: signed, delegationManager: addr(1), account: owner }).dependencies, [])
  })

  it("a stored grant in the standard's shape only when the standard states its limits exactly", () => {
    const policy = (extra: object) => {
      const r = makePolicySet({ chainId: CHAIN, budgets: [{ token: { symbol: "USDC" }, amount: 5 }], maxActions: MAX_ACTIONS, ...extra }, [USDC], now)
      if (r._tag !== "Ok") throw new Error(r.message)
      return r.policy
    }
    const g = (p: ReturnType<typeof policy>) => grantedRequest(p, { delegatee: agent, chainId: CHAIN, decimals: 6 })
    assert.strictEqual(g(policy({}))?.permission.type, "erc20-token-allowance")
    assert.isUndefined(g(policy({ maxActions: 10 })), "a count the standard cannot state")
    assert.isUndefined(g(policy({ perActionMax: { token: { symbol: "USDC" }, amount: 1 } })), "a per-action maximum the standard cannot state")
    assert.isUndefined(g(policy({ redeemers: { mode: "redelegation" } }))?.rules?.find((r) => r.type === "redeemer"))
  })
})

describe("the revocation types: a grant that may only set approvals back to none", () => {
  const none = { erc20Approve: false, erc721Approve: false, erc721SetApprovalForAll: false, permit2Approve: false, permit2Lockdown: false, permit2InvalidateNonces: false }
  /** The mapped input through the service's own revocation policy and grant. */
  const heldRevocation = (m: Mapped, env = environment()) => {
    const policy = makeRevocationPolicy({ ...m.input, revocation: m.input.revocation! }, nativeToken(CHAIN), now)
    if (policy._tag !== "Ok") throw new Error(policy.message)
    const grant = makeRevocationGrant(env, revocationTermsOf(policy.policy, policy.policy.revocation!, { delegator: owner, delegate: agent, salt: "0x01" }))
    if (grant._tag !== "Ok") throw new Error(grant.message)
    const caveats = grant.delegation.caveats.map((c) => ({ name: enforcerName(env, c.enforcer)!, terms: c.terms as Hex }))
    return { policy: policy.policy, caveats, grant }
  }

  it("erc20-token-revocation from the kit's wire: no budget, ApprovalRevocationEnforcer with its erc20Approve bit only", async () => {
    const [wire] = await kitWire([{
      chainId: CHAIN,
      to: agent,
      expiry: nowS + 7 * DAY,
      permission: { type: "erc20-token-revocation", isAdjustmentAllowed: false, data: { justification: "clean up my allowances" } }
    }])
    const m = ok(mapRequest(wire, context()))
    assert.deepStrictEqual(m.input.budgets, [])
    assert.deepStrictEqual(m.input.revocation, { ...none, erc20Approve: true })
    assert.deepStrictEqual([m.input.name, m.input.maxActions, m.input.expiresAt], ["clean up my allowances", MAX_ACTIONS, new Date((nowS + 7 * DAY) * 1000).toISOString()])
    assert.deepStrictEqual(m.input.redeemers, { mode: "delegate" })
    const h = heldRevocation(m)
    assert.deepStrictEqual(h.caveats.map((c) => c.name), ["TimestampEnforcer", "RedeemerEnforcer", "ApprovalRevocationEnforcer", "LimitedCallsEnforcer"])
    assert.strictEqual(h.caveats[2]!.terms, "0x01", "bit 0: ERC-20 approve(spender, 0)")
    assert.deepStrictEqual(h.grant.scope, { tokens: [], recipients: [] }, "no caveat takes args: the context redeems as it is")
    assert.deepStrictEqual([h.policy.budgets, h.policy.perActionMax.amount, h.policy.recipientAllowlist], [[], 0, []])
    assert.deepStrictEqual(m.granted.permission, { type: "erc20-token-revocation", isAdjustmentAllowed: false, data: { justification: "clean up my allowances" } })
    assert.deepStrictEqual(m.granted.rules, [{ type: "expiry", data: { timestamp: nowS + 7 * DAY } }, { type: "redeemer", data: { addresses: [agent] } }])
    // Listed back as what it holds.
    assert.deepStrictEqual(grantedRequest(h.policy, { delegatee: agent, chainId: CHAIN, decimals: 18 }), {
      chainId: toHex(CHAIN),
      to: agent,
      permission: { type: "erc20-token-revocation", isAdjustmentAllowed: false, data: {} },
      rules: [{ type: "expiry", data: { timestamp: nowS + 7 * DAY } }, { type: "redeemer", data: { addresses: [agent] } }]
    })
    const summary = summaryOf(h.policy, agent, [])
    assert.include(summary, "may only revoke token approvals this account gave: set an ERC-20 allowance back to 0 (approve(spender, 0))")
    assert.include(summary, "It cannot move any token or ETH, nor give or raise an approval.")
    assert.notInclude(summary, "ERC-721")
  })

  it("token-approval-revocation: its primitives are the enforcer's bitmask; named redeemers; listed back with its primitives", async () => {
    const [wire] = await kitWire([{
      chainId: CHAIN,
      to: agent,
      expiry: nowS + DAY,
      redeemer: [agent, addr(0xfac)],
      permission: { type: "token-approval-revocation", isAdjustmentAllowed: false, data: { ...none, erc721Approve: true, erc721SetApprovalForAll: true, permit2Lockdown: true } }
    }])
    const m = ok(mapRequest(wire, context()))
    assert.deepStrictEqual(m.input.revocation, { ...none, erc721Approve: true, erc721SetApprovalForAll: true, permit2Lockdown: true })
    assert.deepStrictEqual(m.input.redeemers, { mode: "named", addresses: [addr(0xfac)] })
    const h = heldRevocation(m)
    assert.strictEqual(h.caveats[2]!.terms, "0x16", "bits 1, 2 and 4")
    assert.strictEqual(h.caveats[1]!.name, "RedeemerEnforcer")
    const listed = grantedRequest(h.policy, { delegatee: agent, chainId: CHAIN, decimals: 18 })
    assert.deepStrictEqual(listed?.permission, { type: "token-approval-revocation", isAdjustmentAllowed: false, data: { ...none, erc721Approve: true, erc721SetApprovalForAll: true, permit2Lockdown: true } })
    assert.deepStrictEqual(listed?.rules?.[1], { type: "redeemer", data: { addresses: [agent, addr(0xfac)] } })
    const summary = summaryOf(h.policy, agent, [])
    assert.include(summary, "clear an ERC-721 token's approval, withdraw an ERC-721 operator's approval for all (setApprovalForAll false) or lock down Permit2 allowances")
    assert.notInclude(summary, "ERC-20 allowance")
    // A count below the service's ceiling is not what the standard states: not listed in its shape.
    assert.isUndefined(grantedRequest({ ...h.policy, maxActions: 5 }, { delegatee: agent, chainId: CHAIN, decimals: 18 }))
  })

  it("the service's own action endpoint never moves tokens for it", () => {
    const m = ok(mapRequest({ chainId: toHex(CHAIN), to: agent, permission: { type: "erc20-token-revocation", isAdjustmentAllowed: false, data: {} } }, context()))
    const { policy } = heldRevocation(m)
    const verdict = evaluate(policy, () => 6, { status: "active", accountFrozen: false, usedUnits: new Map(), actionsUsed: 0 }, { recipient: addr(0xb0b), amount: 1, token: "USDC" }, now)
    assert.strictEqual(verdict._tag, "Declined")
  })

  const revocation = (data: object, rules: ReadonlyArray<object> = []) => ({
    chainId: toHex(CHAIN),
    to: agent,
    permission: { type: "token-approval-revocation", isAdjustmentAllowed: false, data: { ...none, erc20Approve: true, ...data } },
    rules
  })
  const cases: ReadonlyArray<readonly [string, unknown, string, string?]> = [
    ["erc20-token-revocation with a token (the type has none: it would revoke any token's approvals)", {
      chainId: toHex(CHAIN), to: agent, permission: { type: "erc20-token-revocation", isAdjustmentAllowed: false, data: { tokenAddress: USDC.address } }
    }, "permission.data.tokenAddress", "not a field of erc20-token-revocation"],
    ["a primitive missing", revocation({ erc721Approve: undefined }), "permission.data.erc721Approve", "boolean"],
    ["a primitive as a string", revocation({ permit2Approve: "false" }), "permission.data.permit2Approve", "boolean"],
    ["no primitive allowed", revocation({ erc20Approve: false }), "permission.data", "at least one of erc20Approve"],
    ["an unknown field", revocation({ spender: addr(0x5) }), "permission.data.spender", "not a field of token-approval-revocation"],
    ["a payee rule (a revocation pays no one)", revocation({}, [{ type: "payee", data: { addresses: [addr(0xb0b)] } }]), "rules[0].type", "supported rules: expiry, redeemer"],
    ["redeemers without the delegate", revocation({}, [{ type: "redeemer", data: { addresses: [addr(0xfac)] } }]), "rules[0].data.addresses", "must be among the redeemers"],
    ["an expiry in the past", revocation({}, [{ type: "expiry", data: { timestamp: nowS - 1 } }]), "rules[0].data.timestamp", "in the past"],
    ["isAdjustmentAllowed missing", { ...revocation({}), permission: { type: "erc20-token-revocation", data: {} } }, "permission.isAdjustmentAllowed"]
  ]
  for (const [what, request, field, words] of cases) {
    it(`refused: ${what}`, () => {
      const r = refused(mapRequest(request, context()))
      assert.strictEqual(r.field, field, r.message)
      if (words !== undefined) assert.include(r.message, words)
    })
  }

  it("refused where ApprovalRevocationEnforcer is not deployed, listing what is supported", () => {
    const r = refused(mapRequest(revocation({}), context(environment(["ApprovalRevocationEnforcer"]))))
    assert.strictEqual(r.field, "permission.type")
    assert.notProperty(r.supported!, "token-approval-revocation")
    assert.property(r.supported!, "erc20-token-periodic")
  })
})
