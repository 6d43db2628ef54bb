/** The owner's account on each chain: balances per token, frozen or not, the safe address; freeze and unfreeze. */
import { html } from "./html.ts"
import type { Contact } from "./contacts.ts"
import { formatNumber } from "./format.ts"
import { ActionButton, Address } from "./parts.ts"
import type { ChainView } from "./store.ts"

export const Accounts = ({ chains, contacts, busy, onFreeze }: {
  chains: ReadonlyArray<ChainView>
  contacts: ReadonlyMap<string, Contact>
  busy: (key: string) => boolean
  onFreeze: (accountId: string, frozen: boolean) => void
}) =>
  html`<section id="accounts" aria-labelledby="accounts-title">
    <h2 id="accounts-title">Your account</h2>
    <div class="chains">
      ${chains.map((c) => {
        const frozen = c.rules?.frozen ?? c.account.frozen
        return html`<article class="card chain" data-chain-id=${c.account.chainId} data-frozen=${String(frozen)}>
          <header class="card-head">
            <h3>${c.chainName}</h3>
            <span class=${`badge ${frozen ? "frozen" : "active"}`}>${frozen ? "frozen" : "active"}</span>
          </header>
          <p class="small"><${Address} address=${c.account.address} contacts=${new Map()} /></p>
          <dl class="balances">
            ${c.balances.map((b) => html`<div data-token=${b.symbol}><dt>${b.symbol}</dt><dd>${formatNumber(Number(b.amount))}</dd></div>`)}
          </dl>
          <p class="small">Safe address: ${c.rules?.safeAddress
            ? html`<span class="safe"><${Address} address=${c.rules.safeAddress} contacts=${contacts} /></span>`
            : html`<span class="muted">none set</span>`}</p>
          ${c.error === undefined ? null : html`<p class="small error">Could not read this account's rules: ${c.error}</p>`}
          <div class="actions">
            <${ActionButton} className=${frozen ? "unfreeze" : "freeze danger"} busy=${busy(`freeze:${c.account.id}`)}
              label=${frozen ? "Unfreeze" : "Freeze every grant"} onClick=${() => onFreeze(c.account.id, !frozen)} />
          </div>
        </article>`
      })}
    </div>
  </section>`
