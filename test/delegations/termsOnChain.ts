/**
 * An independent reader of what the owner signs: each caveat of a delegation's typed data decoded
 * by its enforcer's own `getTermsInfo` view, called on the local chain (MetaMask's enforcers), by
 * the kit's decoder where the enforcer has no view (ApprovalRevocationEnforcer, LogicalOrWrapper's
 * groups), and for this project's enforcers (TransferCapEnforcer, ApprovalEnforcer) by their
 * Solidity's documented byte layout, written here again. Nothing of the service's own decoding
 * (src/delegations/SignedTerms.ts) is used. Then the checks a summary must pass against it.
 */
import * as abis from "@metamask/delegation-abis"
import { decodeApprovalRevocationTerms, decodeLogicalOrWrapperTerms } from "@metamask/delegation-core"
import { assert } from "@effect/vitest"
import { type Address, createPublicClient, formatUnits, type Hex, hexToBigInt, http, slice, size } from "viem"
import { NATIVE_ADDRESS } from "../../src/tokens/Native.ts"
import { testNetwork } from "../support/TestChain.ts"

export interface OnChainTerms {
  readonly delegate: Address
  expiry?: bigint
  notBefore?: bigint
  redeemers?: ReadonlyArray<Address>
  valueLte?: bigint
  targets?: ReadonlyArray<Address>
  methods?: ReadonlyArray<Hex>
  recipients: Array<Address>
  caps: Array<{ token: Address; units: bigint }>
  limit?: bigint
  periods: Array<{ token: Address; amount: bigint; duration: bigint; start: bigint }>
  stream?: { token: Address; initial: bigint; max: bigint; perSecond: bigint; start: bigint }
  exactCalldata?: Hex
  approval?: { required: number; approvers: ReadonlyArray<Address>; thresholds: ReadonlyArray<{ token: Address; units: bigint }> }
  revocation?: Record<string, boolean>
}

type SignedTypedData = {
  readonly message: { readonly delegate: string; readonly caveats: ReadonlyArray<{ readonly enforcer: string; readonly terms: string }> }
}

const lower = (a: string) => a.toLowerCase() as Address

/** The typed data's caveats read by the enforcers themselves; every caveat must be one this reader knows. */
export const readOnChain = async (typedData: SignedTypedData, enforcers: Readonly<Record<string, string>>): Promise<OnChainTerms> => {
  const client = createPublicClient({ transport: http(testNetwork().rpcUrl) })
  const nameOf = (a: string) => Object.entries(enforcers).find(([, x]) => lower(x) === lower(a))?.[0]
  const view = (name: string, address: string, fn: string, args: ReadonlyArray<unknown>): Promise<any> =>
    client.readContract({ address: address as Address, abi: (abis as Record<string, unknown>)[name] as never, functionName: fn as never, args: args as never })
  const out: OnChainTerms = { delegate: lower(typedData.message.delegate), recipients: [], caps: [], periods: [] }
  for (const c of typedData.message.caveats) {
    const name = nameOf(c.enforcer)
    const terms = c.terms as Hex
    switch (name) {
      case "TimestampEnforcer": {
        const [after, before] = await view(name, c.enforcer, "getTermsInfo", [terms])
        out.notBefore = after
        out.expiry = before
        break
      }
      case "RedeemerEnforcer":
        out.redeemers = ((await view(name, c.enforcer, "getTermsInfo", [terms])) as ReadonlyArray<string>).map(lower)
        break
      case "ValueLteEnforcer":
        out.valueLte = await view(name, c.enforcer, "getTermsInfo", [terms])
        break
      case "AllowedTargetsEnforcer":
        out.targets = ((await view(name, c.enforcer, "getTermsInfo", [terms])) as ReadonlyArray<string>).map(lower)
        break
      case "AllowedMethodsEnforcer":
        out.methods = ((await view(name, c.enforcer, "getTermsInfo", [terms])) as ReadonlyArray<Hex>).map((m) => m.toLowerCase() as Hex)
        break
      case "AllowedCalldataEnforcer":
        out.recipients.push(await recipientOf(view, c.enforcer, terms))
        break
      case "LogicalOrWrapperEnforcer":
        for (const group of decodeLogicalOrWrapperTerms(terms).caveatGroups) {
          assert.lengthOf(group, 1)
          out.recipients.push(await recipientOf(view, group[0]!.enforcer, group[0]!.terms as Hex))
        }
        break
      case "TransferCapEnforcer":
        // Enforcers.sol: token(20) ‖ maxAmount(32) per token.
        assert.strictEqual(size(terms) % 52, 0)
        for (let at = 0; at < size(terms); at += 52) out.caps.push({ token: lower(slice(terms, at, at + 20)), units: hexToBigInt(slice(terms, at + 20, at + 52)) })
        break
      case "LimitedCallsEnforcer":
        out.limit = await view(name, c.enforcer, "getTermsInfo", [terms])
        break
      case "MultiTokenPeriodEnforcer": {
        const [tokens, amounts, durations, starts] = await view(name, c.enforcer, "getAllTermsInfo", [terms])
        for (const [i, token] of (tokens as ReadonlyArray<string>).entries()) {
          out.periods.push({ token: lower(token), amount: amounts[i], duration: durations[i], start: starts[i] })
        }
        break
      }
      case "ERC20StreamingEnforcer": {
        const [token, initial, max, perSecond, start] = await view(name, c.enforcer, "getTermsInfo", [terms])
        out.stream = { token: lower(token), initial, max, perSecond, start }
        break
      }
      case "ExactCalldataEnforcer":
        out.exactCalldata = await view(name, c.enforcer, "getTermsInfo", [terms])
        break
      case "NativeTokenPeriodTransferEnforcer": {
        const [amount, duration, start] = await view(name, c.enforcer, "getTermsInfo", [terms])
        out.periods.push({ token: NATIVE_ADDRESS as Address, amount, duration, start })
        break
      }
      case "NativeTokenStreamingEnforcer": {
        const [initial, max, perSecond, start] = await view(name, c.enforcer, "getTermsInfo", [terms])
        out.stream = { token: NATIVE_ADDRESS as Address, initial, max, perSecond, start }
        break
      }
      case "ApprovalEnforcer": {
        // Approvals.sol: m(1) ‖ n(1) ‖ approver(20) × n ‖ (token(20) ‖ threshold(32)) per token.
        const m = Number(hexToBigInt(slice(terms, 0, 1)))
        const n = Number(hexToBigInt(slice(terms, 1, 2)))
        const approvers = Array.from({ length: n }, (_, i) => lower(slice(terms, 2 + 20 * i, 22 + 20 * i)))
        const thresholds: Array<{ token: Address; units: bigint }> = []
        for (let at = 2 + 20 * n; at < size(terms); at += 52) {
          thresholds.push({ token: lower(slice(terms, at, at + 20)), units: hexToBigInt(slice(terms, at + 20, at + 52)) })
        }
        out.approval = { required: m, approvers, thresholds }
        break
      }
      case "ApprovalRevocationEnforcer":
        out.revocation = { ...decodeApprovalRevocationTerms(terms) }
        break
      default:
        throw new Error(`a caveat this reader does not know: ${c.enforcer} (${name ?? "not a deployment enforcer"})`)
    }
  }
  return out
}

