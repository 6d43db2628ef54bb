/**
 * The owner's log, readable: one date format, the actor by name, amounts with tokens, filters by agent
 * and chain, and each entry's proof one click away once an anchor covers it (never asked before).
 */
import { html } from "./html.ts"
import { type Contact, quote } from "./contacts.ts"
import { actionInWords, formatAmount, formatDate, shortAddress } from "./format.ts"
import type { ProofResult } from "./proof.ts"
import type { ActivityFilter } from "./store.ts"

const nameOf = (address: string, contacts: ReadonlyMap<string, Contact>) => {
  if (address === "owner") return "You"
  const c = contacts.get(address.toLowerCase())
  if (c !== undefined) return c.quoted ? quote(c.name) : c.name
  return address.startsWith("0x") ? shortAddress(address) : address
}

/**
 * Who acted: a known contact, else on a grant's entry (other than an approver's signature) the grant's
 * agent (its signer key is not in the owner's records), else the short address.
 */
const actorName = (e: any, grants: ReadonlyArray<any>, contacts: ReadonlyMap<string, Contact>) => {
  const named = nameOf(e.actor, contacts)
  if (!e.actor.startsWith("0x") || named !== shortAddress(e.actor) || e.delegationId === undefined || e.action === "approval_signature") return named
  const grant = grants.find((g) => g.id === e.delegationId)
  return grant === undefined ? named : quote(grant.name)
}

const Proof = ({ entry, anchoredLength, proof, onCheck }: {
  entry: any
  anchoredLength: number
  proof: ProofResult | "checking" | undefined
  onCheck: () => void
}) => {
  if (entry.index > anchoredLength) return html`<span class="proof unanchored">not anchored yet</span>`
  if (proof === undefined) return html`<button type="button" class="proof-check link" onClick=${onCheck}>Check proof</button>`
  if (proof === "checking") return html`<span class="proof pending">checking…</span>`
  return html`<span class=${`proof ${proof.ok ? "proven" : "unproven"}`}>${proof.text}</span>`
}

export const Activity = ({ items, loaded, hasMore, filter, grants, chains, anchored, proofs, contacts, onFilter, onMore, onCheck }: {
  items: ReadonlyArray<any>
  loaded: boolean
  hasMore: boolean
  filter: ActivityFilter
  grants: ReadonlyArray<any>
  chains: ReadonlyArray<{ account: any; chainName: string }>
  anchored: Readonly<Record<string, number>>
  proofs: Readonly<Record<string, ProofResult | "checking">>
  contacts: ReadonlyMap<string, Contact>
  onFilter: (f: ActivityFilter) => void
  onMore: () => void
  onCheck: (id: string) => void
}) =>
  html`<section id="activity" aria-labelledby="activity-title">
    <h2 id="activity-title">Activity</h2>
    <div class="filters">
      <label>Agent
        <select id="filter-agent" value=${filter.delegationId ?? ""} onChange=${(e: Event) => {
          const v = (e.currentTarget as HTMLSelectElement).value
          onFilter({ ...(filter.chainId === undefined ? {} : { chainId: filter.chainId }), ...(v === "" ? {} : { delegationId: v }) })
        }}>
          <option value="">Every agent</option>
          ${grants.map((g) => html`<option value=${g.id}>${quote(g.name)}</option>`)}
        </select>
      </label>
      <label>Chain
        <select id="filter-chain" value=${filter.chainId === undefined ? "" : String(filter.chainId)} onChange=${(e: Event) => {
          const v = (e.currentTarget as HTMLSelectElement).value
          onFilter({ ...(filter.delegationId === undefined ? {} : { delegationId: filter.delegationId }), ...(v === "" ? {} : { chainId: Number(v) }) })
        }}>
          <option value="">Every chain</option>
          ${chains.map((c) => html`<option value=${String(c.account.chainId)}>${c.chainName}</option>`)}
        </select>
      </label>
    </div>
    ${!loaded ? html`<p class="muted">Loading…</p>` : items.length === 0 ? html`<p class="empty muted">No activity yet.</p>` : null}
    <ol class="entries">
      ${items.map((e) => html`<li key=${e.id} class="entry" data-id=${e.id} data-action=${e.action} data-status=${e.status}>
        <time datetime=${e.timestamp}>${formatDate(e.timestamp)}</time>
        <span class="what"><strong class="actor" title=${e.actor}>${actorName(e, grants, contacts)}</strong> ${actionInWords(e.action, e.status)}${
          e.amount === undefined ? "" : html` <strong class="amount">${formatAmount(e.amount, e.token ?? "")}</strong>`}${
          e.recipient === undefined ? "" : ` to ${nameOf(e.recipient, contacts)}`}</span>
        <span class="meta muted small">${e.chain} · <span class=${`status ${e.status}`}>${e.status}</span>${
          e.declineReason === undefined ? "" : ` · ${/^[a-z0-9_]{1,64}$/.test(e.declineReason) ? e.declineReason : quote(e.declineReason)}`}</span>
        <${Proof} entry=${e} anchoredLength=${anchored[e.accountId] ?? 0} proof=${proofs[e.id]} onCheck=${() => onCheck(e.id)} />
      </li>`)}
    </ol>
    ${hasMore ? html`<button type="button" class="more" onClick=${onMore}>Older entries</button>` : null}
  </section>`
