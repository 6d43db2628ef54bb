/**
 * A new grant: token, budget and period, per-action cap, recipients, approval threshold. "Review" builds
 * it and shows what the chain will hold, in figures and in words, before anything is signed.
 */
import { useState } from "preact/hooks"
import { html } from "./html.ts"
import { quote } from "./contacts.ts"
import { formatAmount, formatDate, periodWords } from "./format.ts"
import { ActionButton } from "./parts.ts"
import type { ChainView } from "./store.ts"

interface Form {
  name: string
  agent: string
  chainId: string
  token: string
  amount: string
  period: string
  perAction: string
  recipients: string
  threshold: string
  approvers: string
}

/** `name, 0xaddress` per line; a line with only an address is named by its position. */
export const parseRecipients = (text: string, chainId: number) =>
  text.split("\n").map((l) => l.trim()).filter((l) => l !== "").map((line, i) => {
    const m = /^(.*?)[,\s]*(0x[0-9a-fA-F]{40})$/.exec(line)
    if (m === null) throw new Error(`recipient line ${i + 1}: "name, 0x…address"`)
    return { name: m[1]!.trim() === "" ? `recipient ${i + 1}` : m[1]!.trim(), address: m[2]!, chainId }
  })

/** The build request of a filled form (what `POST /delegations/build` takes). */
export const grantRequest = (f: Form, me: string) => {
  const chainId = Number(f.chainId)
  const token = { symbol: f.token }
  const approvers = f.approvers.split(/[\s,]+/).filter((a) => a !== "")
  return {
    name: f.name.trim(),
    kind: "agent",
    delegateeAddress: f.agent.trim(),
    chainId,
    budgets: [{ token, amount: Number(f.amount), ...(f.period === "" ? {} : { period: { every: f.period } }) }],
    ...(f.perAction.trim() === "" ? {} : { perActionMax: { token, amount: Number(f.perAction) } }),
    ...(f.recipients.trim() === "" ? {} : { recipientAllowlist: parseRecipients(f.recipients, chainId) }),
    ...(f.threshold.trim() === "" ? {} : {
      approval: { required: 1, approvers: approvers.length === 0 ? [me] : approvers, thresholds: [{ token, amount: Number(f.threshold) }] }
    })
  }
}

const Field = ({ id, label, hint, children }: { id: string; label: string; hint?: string; children: unknown }) =>
  html`<div class="field"><label for=${id}>${label}</label>${children}${hint === undefined ? null : html`<p class="hint" id=${`${id}-hint`}>${hint}</p>`}</div>`

const Preview = ({ draft, busy, onSign, onDiscard }: { draft: any; busy: (k: string) => boolean; onSign: () => void; onDiscard: () => void }) => {
  const p = draft.build.policySet
  return html`<section id="grant-preview" class="card" aria-labelledby="preview-title">
    <h3 id="preview-title">Check before you sign: ${quote(draft.request.name)}</h3>
    <ul class="terms">
      ${(p.budgets as ReadonlyArray<any>).map((b) => html`<li>Budget <strong>${formatAmount(b.amount, b.token.symbol)}</strong> ${periodWords(b.period)}</li>`)}
      <li>At most <strong>${formatAmount(p.perActionMax.amount, p.perActionMax.token.symbol)}</strong> per action, <strong>${p.maxActions}</strong> actions</li>
      <li>${p.recipientAllowlist.length === 0 ? "To any recipient" : `Only to ${p.recipientAllowlist.map((r: any) => quote(r.name)).join(", ")}`}</li>
      ${p.approval === undefined ? null : html`<li>Above ${p.approval.thresholds.map((t: any) => formatAmount(t.amount, t.token.symbol)).join(", ")}: ${p.approval.required} of ${p.approval.approvers.length} approvals</li>`}
      <li>Until <strong>${formatDate(p.expiresAt)}</strong></li>
    </ul>
    <p class="human">${draft.build.humanSummary}</p>
    ${draft.build.simulation?.willSucceed === false ? html`<p class="error">The simulation says it would fail: ${draft.build.simulation.declineReason ?? "see the summary"}</p>` : null}
    <div class="actions">
      <${ActionButton} className="sign-grant primary" busy=${busy("grant-sign")} label="Sign and create the grant" onClick=${onSign} />
      <button type="button" class="discard" onClick=${onDiscard}>Change it</button>
    </div>
  </section>`
}

