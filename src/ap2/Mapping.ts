/**
 * An AP2 open Payment Mandate (already valid against AP2's schema: Schemas.ts) as the grant the
 * chain holds: each constraint becomes a limit the build turns into a caveat, or a problem naming
 * it. Every problem is collected (never the first only), and a constraint is never dropped: what the
 * chain cannot hold is refused. Pure. Which constraint holds how, and why: docs/ap2.md and
 * docs/decisions.md ("AP2 open Payment Mandates in").
 */
import type { BuildInput } from "../delegations/Enable.ts"
import { PERIOD_SECONDS } from "../delegations/Periods.ts"
import { POLICY_DEFAULTS, toUnits } from "../delegations/Policy.ts"
import { cleanOutsideText } from "../domain/OutsideText.ts"

export interface Merchant {
  readonly id: string
  readonly name: string
  readonly website?: string
}

/** The mandate's claims as AP2's schema defines them (only what the mapping reads is typed). */
export interface OpenPaymentMandate {
  readonly vct: string
  readonly constraints: ReadonlyArray<{ readonly type: string } & Record<string, unknown>>
  readonly cnf: object
  readonly payee?: Merchant
  readonly payment_amount?: object
  readonly payment_instrument?: object
  readonly pisp?: object
  readonly execution_date?: string
  readonly exp?: number
}

export interface Problem {
  /** The constraint or claim (`payment.amount_range`, `exp`, ...). */
  readonly constraint: string
  /** Where it is in the mandate (`mandate.constraints[2].min`). */
  readonly path: string
  readonly message: string
}

export interface MappingContext {
  readonly now: Date
  readonly chainId: number
  readonly delegateeAddress: string
  /** The chain's tokens by symbol (the service's registry). */
  readonly tokens: ReadonlyArray<{ readonly symbol: string; readonly decimals: number }>
  /** The token the owner pays the mandate's currency in (default: the first of the currency's). */
  readonly token?: string | undefined
  /** An earlier end than the mandate's own (never a later one). */
  readonly expiresAt?: string | undefined
  readonly name?: string | undefined
  readonly accountId?: string | undefined
  readonly minLifetimeMs: number
}

export type Mapped =
  | { readonly _tag: "Ok"; readonly input: Omit<BuildInput, "mandate">; readonly mapped: ReadonlyArray<string> }
  | { readonly _tag: "Refused"; readonly problems: ReadonlyArray<Problem> }

/**
 * ISO 4217 currencies this service pays, each with its minor unit digits and the stablecoins that
 * count 1:1 in it (by registry symbol). A currency not here is not a token here: refused.
 */
export const CURRENCIES: Readonly<Record<string, { readonly minorDigits: number; readonly tokens: ReadonlyArray<string> }>> = {
  USD: { minorDigits: 2, tokens: ["USDC", "USDT", "DAI"] },
  EUR: { minorDigits: 2, tokens: ["EURC"] }
}

/** AP2 recurrences of a fixed length (the chain's periods are fixed); calendar ones are refused. */
const FIXED_FREQUENCIES: Readonly<Record<string, { readonly every?: "day" | "week"; readonly seconds: number; readonly words: string }>> = {
  DAILY: { every: "day", seconds: PERIOD_SECONDS.day, words: "per day" },
  WEEKLY: { every: "week", seconds: PERIOD_SECONDS.week, words: "per week" },
  BIWEEKLY: { seconds: 2 * PERIOD_SECONDS.week, words: "per 14 days" }
}
const CALENDAR_FREQUENCIES = ["MONTHLY", "QUARTERLY", "ANNUALLY"]

const ADDRESS = /^0x[0-9a-fA-F]{40}$/
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/
const MAX_ACTIONS = 1_000_000
/** 9999-12-31T23:59:59Z: the last instant an ISO 8601 date of four digits names. */
const MAX_UNIX_SECONDS = 253_402_300_799

