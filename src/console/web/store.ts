/**
 * The console's data, fetched and kept in one place: the views read `state` and call `actions`, never
 * the API. A notification from the stream reloads what may have moved (coalesced, so a burst of
 * notifications is one reload).
 */
import type { Hex } from "viem"
import { checkProof, type ProofResult } from "./proof.ts"
import { devKeySigner, type Eip1193, listen, type Session, signAndRelay, signGrant, signIn, type Signer, walletSigner, withBigSalt } from "./session.ts"

export interface ChainView {
  readonly account: any
  readonly chainName: string
  readonly rules?: any
  readonly balances: ReadonlyArray<{ readonly symbol: string; readonly amount: string }>
  readonly error?: string
}

export interface ActivityFilter {
  readonly delegationId?: string
  readonly chainId?: number
}

export interface State {
  readonly session?: Session
  readonly config: { readonly devKeySignIn: boolean }
  readonly wallet?: Eip1193
  readonly loaded: boolean
  readonly chains: ReadonlyArray<ChainView>
  readonly grants: ReadonlyArray<any>
  readonly approvals: ReadonlyArray<any>
  readonly changes: ReadonlyArray<any>
  /** `loaded`: false until the activity view is first opened (the first view does not wait for it). */
  readonly activity: { readonly items: ReadonlyArray<any>; readonly nextCursor?: string; readonly filter: ActivityFilter; readonly loaded: boolean }
  /** Per account id: the length of its log an anchor covers. */
  readonly anchored: Readonly<Record<string, number>>
  readonly proofs: Readonly<Record<string, ProofResult | "checking">>
  readonly live: ReadonlyArray<any>
  readonly status: { readonly text: string; readonly tone: "info" | "ok" | "error" }
  /** Keys of the actions in flight (a button shows it and waits). */
  readonly busy: ReadonlyArray<string>
  /** A grant built and shown before it is signed. */
  readonly draft?: { readonly request: any; readonly build: any }
}

const BALANCE_TOKENS = ["USDC", "USDT", "ETH"] as const
const ACTIVITY_PAGE = 50

let state: State = {
  config: { devKeySignIn: false },
  loaded: false,
  chains: [],
  grants: [],
  approvals: [],
  changes: [],
  activity: { items: [], filter: {}, loaded: false },
  anchored: {},
  proofs: {},
  live: [],
  status: { text: "", tone: "info" },
  busy: []
}
const listeners = new Set<() => void>()
const set = (patch: Partial<State>) => {
  state = { ...state, ...patch }
  for (const l of listeners) l()
}
export const getState = () => state
export const subscribe = (l: () => void) => {
  listeners.add(l)
  return () => void listeners.delete(l)
}

const session = () => {
  if (state.session === undefined) throw new Error("not signed in")
  return state.session
}
const say = (text: string, tone: State["status"]["tone"] = "info") => set({ status: { text, tone } })

const activityQuery = (filter: ActivityFilter, cursor?: string) => {
  const q = new URLSearchParams({ limit: String(ACTIVITY_PAGE) })
  if (filter.delegationId !== undefined) q.set("delegationId", filter.delegationId)
  if (filter.chainId !== undefined) q.set("chainId", String(filter.chainId))
  if (cursor !== undefined) q.set("cursor", cursor)
  return `/activity?${q}`
}

const loadChain = async (s: Session, account: any): Promise<ChainView> => {
  const q = `accountId=${encodeURIComponent(account.id)}`
  const [rules, ...funds] = await Promise.allSettled([
    s.call("GET", `/account/rules?${q}`),
    ...BALANCE_TOKENS.map((t) => s.call("GET", `/account/fund?${q}&token=${t}`))
  ])
  const found = funds.flatMap((f) => (f.status === "fulfilled" ? [f.value] : []))
  return {
    account,
    chainName: found[0]?.chainName ?? `chain ${account.chainId}`,
    balances: found.map((f) => ({ symbol: f.token.symbol, amount: f.balance })),
    ...(rules.status === "fulfilled" ? { rules: rules.value } : { error: String((rules.reason as Error).message) })
  }
}

/** The activity's first page (with the current filter) and how far each account's log is anchored. */
const loadActivity = async (s: Session) => {
  const filter = state.activity.filter
  const [page, anchor] = await Promise.all([s.call("GET", activityQuery(filter)), s.call("GET", "/activity/anchor")])
  set({
    activity: { items: page.items, ...(page.pageInfo.nextCursor === undefined ? {} : { nextCursor: page.pageInfo.nextCursor }), filter, loaded: true },
    anchored: Object.fromEntries(((anchor.accounts ?? []) as ReadonlyArray<any>).map((a) => [a.accountId, a.anchoredLength]))
  })
}

