/**
 * One agent's grant at a glance: its name (the requester's words, quoted, apart from the limits), then
 * what it may spend as figures and a bar per budget token (spent, reserved, left, renews), the per-action
 * cap, the recipients by name, the expiry; the plain-language summary and the caveats one click away.
 */
import { useState } from "preact/hooks"
import { html } from "./html.ts"
import { type Contact, quote } from "./contacts.ts"
import { formatAmount, formatDate, periodWords } from "./format.ts"
import { ActionButton, Address, Bar } from "./parts.ts"

const Budget = ({ grant, entry }: { grant: any; entry: any }) => {
  const symbol = entry.token.symbol
  const budget = (grant.policySet.budgets as ReadonlyArray<any>).find((b) => b.token.symbol === symbol)
  const reserved = entry.reserved ?? 0
  const period = budget?.stream !== undefined ? "streamed" : periodWords(budget?.period)
  const label = `${formatAmount(entry.spent, symbol)} spent, ${formatAmount(reserved, symbol)} reserved, ${formatAmount(entry.remaining, symbol)} left of ${formatAmount(entry.limit, symbol)} ${period}`
  return html`<div class="budget" data-token=${symbol}>
    <div class="budget-head"><strong>${formatAmount(entry.limit, symbol)}</strong> <span class="muted">${period}</span></div>
    <${Bar} limit=${entry.limit} spent=${entry.spent} reserved=${reserved} label=${label} />
    <dl class="figures">
      <div><dt>Spent</dt><dd class="spent">${formatAmount(entry.spent, symbol)}</dd></div>
      <div><dt>Reserved</dt><dd class="reserved">${formatAmount(reserved, symbol)}</dd></div>
      <div><dt>Left</dt><dd class="left">${formatAmount(entry.remaining, symbol)}</dd></div>
      ${entry.resetsAt === undefined ? null : html`<div><dt>Renews</dt><dd class="renews">${formatDate(entry.resetsAt)}</dd></div>`}
    </dl>
  </div>`
}

const Terms = ({ grant, contacts }: { grant: any; contacts: ReadonlyMap<string, Contact> }) => {
  const p = grant.policySet
  const recipients = (p.recipientAllowlist ?? []) as ReadonlyArray<any>
  const approval = p.approval
  return html`<ul class="terms">
    ${p.perActionMax.amount > 0 ? html`<li>At most <strong>${formatAmount(p.perActionMax.amount, p.perActionMax.token.symbol)}</strong> per action</li>` : null}
    <li>At most <strong>${p.maxActions}</strong> actions</li>
    <li class="recipients">${recipients.length === 0
      ? html`To <strong>any recipient</strong>`
      : html`Only to ${recipients.map((r, i) => html`${i > 0 ? ", " : ""}<${Address} address=${r.address} contacts=${contacts} />`)}`}</li>
    ${approval === undefined ? null : html`<li>Above ${
      approval.thresholds.length === 0 ? "0" : approval.thresholds.map((t: any) => formatAmount(t.amount, t.token.symbol)).join(", ")
    }: needs <strong>${approval.required} of ${approval.approvers.length}</strong> approvals</li>`}
    <li>Until <strong>${formatDate(p.expiresAt)}</strong></li>
  </ul>`
}

/** The full summary and the caveats, one click away: drawn when opened (100 cards draw sooner without them). */
const InFull = ({ grant }: { grant: any }) => {
  const [open, setOpen] = useState(false)
  return html`<details class="summary" onToggle=${(e: Event) => setOpen((e.currentTarget as HTMLDetailsElement).open)}>
    <summary>What this grant allows, in full</summary>
    ${!open ? null : html`<p class="human">${grant.humanSummary}</p>
      <p class="small muted">Permission id <code class="wrap">${grant.permissionId}</code></p>
      <p class="small muted">Calls it may make: ${(grant.policySet.allowedActions as ReadonlyArray<any>).map((a) => `${a.name} (${a.selectors.join(", ")})`).join("; ") || "none"}</p>`}
  </details>`
}

export const AgentCard = ({ grant, contacts, busy, onRevoke }: {
  grant: any
  contacts: ReadonlyMap<string, Contact>
  busy: boolean
  onRevoke: () => void
}) => {
  const headingId = `grant-${grant.id}`
  return html`<article class=${`card delegation ${grant.status}`} data-id=${grant.id} data-status=${grant.status} aria-labelledby=${headingId}>
    <header class="card-head">
      <h3 id=${headingId}><span class="name">${quote(grant.name)}</span></h3>
      <span class=${`badge ${grant.status}`}>${grant.status}</span>
    </header>
    <p class="muted small">Agent <${Address} address=${grant.delegateeAddress} contacts=${new Map()} /> · ${grant.chain}</p>
    ${(grant.spentToDate as ReadonlyArray<any>).map((entry) => html`<${Budget} grant=${grant} entry=${entry} />`)}
    <${Terms} grant=${grant} contacts=${contacts} />
    <${InFull} grant=${grant} />
    ${grant.status === "active"
      ? html`<div class="actions"><${ActionButton} className="revoke danger" busy=${busy} label="Revoke" onClick=${onRevoke} /></div>`
      : null}
  </article>`
}