/** An ISO 8601 date (a UTC day) or date-time (with its offset) as the window it names, in unix seconds. */
const instantOf = (text: string, end: boolean): number | undefined => {
  const day = DATE.exec(text)
  if (day !== null) {
    const start = Date.UTC(Number(day[1]), Number(day[2]) - 1, Number(day[3]))
    if (Number.isNaN(start) || new Date(start).toISOString().slice(0, 10) !== text) return undefined
    // A date is the whole UTC day: its end is the next day's start.
    return start / 1000 + (end ? 86_400 : 0)
  }
  if (!DATE_TIME.test(text)) return undefined
  const ms = Date.parse(text)
  if (Number.isNaN(ms)) return undefined
  // The chain counts whole seconds: "at or before t" is "before floor(t) + 1"; "at or after t" is "from ceil(t)".
  return end ? Math.floor(ms / 1000) + 1 : Math.ceil(ms / 1000)
}

/** `units` base units as a decimal number of major units (exact for the amounts a mandate names). */
const majorOf = (units: bigint, digits: number): number => {
  const s = units.toString().padStart(digits + 1, "0")
  return Number(digits === 0 ? s : `${s.slice(0, -digits)}.${s.slice(-digits)}`)
}

const iso = (seconds: number) => new Date(seconds * 1000).toISOString()