/**
 * Everything the first view shows, read at once: the cards and the inbox. The chains' rules and
 * balances (four reads per chain, each of them the chain's) are drawn when they come, after it; the
 * activity is read only once its view has been opened (then again with every reload).
 */
const reload = async () => {
  const s = session()
  const activity = state.activity.loaded ? loadActivity(s) : undefined
  const [accounts, grants, approvals, changes] = await Promise.all([
    s.call("GET", "/accounts"),
    s.call("GET", "/delegations"),
    s.call("GET", "/approvals"),
    s.call("GET", "/approvals/changes")
  ])
  // Read by bench/console.ts: when the first view's answers were in hand (before it is drawn).
  performance.clearMarks("console:answers")
  performance.mark("console:answers")
  const visible = (accounts as ReadonlyArray<any>).filter((a) => !a.hidden)
  // Until its reads come, a chain shows what the account list says (and what it showed before).
  const known = new Map(state.chains.map((c) => [c.account.id, c]))
  set({
    loaded: true,
    chains: visible.map((a) => ({ ...(known.get(a.id) ?? { chainName: `chain ${a.chainId}`, balances: [] }), account: a })),
    grants,
    approvals,
    changes
  })
  const [chains] = await Promise.all([Promise.all(visible.map((a) => loadChain(s, a))), activity])
  set({ chains })
}

let pending: ReturnType<typeof setTimeout> | undefined
/** Reloads soon, once for any number of calls meanwhile. */
const reloadSoon = () => {
  if (pending !== undefined) return
  pending = setTimeout(() => {
    pending = undefined
    reload().catch((e) => say(`Could not refresh: ${(e as Error).message}`, "error"))
  }, 200)
}

/** The activity's first read in flight (opening the view twice reads it once). */
let opening: Promise<void> | undefined
let stream: AbortController | undefined
const startSession = async (signer: Signer) => {
  const s = await signIn(signer)
  set({ session: s })
  await reload()
  stream?.abort()
  stream = new AbortController()
  const controller = stream
  void listen(s, (n) => {
    set({ live: [n, ...state.live].slice(0, 20) })
    reloadSoon()
  }, controller.signal).catch(() => {
    if (!controller.signal.aborted) say("The live updates stopped: refresh to see what changed.", "error")
  })
}

/** Runs one action of the owner's: `key` marks its button busy; the outcome is said in the status line. */
const run = async (key: string, what: string, f: () => Promise<void>, reloadAfter = true) => {
  if (state.busy.includes(key)) return
  set({ busy: [...state.busy, key] })
  say(`${what}…`)
  try {
    await f()
    say(`${what}: done.`, "ok")
  } catch (e) {
    say(`${what} failed: ${(e as Error).message}`, "error")
  } finally {
    set({ busy: state.busy.filter((k) => k !== key) })
  }
  if (reloadAfter && state.session !== undefined) await reload().catch(() => undefined)
}

/** A signed account delegation (recovery or panic): build, sign with the signer, post. */
const signAccountDelegation = async (s: Session, body: Record<string, unknown>) => {
  const toSign = await s.call("POST", "/account/rules/delegations/build", body)
  await s.call("POST", "/account/rules/delegations/sign", {
    delegationHash: toSign.delegationHash,
    signature: await s.signer.signTypedData(withBigSalt(toSign.typedData))
  })
  return toSign.delegationHash as string
}