const recipientOf = async (
  view: (name: string, address: string, fn: string, args: ReadonlyArray<unknown>) => Promise<readonly [bigint, Hex]>,
  enforcer: string,
  terms: Hex
): Promise<Address> => {
  const [start, value] = await view("AllowedCalldataEnforcer", enforcer, "getTermsInfo", [terms])
  assert.strictEqual(start, 4n, "the transfer's recipient word")
  return lower(slice(value, 12, 32))
}

export interface TokenFacts {
  readonly address: string
  readonly symbol: string
  readonly decimals: number
}

const iso = (s: bigint) => new Date(Number(s) * 1000).toISOString()
const utc = (s: bigint) => s % 60n === 0n ? `${iso(s).slice(0, 10)} ${iso(s).slice(11, 16)} UTC` : `${iso(s).slice(0, 10)} ${iso(s).slice(11, 19)} UTC`
const utcSeconds = (s: bigint) => `${iso(s).slice(0, 10)} ${iso(s).slice(11, 19)} UTC`

/** Where the summary's own words end and the requester's begin (or its end). */
export const limitsPart = (summary: string) => {
  const cut = [" Named by the requester:", " Recipient names given by the requester:"].map((m) => summary.indexOf(m)).filter((i) => i >= 0)
  return cut.length === 0 ? summary : summary.slice(0, Math.min(...cut))
}

/** Every figure in the limits (addresses, instants and the fixed names with digits left out). */
export const figuresIn = (text: string): ReadonlyArray<string> =>
  text
    .replace(/0x[0-9a-fA-F]+/g, " ")
    .replace(/\d{4}-\d{2}-\d{2} \d{2}:\d{2}(:\d{2})? UTC/g, " ")
    .replace(/transfer\(address,uint256\)|ERC-20|ERC-721|EIP-712|30-day|approve\(spender, 0\)|Permit2/g, " ")
    .match(/\d+(\.\d+)?/g) ?? []

/**
 * The summary states exactly what `onChain` holds: every figure there is a decoded one, and every
 * decoded limit is stated in its clause. `tokens`: the deployment's tokens (symbol, decimals).
 */