/** The mandate as a grant build's input, or every problem that keeps the chain from holding it. */
export const mapMandate = (mandate: OpenPaymentMandate, ctx: MappingContext): Mapped => {
  const problems: Array<Problem> = []
  const refuse = (constraint: string, path: string, message: string) => problems.push({ constraint, path, message })
  const nowSeconds = Math.floor(ctx.now.getTime() / 1000)
  const mapped: Array<string> = []

  // One of each constraint type: two would be an intersection the mandate should state itself.
  const byType = new Map<string, { readonly index: number; readonly c: Record<string, unknown> }>()
  mandate.constraints.forEach((c, index) => {
    if (byType.has(c.type)) refuse(c.type, `mandate.constraints[${index}]`, `${c.type} appears more than once: state one range`)
    else byType.set(c.type, { index, c })
  })
  const at = (type: string) => byType.get(type)
  const path = (type: string, field?: string) => `mandate.constraints[${at(type)!.index}]${field === undefined ? "" : `.${field}`}`

  // Claims and constraints no caveat can hold: each refused by name.
  const offChain: ReadonlyArray<readonly [string, string]> = [
    ["payment.allowed_payment_instruments", "a payment instrument (a card, a bank account) is not something a token transfer names"],
    ["payment.allowed_pisps", "a payment initiation service provider is not part of a token transfer"]
  ]
  for (const [type, why] of offChain) if (at(type) !== undefined) refuse(type, path(type), `${type} cannot be held on chain: ${why}`)
  if (mandate.payment_instrument !== undefined) {
    refuse("payment_instrument", "mandate.payment_instrument", "payment_instrument cannot be held on chain: a token transfer names no payment instrument")
  }
  if (mandate.pisp !== undefined) refuse("pisp", "mandate.pisp", "pisp cannot be held on chain: a token transfer has no payment initiation service provider")
  if (mandate.payment_amount !== undefined) {
    refuse("payment_amount", "mandate.payment_amount",
      "payment_amount (an exact pre-set amount) cannot be held on chain: the chain caps an amount, it cannot require one; use payment.amount_range")
  }

  // The currency: one for the whole mandate, paid in a stablecoin of the registry counted 1:1.
  const range = at("payment.amount_range")?.c as { currency: string; max: number; min?: number } | undefined
  const budget = at("payment.budget")?.c as { currency: string; max: number } | undefined
  const recurrence = at("payment.agent_recurrence")?.c as { frequency: string; max_occurrences?: number } | undefined
  const currencies = [
    ...(range === undefined ? [] : [{ type: "payment.amount_range", code: range.currency }]),
    ...(budget === undefined ? [] : [{ type: "payment.budget", code: budget.currency }])
  ]
  const code = currencies[0]?.code
  let token: { readonly symbol: string; readonly decimals: number } | undefined
  let minorDigits = 2
  for (const c of currencies.slice(1)) {
    if (c.code !== code) refuse(c.type, path(c.type, "currency"), `${c.type} is in ${c.code} but ${currencies[0]!.type} in ${code}: one grant pays one currency`)
  }
  if (code !== undefined) {
    // Own keys only: a code such as "__proto__" or "toString" names the object's prototype, not a currency.
    const currency = Object.hasOwn(CURRENCIES, code) ? CURRENCIES[code] : undefined
    const first = currencies[0]!
    if (currency === undefined) {
      refuse(first.type, path(first.type, "currency"),
        `the currency ${JSON.stringify(cleanOutsideText(code, 16))} is not a token here: this service pays ${Object.keys(CURRENCIES).join(", ")} in stablecoins of its registry`)
    } else {
      minorDigits = currency.minorDigits
      const available = currency.tokens.flatMap((s) => ctx.tokens.filter((t) => t.symbol.toUpperCase() === s))
      const chosen = ctx.token === undefined
        ? available[0]
        : available.find((t) => t.symbol.toUpperCase() === ctx.token!.toUpperCase())
      if (chosen === undefined) {
        refuse(first.type, path(first.type, "currency"), ctx.token === undefined
          ? `no stablecoin of ${code} is known on chain ${ctx.chainId} (${currency.tokens.join(", ")})`
          : `token ${JSON.stringify(cleanOutsideText(ctx.token, 16))} is not a ${code} stablecoin on chain ${ctx.chainId}; known: ${available.map((t) => t.symbol).join(", ") || "none"}`)
      } else if (chosen.decimals < minorDigits) {
        refuse(first.type, path(first.type, "currency"), `${chosen.symbol} has fewer decimals than ${code}'s minor unit`)
      } else token = chosen
    }
  }

  // Amounts: the range in minor units, the budget in major units; both exact in the token.
  let perActionUnits: bigint | undefined
  if (range === undefined) {
    if (recurrence !== undefined) refuse("payment.agent_recurrence", path("payment.agent_recurrence"), "payment.agent_recurrence requires payment.amount_range (AP2)")
  } else {
    if (range.max <= 0) refuse("payment.amount_range", path("payment.amount_range", "max"), "payment.amount_range.max must be positive: a grant that can pay nothing is not a grant")
    else perActionUnits = BigInt(range.max)
    if (range.min !== undefined && range.min < 0) refuse("payment.amount_range", path("payment.amount_range", "min"), "payment.amount_range.min cannot be negative")
    if (range.min !== undefined && range.min > 0) {
      refuse("payment.amount_range", path("payment.amount_range", "min"),
        "payment.amount_range.min above 0 cannot be held on chain: no enforcer refuses a transfer for being too small")
    }
  }
  let budgetUnits: bigint | undefined
  if (budget === undefined) {
    if (recurrence !== undefined) refuse("payment.agent_recurrence", path("payment.agent_recurrence"), "payment.agent_recurrence requires payment.budget (AP2)")
  } else {
    const text = Number.isFinite(budget.max) ? budget.max.toString() : ""
    const match = /^(\d+)(?:\.(\d+))?$/.exec(text)
    if (budget.max <= 0 || match === null) {
      refuse("payment.budget", path("payment.budget", "max"), "payment.budget.max must be a positive amount in major units")
    } else if ((match[2] ?? "").length > minorDigits) {
      refuse("payment.budget", path("payment.budget", "max"), `payment.budget.max ${text} is finer than the currency's minor unit (${minorDigits} decimals)`)
    } else {
      budgetUnits = BigInt(match[1]!) * 10n ** BigInt(minorDigits) + BigInt((match[2] ?? "").padEnd(minorDigits, "0") || "0")
    }
  }
  if (range === undefined && budget === undefined) {
    refuse("payment.amount_range", "mandate.constraints",
      "the mandate has neither payment.amount_range nor payment.budget: no amount limits it, and a grant always has one")
  }

  // Recurrence: how many actions, and a fixed period (calendar months and years are not fixed).
  let period: (typeof FIXED_FREQUENCIES)[string] | undefined
  let maxActions = 1
  if (recurrence !== undefined) {
    const f = recurrence.frequency
    if (CALENDAR_FREQUENCIES.includes(f)) {
      refuse("payment.agent_recurrence", path("payment.agent_recurrence", "frequency"),
        `the frequency ${f} is a calendar period (its length varies); the chain's periods have a fixed length: DAILY, WEEKLY, BIWEEKLY or ON_DEMAND can be held`)
    } else if (f !== "ON_DEMAND") period = FIXED_FREQUENCIES[f]
    const n = recurrence.max_occurrences
    if (n !== undefined && (n < 1 || n > MAX_ACTIONS)) {
      refuse("payment.agent_recurrence", path("payment.agent_recurrence", "max_occurrences"), `max_occurrences must be 1 … ${MAX_ACTIONS}`)
    }
    maxActions = n === undefined ? MAX_ACTIONS : Math.min(Math.max(n, 1), MAX_ACTIONS)
  }

  // The window: the end is the earliest of the mandate's exp, execution_date's not_after and the request's.
  const window = at("payment.execution_date")?.c as { not_before?: string; not_after?: string } | undefined
  let notBefore: number | undefined
  const ends: Array<{ readonly seconds: number; readonly from: string; readonly path: string }> = []
  if (window?.not_before !== undefined) {
    notBefore = instantOf(window.not_before, false)
    if (notBefore === undefined) refuse("payment.execution_date", path("payment.execution_date", "not_before"), "not_before is not an ISO 8601 date or date-time with an offset")
  }
  if (window?.not_after !== undefined) {
    const end = instantOf(window.not_after, true)
    if (end === undefined) refuse("payment.execution_date", path("payment.execution_date", "not_after"), "not_after is not an ISO 8601 date or date-time with an offset")
    else ends.push({ seconds: end, from: "payment.execution_date", path: path("payment.execution_date", "not_after") })
  }
  if (mandate.execution_date !== undefined) {
    // A pre-set execution date: that UTC day is the window (an instant cannot be aimed at on chain).
    const day = DATE.test(mandate.execution_date) ? instantOf(mandate.execution_date, false) : undefined
    if (day === undefined) {
      refuse("execution_date", "mandate.execution_date", "execution_date can be held as a whole UTC day (YYYY-MM-DD); an instant cannot be aimed at on chain")
    } else {
      notBefore = Math.max(notBefore ?? 0, day)
      ends.push({ seconds: day + 86_400, from: "execution_date", path: "mandate.execution_date" })
    }
  }
  if (mandate.exp !== undefined) {
    // The schema asks only for an integer: one outside a date's range (1e300, negative) is refused by
    // name here, before any message writes it as a date.
    if (mandate.exp < 0 || mandate.exp > MAX_UNIX_SECONDS) refuse("exp", "mandate.exp", "exp is not a time: unix seconds from 1970 to 9999 are")
    else ends.push({ seconds: mandate.exp, from: "exp", path: "mandate.exp" })
  }
  if (ctx.expiresAt !== undefined) {
    const given = Date.parse(ctx.expiresAt)
    if (Number.isNaN(given) || given % 1000 !== 0) refuse("expiresAt", "expiresAt", "expiresAt must be a timestamp on a whole second")
    else ends.push({ seconds: given / 1000, from: "expiresAt", path: "expiresAt" })
  }
  const earliest = ends.reduce<(typeof ends)[number] | undefined>((a, e) => (a === undefined || e.seconds < a.seconds ? e : a), undefined)
  const expires = earliest?.seconds ?? Math.floor((ctx.now.getTime() + POLICY_DEFAULTS.lifetimeMs) / 1000)
  if (earliest !== undefined) {
    if (earliest.seconds * 1000 < ctx.now.getTime() + ctx.minLifetimeMs) {
      refuse(earliest.from, earliest.path, `the mandate's window ends ${iso(earliest.seconds)}: too soon (a grant lives at least ${Math.ceil(ctx.minLifetimeMs / 1000)} s)`)
    }
    if (earliest.seconds * 1000 > ctx.now.getTime() + POLICY_DEFAULTS.maxLifetimeMs) {
      refuse(earliest.from, earliest.path, `the mandate's window ends ${iso(earliest.seconds)}, more than a year ahead: this service's grants always end within a year`)
    }
  }
  const start = notBefore !== undefined && notBefore > nowSeconds ? notBefore : undefined
  if (start !== undefined && start >= expires) {
    refuse("payment.execution_date", at("payment.execution_date") === undefined ? "mandate.execution_date" : path("payment.execution_date", "not_before"),
      `the window opens ${iso(start)}, not before it ends ${iso(expires)}`)
  }

  // Payees: each an address on this chain (the allowlist), the pre-set payee one of them.
  const payees = at("payment.allowed_payees")?.c as { allowed: ReadonlyArray<Merchant> } | undefined
  const recipients: Array<{ readonly name: string; readonly address: string; readonly chainId: number }> = []
  payees?.allowed.forEach((m, i) => {
    if (!ADDRESS.test(m.id)) {
      refuse("payment.allowed_payees", path("payment.allowed_payees", `allowed[${i}].id`),
        `payee ${JSON.stringify(cleanOutsideText(m.id, 48))} is not an address: a token transfer can only be limited to addresses`)
    } else if (!recipients.some((r) => r.address === m.id.toLowerCase())) {
      recipients.push({ name: cleanOutsideText(m.name) || m.id.toLowerCase(), address: m.id.toLowerCase(), chainId: ctx.chainId })
    }
  })
  if (payees !== undefined && payees.allowed.length === 0) {
    refuse("payment.allowed_payees", path("payment.allowed_payees", "allowed"), "payment.allowed_payees allows no payee: nothing could be paid")
  }
  if (recipients.length > POLICY_DEFAULTS.maxRecipients) {
    refuse("payment.allowed_payees", path("payment.allowed_payees", "allowed"), `at most ${POLICY_DEFAULTS.maxRecipients} payees can be held on chain`)
  }
  let allowlist = recipients
  if (mandate.payee !== undefined) {
    const p = mandate.payee
    if (!ADDRESS.test(p.id)) {
      refuse("payee", "mandate.payee.id", `payee ${JSON.stringify(cleanOutsideText(p.id, 48))} is not an address: a token transfer can only be limited to addresses`)
    } else if (payees !== undefined && !recipients.some((r) => r.address === p.id.toLowerCase())) {
      refuse("payee", "mandate.payee.id", "the pre-set payee is not among payment.allowed_payees")
    } else {
      allowlist = [{ name: cleanOutsideText(p.name) || p.id.toLowerCase(), address: p.id.toLowerCase(), chainId: ctx.chainId }]
    }
  }

  if (problems.length > 0 || token === undefined) {
    return { _tag: "Refused", problems: problems.length > 0 ? problems : [{ constraint: "payment.amount_range", path: "mandate.constraints", message: "no currency to pay in" }] }
  }

  // The per-action cap and what the chain holds in total (or per period).
  const cap = perActionUnits === undefined ? budgetUnits! : budgetUnits === undefined ? perActionUnits : (perActionUnits < budgetUnits ? perActionUnits : budgetUnits)
  const scale = 10n ** BigInt(token.decimals - minorDigits)
  const amountOf = (minor: bigint) => majorOf(minor * scale, token.decimals)
  let budgetInput: BuildInput["budgets"][number]
  let budgetMinor = cap
  if (period !== undefined) {
    // A fixed recurrence: one payment's maximum per period (MultiTokenPeriodEnforcer). The total the
    // chain then holds is that allowance times the periods or the occurrences, whichever is fewer;
    // it must not exceed the budget (the budget itself then needs no caveat of its own).
    // Without a later window, the first period starts a minute back (the chain's clock may lag the service's; Grant.ts does the same).
    const periodStart = start ?? nowSeconds - 60
    const periods = Math.ceil((expires - periodStart) / period.seconds)
    const held = cap * BigInt(Math.min(periods, maxActions))
    if (periodStart + period.seconds > expires) {
      refuse("payment.agent_recurrence", path("payment.agent_recurrence", "frequency"),
        `one ${recurrence!.frequency} period does not fit in the mandate's window (${iso(periodStart)} to ${iso(expires)})`)
    } else if (budgetUnits !== undefined && held > budgetUnits) {
      const most = budgetUnits / cap
      refuse("payment.budget", path("payment.budget", "max"),
        `with a ${recurrence!.frequency} recurrence the chain holds ${amountOf(cap)} per period over ${Math.min(periods, maxActions)} ` +
          `${periods <= maxActions ? "periods" : "occurrences"}: ${amountOf(held)} in total, above the budget of ${amountOf(budgetUnits)}; ` +
          `a max_occurrences of at most ${most} (or a shorter window) can be held exactly`)
    }
    budgetInput = {
      token: { symbol: token.symbol },
      amount: amountOf(cap),
      period: { ...(period.every === undefined ? { seconds: period.seconds } : { every: period.every }), start: iso(periodStart) }
    }
    mapped.push(`payment.agent_recurrence ${recurrence!.frequency} is the allowance of one payment's maximum ${period.words}` +
      (recurrence!.max_occurrences === undefined ? "" : ` and the number of actions`))
    if (budgetUnits !== undefined) mapped.push("payment.budget is held by that allowance and the action count, whose total stays within it")
  } else {
    const total = budgetUnits === undefined || (recurrence === undefined && perActionUnits !== undefined && perActionUnits < budgetUnits)
      ? cap
      : budgetUnits
    budgetMinor = total
    // A window that opens later: the allowance starts then (nothing moves before its start) and lasts to the end.
    budgetInput = {
      token: { symbol: token.symbol },
      amount: amountOf(total),
      ...(start === undefined ? {} : { period: { seconds: expires - start, start: iso(start) } })
    }
    if (budget !== undefined) mapped.push("payment.budget is the total")
    if (recurrence !== undefined) mapped.push(`payment.agent_recurrence ON_DEMAND${recurrence.max_occurrences === undefined ? " is any number of actions" : " is the number of actions"}`)
    else mapped.push("without payment.agent_recurrence the mandate is used once: one action")
  }
  if (range !== undefined) mapped.push("payment.amount_range is the per-action maximum")
  if (payees !== undefined || mandate.payee !== undefined) mapped.push(mandate.payee === undefined ? "payment.allowed_payees are the recipients" : "the pre-set payee is the only recipient")
  if (window !== undefined || mandate.execution_date !== undefined) mapped.push("the execution date is the window")
  if (mandate.exp !== undefined && earliest?.from === "exp") mapped.push("its exp is the expiry")
  if (problems.length > 0) return { _tag: "Refused", problems }

  const input: Omit<BuildInput, "mandate"> = {
    name: ctx.name ?? "AP2 payment mandate",
    kind: "agent",
    delegateeAddress: ctx.delegateeAddress,
    chainId: ctx.chainId,
    budgets: [budgetInput],
    perActionMax: { token: { symbol: token.symbol }, amount: amountOf(cap) },
    maxActions,
    recipientAllowlist: allowlist,
    expiresAt: iso(expires),
    ...(start === undefined ? {} : { notBefore: iso(start) }),
    ...(ctx.accountId === undefined ? {} : { accountId: ctx.accountId })
  }
  // Exactness: every amount survives the build's own conversion to base units unchanged (a
  // number too large for a double's 53 bits would not).
  for (const [a, minor] of [[budgetInput.amount, budgetMinor], [amountOf(cap), cap]] as const) {
    if (toUnits(a, token.decimals) !== minor * scale) {
      return { _tag: "Refused", problems: [{ constraint: "payment.amount_range", path: "mandate.constraints", message: `the amount ${a} cannot be expressed exactly in ${token.symbol}` }] }
    }
  }
  return { _tag: "Ok", input, mapped }
}
