/**
 * What waits for the owner, first on the page: agents' transfers held for approval and agents' requests
 * for more (top-ups), each with one primary action; then the recent decisions.
 */
import { useState } from "preact/hooks"
import { html } from "./html.ts"
import { type Contact, quote } from "./contacts.ts"
import { formatAmount, formatDate } from "./format.ts"
import { ActionButton, Address } from "./parts.ts"

const grantName = (grants: ReadonlyArray<any>, id: string) => {
  const g = grants.find((x) => x.id === id)
  return g === undefined ? "a grant" : quote(g.name)
}

const ApprovalCard = ({ r, me, grants, contacts, busy, onApprove, onDeny }: {
  r: any
  me: string
  grants: ReadonlyArray<any>
  contacts: ReadonlyMap<string, Contact>
  busy: (key: string) => boolean
  onApprove: () => void
  onDeny: (reason: string) => void
}) => {
  const [reason, setReason] = useState("")
  const approvers = (r.approvers as ReadonlyArray<string>).map((a) => a.toLowerCase())
  const approved = (r.approvals as ReadonlyArray<{ approver: string }>).map((a) => a.approver.toLowerCase())
  const canApprove = r.status === "pending" && approvers.includes(me) && !approved.includes(me)
  const reasonId = `deny-reason-${r.id}`
  return html`<article class=${`card approval ${r.status}`} data-id=${r.id} data-status=${r.status}>
    <header class="card-head">
      <h3><span class="amount">${formatAmount(r.amount, r.token.symbol)}</span> to <${Address} address=${r.recipient} contacts=${contacts} /></h3>
      <span class=${`badge ${r.status}`}>${r.status}</span>
    </header>
    <p class="small">Asked by ${grantName(grants, r.delegationId)} on ${r.chain} · <span class="count">${r.approvals.length} of ${r.required} approvals</span> · until ${formatDate(r.deadline)}</p>
    ${r.denial === undefined ? null : html`<p class="small">Denied: ${quote(r.denial.reason)}</p>`}
    <details class="summary"><summary>In full</summary><p class="human">${r.summary}</p></details>
    ${r.status !== "pending" ? null : html`<div class="actions">
      ${canApprove ? html`<${ActionButton} className="approve primary" busy=${busy(`approve:${r.id}`)} label="Approve (sign)" onClick=${onApprove} />` : null}
      <label class="visually-hidden" for=${reasonId}>Reason to deny</label>
      <input id=${reasonId} class="reason" placeholder="Reason to deny (optional)" maxlength="500" value=${reason}
        onInput=${(e: Event) => setReason((e.currentTarget as HTMLInputElement).value)} />
      <${ActionButton} className="deny" busy=${busy(`deny:${r.id}`)} label="Deny" onClick=${() => onDeny(reason)} />
    </div>`}
  </article>`
}

const ChangeCard = ({ c, grants, busy, onAccept, onDecline }: {
  c: any
  grants: ReadonlyArray<any>
  busy: (key: string) => boolean
  onAccept: () => void
  onDecline: (reason: string) => void
}) => {
  const [reason, setReason] = useState("")
  const reasonId = `decline-reason-${c.id}`
  return html`<article class=${`card topup ${c.status}`} data-id=${c.id} data-status=${c.status}>
    <header class="card-head">
      <h3>${grantName(grants, c.delegationId)} asks for more</h3>
      <span class=${`badge ${c.status}`}>${c.status}</span>
    </header>
    <ul class="diff">${(c.diff as ReadonlyArray<any>).map((d) => html`<li data-field=${d.field}><strong>${d.from}</strong> → <strong>${d.to}</strong> <span class="muted small">${d.text}</span></li>`)}</ul>
    <p class="small">Its reason: ${quote(c.reason)} · until ${formatDate(c.deadline)}</p>
    <details class="summary"><summary>In full</summary><p class="human">${c.summary}</p></details>
    ${c.status !== "pending" ? null : html`<div class="actions">
      <${ActionButton} className="accept primary" busy=${busy(`accept:${c.id}`)} label="Accept (sign the new grant)" onClick=${onAccept} />
      <label class="visually-hidden" for=${reasonId}>Reason to decline</label>
      <input id=${reasonId} class="reason" placeholder="Reason to decline (optional)" maxlength="500" value=${reason}
        onInput=${(e: Event) => setReason((e.currentTarget as HTMLInputElement).value)} />
      <${ActionButton} className="decline" busy=${busy(`decline:${c.id}`)} label="Decline" onClick=${() => onDecline(reason)} />
    </div>`}
  </article>`
}

export const Inbox = ({ approvals, changes, grants, me, contacts, busy, actions }: {
  approvals: ReadonlyArray<any>
  changes: ReadonlyArray<any>
  grants: ReadonlyArray<any>
  me: string
  contacts: ReadonlyMap<string, Contact>
  busy: (key: string) => boolean
  actions: any
}) => {
  const pending = approvals.filter((r) => r.status === "pending")
  const asks = changes.filter((c) => c.status === "pending")
  const recent = [...approvals.filter((r) => r.status !== "pending").slice(0, 5), ...changes.filter((c) => c.status !== "pending").slice(0, 5)]
  return html`<section id="inbox" aria-labelledby="inbox-title">
    <h2 id="inbox-title">Waiting for you ${pending.length + asks.length > 0 ? html`<span class="badge pending">${pending.length + asks.length}</span>` : null}</h2>
    ${pending.length + asks.length === 0 ? html`<p class="empty muted">Nothing waits for you.</p>` : null}
    ${pending.map((r) => html`<${ApprovalCard} key=${r.id} r=${r} me=${me} grants=${grants} contacts=${contacts} busy=${busy}
      onApprove=${() => actions.approve(r)} onDeny=${(reason: string) => actions.deny(r.id, reason)} />`)}
    ${asks.map((c) => html`<${ChangeCard} key=${c.id} c=${c} grants=${grants} busy=${busy}
      onAccept=${() => actions.acceptChange(c.id)} onDecline=${(reason: string) => actions.declineChange(c.id, reason)} />`)}
    ${recent.length === 0 ? null : html`<details class="recent"><summary>Recent decisions (${recent.length})</summary>
      ${recent.map((x) => x.diff === undefined
        ? html`<${ApprovalCard} key=${x.id} r=${x} me=${me} grants=${grants} contacts=${contacts} busy=${busy} onApprove=${() => {}} onDeny=${() => {}} />`
        : html`<${ChangeCard} key=${x.id} c=${x} grants=${grants} busy=${busy} onAccept=${() => {}} onDecline=${() => {}} />`)}
    </details>`}
  </section>`
}