export const assertSummaryMatches = (summary: string, onChain: OnChainTerms, tokens: ReadonlyArray<TokenFacts>) => {
  const tokenOf = (a: string) => tokens.find((t) => lower(t.address) === lower(a))!
  const amount = (token: string, units: bigint) => `${formatUnits(units, tokenOf(token).decimals)} ${tokenOf(token).symbol}`
  const limits = limitsPart(summary)
  assert.isTrue(limits.startsWith(`The delegate ${onChain.delegate} may `), `nothing stands before the limits: ${summary.slice(0, 120)}`)

  const allowed = new Set<string>()
  const allow = (...xs: ReadonlyArray<string | bigint | number>) => xs.forEach((x) => allowed.add(String(x)))
  const includes = (part: string) => assert.include(limits, part)

  assert.isDefined(onChain.expiry)
  includes(`until ${utc(onChain.expiry!)}`)
  if (onChain.notBefore !== undefined && onChain.notBefore > 0n) includes(`from ${utc(onChain.notBefore)}`)
  if (onChain.limit !== undefined) {
    includes(`in at most ${onChain.limit} action`)
    allow(onChain.limit)
  }
  for (const r of onChain.redeemers ?? []) if (r !== onChain.delegate) includes(r)
  if (onChain.redeemers === undefined && onChain.revocation === undefined) includes("The delegate may pass it on")
  if (onChain.redeemers !== undefined && onChain.redeemers.length === 1) includes("Only the delegate itself may redeem it")

  if (onChain.revocation !== undefined) {
    includes("may only revoke token approvals this account gave")
    const words: Record<string, string> = {
      erc20Approve: "set an ERC-20 allowance back to 0",
      erc721Approve: "clear an ERC-721 token's approval",
      erc721SetApprovalForAll: "withdraw an ERC-721 operator's approval for all",
      permit2Approve: "set a Permit2 allowance back to 0",
      permit2Lockdown: "lock down Permit2 allowances",
      permit2InvalidateNonces: "invalidate Permit2 nonces"
    }
    for (const [k, on] of Object.entries(onChain.revocation)) (on ? assert.include : assert.notInclude)(limits, words[k]!)
    allow(0)
  }

  for (const p of onChain.periods) {
    const whole = onChain.expiry !== undefined && p.start + p.duration >= onChain.expiry
    if (whole) {
      assert.match(limits, new RegExp(`at most [^,]*${amount(p.token, p.amount).replace(".", "\\.")}[^,]* in total`))
    } else {
      const each = p.duration === 86_400n ? "per day" : p.duration === 604_800n ? "per week" : p.duration === 2_592_000n ? "per 30-day month" : `per ${p.duration} seconds`
      includes(`at most ${amount(p.token, p.amount)} ${each} (periods of ${p.duration} s from ${utcSeconds(p.start)};`)
      allow(p.duration)
    }
    allow(formatUnits(p.amount, tokenOf(p.token).decimals))
  }
  if (onChain.stream !== undefined) {
    const s = onChain.stream
    includes(`at most ${amount(s.token, s.max)} in total as a stream (`)
    includes(`${s.initial > 0n ? `${amount(s.token, s.initial)} at once, then ` : "("}${amount(s.token, s.perSecond)} per second from ${utcSeconds(s.start)}`)
    allow(...[s.max, s.initial, s.perSecond].map((u) => formatUnits(u, tokenOf(s.token).decimals)))
  }

  const native = onChain.exactCalldata !== undefined
  if (native) {
    assert.strictEqual(onChain.exactCalldata, "0x")
    includes("It may only send ETH, with no call data")
    // ValueLte is the per-action maximum of a native grant; its allowed targets are the recipients.
    includes(`at most ${amount(NATIVE_ADDRESS, onChain.valueLte!)} per action`)
    allow(formatUnits(onChain.valueLte!, 18))
    for (const r of onChain.targets ?? []) includes(r)
    if ((onChain.targets ?? []).length === 0) includes("to any recipient")
  } else if (onChain.revocation === undefined) {
    assert.strictEqual(onChain.valueLte, 0n)
    includes("with no ETH attached")
    for (const t of onChain.targets ?? []) includes(`transfer(address,uint256) on ${tokenOf(t).symbol} (${t})`)
    assert.deepStrictEqual(onChain.methods, ["0xa9059cbb"])
    const perAction = /, at most (.*?) per action/.exec(limits)?.[1] ?? ""
    for (const c of onChain.caps) {
      assert.include(perAction, amount(c.token, c.units))
      allow(formatUnits(c.units, tokenOf(c.token).decimals))
    }
    if (onChain.recipients.length === 0) includes("to any recipient")
    else includes(`only to ${onChain.recipients.length === 1 ? onChain.recipients[0] : onChain.recipients.slice(0, -1).join(", ") + " and " + onChain.recipients.at(-1)}`)
  }
  if (onChain.approval !== undefined) {
    const a = onChain.approval
    const rule = limits.toLowerCase()
    for (const t of a.thresholds) {
      assert.include(rule, t.units === 0n ? `any ${tokenOf(t.token).symbol.toLowerCase()} transfer` : `a transfer of more than ${amount(t.token, t.units).toLowerCase()}`)
      allow(formatUnits(t.units, tokenOf(t.token).decimals))
    }
    // A budget token with no threshold: every transfer of it needs the approvals.
    for (const p of onChain.periods) {
      if (!a.thresholds.some((t) => t.token === p.token)) assert.include(rule, `any ${tokenOf(p.token).symbol.toLowerCase()} transfer`)
    }
    for (const approver of a.approvers) includes(approver)
    if (a.approvers.length > 1 && a.required < a.approvers.length) {
      includes(`the approvals of ${a.required} of`)
      allow(a.required)
    }
  } else {
    assert.notInclude(limits, "approval of")
  }

  for (const figure of figuresIn(limits)) assert.isTrue(allowed.has(figure), `the figure ${figure} is in no caveat: ${limits}`)
}