export const actions = {
  init: async (wallet: Eip1193 | undefined) => {
    set(wallet === undefined ? {} : { wallet })
    const config = await fetch("/console/config").then((r) => r.json()).catch(() => ({ devKeySignIn: false }))
    set({ config })
  },
  // A sign-in has just read everything (startSession): no second read after it.
  signInWithWallet: () => run("sign-in", "Signing in with your wallet", async () => startSession(await walletSigner(state.wallet!)), false),
  signInWithDevKey: (key: string) =>
    run("sign-in", "Signing in with the development key", async () => {
      if (!/^0x[0-9a-fA-F]{64}$/.test(key)) throw new Error("a key is 0x and 64 hex digits")
      await startSession(devKeySigner(key as Hex))
    }, false),
  refresh: () => run("refresh", "Refreshing", async () => {}),
  /** The activity view was opened: its first page, once (later reloads keep it fresh). */
  openActivity: () => {
    if (state.activity.loaded || state.session === undefined) return Promise.resolve()
    opening ??= loadActivity(state.session)
      .catch((e) => say(`Could not read the activity: ${(e as Error).message}`, "error"))
      .finally(() => (opening = undefined))
    return opening
  },
  setActivityFilter: async (filter: ActivityFilter) => {
    set({ activity: { items: [], filter, loaded: false } })
    const page = await session().call("GET", activityQuery(filter))
    set({ activity: { items: page.items, ...(page.pageInfo.nextCursor === undefined ? {} : { nextCursor: page.pageInfo.nextCursor }), filter, loaded: true } })
  },
  moreActivity: () =>
    run("more-activity", "Loading older activity", async () => {
      const { items, nextCursor, filter } = state.activity
      if (nextCursor === undefined) return
      const page = await session().call("GET", activityQuery(filter, nextCursor))
      set({ activity: { items: [...items, ...page.items], ...(page.pageInfo.nextCursor === undefined ? {} : { nextCursor: page.pageInfo.nextCursor }), filter, loaded: true } })
    }),
  checkProof: async (eventId: string) => {
    set({ proofs: { ...state.proofs, [eventId]: "checking" } })
    const result = await checkProof(session(), eventId).catch((e): ProofResult => ({ ok: false, text: `proof not checked: ${(e as Error).message}` }))
    set({ proofs: { ...state.proofs, [eventId]: result } })
  },
  approve: (r: any) =>
    run(`approve:${r.id}`, "Approving", async () => {
      const s = session()
      // What the ApprovalEnforcer checks on chain: the signer's EIP-712 `Approval` of this exact transfer.
      await s.call("POST", `/approvals/${r.id}/approve`, { signature: await s.signer.signTypedData(r.toSign) })
    }),
  deny: (id: string, reason: string) =>
    run(`deny:${id}`, "Denying", async () => {
      await session().call("POST", `/approvals/${id}/deny`, { reason: reason.trim() === "" ? "Denied in the console" : reason.trim() })
    }),
  acceptChange: (id: string) =>
    run(`accept:${id}`, "Accepting the request for more", async () => {
      const s = session()
      const build = await s.call("POST", `/approvals/changes/${id}/build`)
      await s.call("POST", `/approvals/changes/${id}/accept`, await signGrant(s.signer, build))
    }),
  declineChange: (id: string, reason: string) =>
    run(`decline:${id}`, "Declining the request for more", async () => {
      await session().call("POST", `/approvals/changes/${id}/decline`, { reason: reason.trim() === "" ? "Declined in the console" : reason.trim() })
    }),
  revoke: (id: string) =>
    run(`revoke:${id}`, "Revoking", async () => {
      const s = session()
      await signAndRelay(s, await s.call("POST", `/delegations/${id}/revoke`))
    }),
  setFrozen: (accountId: string, frozen: boolean) =>
    run(`freeze:${accountId}`, frozen ? "Freezing the account" : "Unfreezing the account", async () => {
      const s = session()
      await signAndRelay(s, await s.call("POST", "/account/rules/build", { intentType: frozen ? "account_freeze" : "account_unfreeze", accountId }))
    }),
  /** Builds the grant and shows its summary; nothing is signed yet. */
  previewGrant: (request: any) =>
    run("grant-preview", "Preparing the grant", async () => {
      set({ draft: { request, build: await session().call("POST", "/delegations/build", request) } })
    }),
  discardGrant: () => set({ draft: undefined as never }),
  signGrant: () =>
    run("grant-sign", "Signing and creating the grant", async () => {
      const s = session()
      const draft = state.draft
      if (draft === undefined) throw new Error("nothing to sign")
      await s.call("POST", "/delegations", { ...(await signGrant(s.signer, draft.build)), intentType: "delegation_enable" })
      set({ draft: undefined as never })
      // The new card is where the person looks next.
      location.hash = "#overview"
    }),
  setSafeAddress: (accountId: string, address: string | null) =>
    run(`safe:${accountId}`, "Setting the safe address", async () => {
      const s = session()
      await signAndRelay(s, await s.call("POST", "/account/rules/build", { intentType: "rules_update", accountId, change: { kind: "safe_address", address } }))
    }),
  addPanicKey: (accountId: string, panicKey: string, label: string) =>
    run(`panic:${accountId}`, "Adding the panic key", async () => {
      const s = session()
      const delegationHash = await signAccountDelegation(s, { accountId, kind: "panic", panicKey, ...(label === "" ? {} : { label }) })
      await signAndRelay(s, await s.call("POST", "/account/rules/build", { intentType: "panic_install", accountId, delegationHash }))
    }),
  addGuardians: (accountId: string, guardians: ReadonlyArray<{ address: string; label: string }>, threshold: number) =>
    run(`guardians:${accountId}`, "Adding guardians", async () => {
      const s = session()
      const rules = state.chains.find((c) => c.account.id === accountId)?.rules
      // Guardians can only ever recover with the account's signed delegation to the Recovery contract.
      const signed = rules?.recovery?.delegation
      if (signed === null || signed === undefined || !signed.signatureValid) await signAccountDelegation(s, { accountId })
      await signAndRelay(s, await s.call("POST", "/account/rules/build", {
        intentType: "guardian_add",
        accountId,
        guardians: guardians.map((g) => ({ address: g.address, ...(g.label === "" ? {} : { label: g.label }) })),
        threshold
      }))
    })
}