export const GrantForm = ({ chains, me, draft, busy, actions }: {
  chains: ReadonlyArray<ChainView>
  me: string
  draft: any
  busy: (k: string) => boolean
  actions: any
}) => {
  const [f, setF] = useState<Form>({
    name: "", agent: "", chainId: String(chains[0]?.account.chainId ?? ""), token: "USDC", amount: "", period: "",
    perAction: "", recipients: "", threshold: "", approvers: ""
  })
  const [error, setError] = useState("")
  const bind = (k: keyof Form) => ({
    id: `grant-${k}`,
    name: k,
    value: f[k],
    onInput: (e: Event) => setF({ ...f, [k]: (e.currentTarget as HTMLInputElement).value })
  })
  const submit = (e: Event) => {
    e.preventDefault()
    try {
      setError("")
      void actions.previewGrant(grantRequest(f, me))
    } catch (err) {
      setError((err as Error).message)
    }
  }
  if (draft !== undefined) return html`<${Preview} draft=${draft} busy=${busy} onSign=${actions.signGrant} onDiscard=${actions.discardGrant} />`
  return html`<section id="new-grant" aria-labelledby="new-grant-title">
    <h2 id="new-grant-title">Give an agent a budget</h2>
    <form id="grant-form" class="card form" onSubmit=${submit}>
      <${Field} id="grant-name" label="Name (for you)"><input ...${bind("name")} required maxlength="80" placeholder="Groceries agent" /><//>
      <${Field} id="grant-agent" label="The agent's address" hint="The account that will hold this budget."><input ...${bind("agent")} required pattern="0x[0-9a-fA-F]{40}" placeholder="0x…" autocomplete="off" spellcheck="false" /><//>
      <div class="row">
        <${Field} id="grant-chainId" label="Chain"><select ...${bind("chainId")} onChange=${bind("chainId").onInput}>${chains.map((c) => html`<option value=${String(c.account.chainId)}>${c.chainName}</option>`)}</select><//>
        <${Field} id="grant-token" label="Token"><select ...${bind("token")} onChange=${bind("token").onInput}><option>USDC</option><option>USDT</option></select><//>
      </div>
      <div class="row">
        <${Field} id="grant-amount" label="Budget"><input ...${bind("amount")} required type="number" min="0" step="any" inputmode="decimal" /><//>
        <${Field} id="grant-period" label="Renews"><select ...${bind("period")} onChange=${bind("period").onInput}>
          <option value="">Never (a total)</option><option value="day">Every day</option><option value="week">Every week</option><option value="month">Every 30 days</option>
        </select><//>
      </div>
      <${Field} id="grant-perAction" label="At most per action (optional)"><input ...${bind("perAction")} type="number" min="0" step="any" inputmode="decimal" /><//>
      <${Field} id="grant-recipients" label="Only to these recipients (optional)" hint="One per line: a name, then the address. Empty: any recipient."><textarea ...${bind("recipients")} rows="3" placeholder="shop, 0x…"></textarea><//>
      <div class="row">
        <${Field} id="grant-threshold" label="Ask me above (optional)" hint="A transfer above this needs an approval."><input ...${bind("threshold")} type="number" min="0" step="any" inputmode="decimal" /><//>
        <${Field} id="grant-approvers" label="Approvers" hint="Addresses; empty: you."><input ...${bind("approvers")} placeholder=${me} autocomplete="off" spellcheck="false" /><//>
      </div>
      ${error === "" ? null : html`<p class="error" role="alert">${error}</p>`}
      <div class="actions"><button type="submit" class="primary" disabled=${busy("grant-preview")}>Review the grant</button></div>
    </form>
  </section>`
}
