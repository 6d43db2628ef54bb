/** Setting up the account's safety on one chain: a safe address, a panic key, guardians; what is set, read from the chain. */
import { useState } from "preact/hooks"
import { html } from "./html.ts"
import { type Contact, quote } from "./contacts.ts"
import { parseRecipients } from "./GrantForm.ts"
import { Address } from "./parts.ts"
import type { ChainView } from "./store.ts"

const ChainSafety = ({ c, contacts, busy, actions }: { c: ChainView; contacts: ReadonlyMap<string, Contact>; busy: (k: string) => boolean; actions: any }) => {
  const id = c.account.id
  const [safe, setSafe] = useState("")
  const [panic, setPanic] = useState({ address: "", label: "" })
  const [guardians, setGuardians] = useState({ lines: "", threshold: "1" })
  const [error, setError] = useState("")
  const rules = c.rules
  const k = c.account.chainId
  const input = (set: (v: string) => void) => (e: Event) => set((e.currentTarget as HTMLInputElement).value)
  return html`<article class="card safety" data-chain-id=${k}>
    <h3>${c.chainName}</h3>
    <h4>Safe address</h4>
    <p class="small">Where “withdraw to safety” sends everything: ${rules?.safeAddress
      ? html`<span class="safe"><${Address} address=${rules.safeAddress} contacts=${contacts} /></span>` : html`<span class="muted">none set</span>`}</p>
    <form class="inline" onSubmit=${(e: Event) => { e.preventDefault(); void actions.setSafeAddress(id, safe.trim()) }}>
      <label for=${`safe-${k}`}>New safe address</label>
      <input id=${`safe-${k}`} class="safe-input" required pattern="0x[0-9a-fA-F]{40}" placeholder="0x…" value=${safe} onInput=${input(setSafe)} autocomplete="off" spellcheck="false" />
      <button type="submit" class="set-safe" disabled=${busy(`safe:${id}`)}>Set (sign)</button>
    </form>
    <h4>Panic keys</h4>
    <ul class="keys">${(rules?.panicKeys ?? []).map((p: any) => html`<li class="panic-key" data-installed=${String(p.installedAt !== null)}>
      ${quote(p.label)} <${Address} address=${p.panicKey} contacts=${new Map()} /> · ${p.installedAt === null ? "not installed" : p.enabledOnChain ? "can freeze" : "removed"}</li>`)}
      ${(rules?.panicKeys ?? []).length === 0 ? html`<li class="muted">None: a panic key (a trusted contact's or a cold key) can freeze the account, and nothing else.</li>` : null}</ul>
    <form class="inline" onSubmit=${(e: Event) => { e.preventDefault(); void actions.addPanicKey(id, panic.address.trim(), panic.label.trim()) }}>
      <label for=${`panic-${k}`}>Panic key address</label>
      <input id=${`panic-${k}`} class="panic-input" required pattern="0x[0-9a-fA-F]{40}" placeholder="0x…" value=${panic.address} onInput=${input((v) => setPanic({ ...panic, address: v }))} autocomplete="off" spellcheck="false" />
      <label for=${`panic-label-${k}`}>Its name</label>
      <input id=${`panic-label-${k}`} class="panic-label" maxlength="64" placeholder="Bob (brother)" value=${panic.label} onInput=${input((v) => setPanic({ ...panic, label: v }))} />
      <button type="submit" class="add-panic" disabled=${busy(`panic:${id}`)}>Add (sign twice)</button>
    </form>
    <h4>Guardians</h4>
    ${rules?.recovery === null || rules?.recovery === undefined ? html`<p class="muted small">This chain has no recovery contract.</p>` : html`
      <ul class="keys">${rules.recovery.guardians.map((g: any) => html`<li class="guardian"><${Address} address=${g.address} contacts=${contacts} /></li>`)}
        ${rules.recovery.guardians.length === 0 ? html`<li class="muted">None yet.</li>` : html`<li class="small">Any ${rules.recovery.threshold} of them can recover the account after a delay of ${Math.round(rules.recovery.delaySeconds / 3600)} hours.</li>`}</ul>
      <form onSubmit=${(e: Event) => {
        e.preventDefault()
        try {
          setError("")
          const list = parseRecipients(guardians.lines, k).map((g) => ({ address: g.address, label: g.name.startsWith("recipient ") ? "" : g.name }))
          void actions.addGuardians(id, list, Number(guardians.threshold))
        } catch (err) {
          setError((err as Error).message.replace("recipient", "guardian"))
        }
      }}>
        <label for=${`guardians-${k}`}>New guardians, one per line: a name, then the address</label>
        <textarea id=${`guardians-${k}`} class="guardians-input" rows="2" required placeholder="Carol, 0x…" value=${guardians.lines} onInput=${input((v) => setGuardians({ ...guardians, lines: v }))}></textarea>
        <label for=${`threshold-${k}`}>How many must agree (over all guardians)</label>
        <input id=${`threshold-${k}`} class="threshold-input" type="number" min="1" max="16" required value=${guardians.threshold} onInput=${input((v) => setGuardians({ ...guardians, threshold: v }))} />
        ${error === "" ? null : html`<p class="error" role="alert">${error}</p>`}
        <button type="submit" class="add-guardians" disabled=${busy(`guardians:${id}`)}>Add guardians (sign)</button>
      </form>`}
  </article>`
}

export const Safety = ({ chains, contacts, busy, actions }: { chains: ReadonlyArray<ChainView>; contacts: ReadonlyMap<string, Contact>; busy: (k: string) => boolean; actions: any }) =>
  html`<section id="safety" aria-labelledby="safety-title">
    <h2 id="safety-title">Safety</h2>
    <p class="muted small">Each change is an operation of your account: you sign it, the chain holds it.</p>
    ${chains.map((c) => html`<${ChainSafety} key=${c.account.id} c=${c} contacts=${contacts} busy=${busy} actions=${actions} />`)}
  </section>`
