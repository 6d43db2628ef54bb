/** Small pieces the cards share: an address with its name and a copy button, a budget bar, an action button. */
import { html } from "./html.ts"
import { type Contact, quote } from "./contacts.ts"
import { shortAddress } from "./format.ts"
import { barShares } from "./format.ts"

const copy = (address: string, button: HTMLButtonElement) => {
  const done = (text: string) => {
    button.textContent = text
    setTimeout(() => (button.textContent = "Copy"), 1500)
  }
  navigator.clipboard.writeText(address).then(() => done("Copied"), () => done("Copy failed"))
}

/** `shop 0x0000…05a1 [Copy]`: the contact's name when known, the address shortened, the whole one copied. */
export const Address = ({ address, contacts }: { address: string; contacts: ReadonlyMap<string, Contact> }) => {
  const contact = contacts.get(address.toLowerCase())
  return html`<span class="address">
    ${contact === undefined ? null : html`<span class="contact">${contact.quoted ? quote(contact.name) : contact.name}</span> `}
    <code title=${address}>${shortAddress(address)}</code>
    <button type="button" class="copy" aria-label=${`Copy the address ${address}`}
      onClick=${(e: Event) => copy(address, e.currentTarget as HTMLButtonElement)}>Copy</button>
  </span>`
}

/** A budget bar: spent (solid), reserved (hatched), left (empty); its numbers are written beside it. */
export const Bar = ({ limit, spent, reserved, label }: { limit: number; spent: number; reserved: number; label: string }) => {
  const share = barShares(limit, spent, reserved)
  return html`<div class="bar" role="img" aria-label=${label}>
    <div class="fill spent" style=${{ width: `${share.spent}%` }}></div>
    <div class="fill reserved" style=${{ width: `${share.reserved}%` }}></div>
  </div>`
}

/** A button that says when its action is under way. */
export const ActionButton = ({ busy, onClick, label, className = "", disabled = false }: {
  busy: boolean
  onClick: () => void
  label: string
  className?: string
  disabled?: boolean
}) =>
  html`<button type="button" class=${className} disabled=${busy || disabled} aria-busy=${busy ? "true" : "false"} onClick=${onClick}>
    ${busy ? `${label}…` : label}
  </button>`
