/** The console's frame: who is signed in, the status line, the views (overview, activity, new grant, safety) by the page's hash. */
import { useEffect, useLayoutEffect, useState } from "preact/hooks"
import { html } from "./html.ts"
import { Accounts } from "./Accounts.ts"
import { Activity } from "./Activity.ts"
import { AgentCard } from "./AgentCard.ts"
import { contactsOf } from "./contacts.ts"
import { formatDate, shortAddress } from "./format.ts"
import { GrantForm } from "./GrantForm.ts"
import { Inbox } from "./Inbox.ts"
import { Safety } from "./Safety.ts"
import { SignIn } from "./SignIn.ts"
import { actions, getState, subscribe } from "./store.ts"

const VIEWS = [
  ["overview", "Overview"],
  ["activity", "Activity"],
  ["new-grant", "New grant"],
  ["safety", "Safety"]
] as const
type View = typeof VIEWS[number][0]
const viewOfHash = (): View => {
  const h = location.hash.slice(1)
  return (VIEWS.find(([v]) => v === h)?.[0]) ?? "overview"
}

/** Cards drawn at once: a first screen's worth (a 1280 px window shows 6-9); the rest in the next task. */
const FIRST_CARDS = 12
/** How many of `n` cards to draw now: the first screen at once, then all (a person reads the top first). */
const useProgressive = (n: number) => {
  const [shown, setShown] = useState(FIRST_CARDS)
  useEffect(() => {
    if (shown >= n) return
    const t = setTimeout(() => setShown(Number.MAX_SAFE_INTEGER), 0)
    return () => clearTimeout(t)
  }, [shown, n])
  return shown
}

const useStore = () => {
  const [, tick] = useState(0)
  useEffect(() => subscribe(() => tick((n) => n + 1)), [])
  return getState()
}

export const App = () => {
  const state = useStore()
  const [view, setView] = useState<View>(viewOfHash())
  useEffect(() => {
    const on = () => setView(viewOfHash())
    window.addEventListener("hashchange", on)
    return () => window.removeEventListener("hashchange", on)
  }, [])
  useEffect(() => {
    document.title = `${VIEWS.find(([v]) => v === view)![1]} · Console`
  }, [view])
  const busy = (key: string) => state.busy.includes(key)
  const s = state.session
  const shown = useProgressive(state.grants.length)
  // Read by bench/console.ts: when the overview with its data was committed to the page.
  useLayoutEffect(() => {
    if (!state.loaded || view !== "overview") return
    performance.clearMarks("console:drawn")
    performance.mark("console:drawn")
  }, [state.loaded, state.grants, view])
  // The activity is read when its view is first shown, not before the first view.
  useEffect(() => {
    if (view === "activity" && s !== undefined) void actions.openActivity()
  }, [view, s])
  const status = html`<p id="status" role="status" aria-live="polite" class=${`status ${state.status.tone}`}>${state.status.text}</p>`
  if (s === undefined) {
    return html`<header class="top"><strong>Console</strong><a href="/docs">API reference</a></header>
      <main id="main">${status}
        <${SignIn} walletPresent=${state.wallet !== undefined} devKey=${state.config.devKeySignIn} busy=${busy("sign-in")}
          onWallet=${actions.signInWithWallet} onDevKey=${actions.signInWithDevKey} /></main>`
  }
  const contacts = contactsOf(state)
  const me = s.signer.address.toLowerCase()
  const grants = state.grants
  const active = grants.filter((g) => g.status === "active")
  const others = grants.filter((g) => g.status !== "active")
  const card = (g: any) => html`<${AgentCard} key=${g.id} grant=${g} contacts=${contacts} busy=${busy(`revoke:${g.id}`)} onRevoke=${() => actions.revoke(g.id)} />`
  return html`<header class="top">
      <strong>Console</strong>
      <span id="who" title=${s.signer.address}>${shortAddress(s.signer.address)} <span class="muted">(${s.signer.kind})</span></span>
      <a href="/docs">API reference</a>
    </header>
    <nav aria-label="Views"><ul>${VIEWS.map(([v, label]) => html`<li><a href=${`#${v}`} aria-current=${view === v ? "page" : undefined}>${label}</a></li>`)}</ul>
      <button type="button" id="refresh" onClick=${actions.refresh} disabled=${busy("refresh")}>Refresh</button></nav>
    <main id="main" data-view=${view}>
      ${status}
      ${!state.loaded ? html`<p class="muted">Loading…</p>` : view === "overview" ? html`
        <${Inbox} approvals=${state.approvals} changes=${state.changes} grants=${grants} me=${me} contacts=${contacts} busy=${busy} actions=${actions} />
        <${Accounts} chains=${state.chains} contacts=${contacts} busy=${busy} onFreeze=${actions.setFrozen} />
        <section id="agents" aria-labelledby="agents-title">
          <h2 id="agents-title">Agents <span class="muted small">${active.length} active</span></h2>
          ${grants.length === 0 ? html`<p class="empty muted">No delegations yet. <a href="#new-grant">Give an agent a budget</a>.</p>` : null}
          <div class="cards">${active.slice(0, shown).map(card)}</div>
          ${others.length === 0 ? null : html`<details class="ended"><summary>Ended grants (${others.length})</summary><div class="cards">${
            others.slice(0, Math.max(0, shown - active.length)).map(card)}</div></details>`}
        </section>
        ${state.live.length === 0 ? null : html`<section id="live" aria-labelledby="live-title"><h2 id="live-title">Just now</h2>
          <ul class="notifications">${state.live.slice(0, 5).map((n) => html`<li key=${n.id} class=${`notification ${n.tone}`} data-id=${n.id}>
            <strong>${n.title}</strong> ${n.body} <time class="muted small" datetime=${n.createdAt}>${formatDate(n.createdAt)}</time></li>`)}</ul></section>`}
      ` : view === "activity" ? html`<${Activity} items=${state.activity.items} loaded=${state.activity.loaded} hasMore=${state.activity.nextCursor !== undefined}
          filter=${state.activity.filter} grants=${grants} chains=${state.chains} anchored=${state.anchored} proofs=${state.proofs}
          contacts=${contacts} onFilter=${actions.setActivityFilter} onMore=${actions.moreActivity} onCheck=${actions.checkProof} />`
        : view === "new-grant" ? html`<${GrantForm} chains=${state.chains} me=${me} draft=${state.draft} busy=${busy} actions=${actions} />`
        : html`<${Safety} chains=${state.chains} contacts=${contacts} busy=${busy} actions=${actions} />`}
    </main>`
}
