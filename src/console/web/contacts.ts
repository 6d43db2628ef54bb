/**
 * Names for addresses, from what the owner's own records hold: the signer itself, its accounts, each
 * grant's delegate (the grant's name), the recipients its grants allow, guardians and panic keys.
 * Names someone else wrote (a grant's, a recipient's) are shown quoted and bounded, never as a limit.
 */
import { cleanOutsideText } from "../../domain/OutsideText.ts"
import type { State } from "./store.ts"

export interface Contact {
  readonly name: string
  /** Written by someone else (the requester of a grant): shown in quotes. */
  readonly quoted: boolean
}

const MAX_NAME = 48
/**
 * Someone else's text on one line and at most `max` characters: no control, bidirectional or
 * zero-width character (each could reorder, hide or fake what is around it), line breaks as spaces
 * (src/domain/OutsideText.ts, the service's own rule).
 */
export const bounded = (text: string, max = MAX_NAME) => cleanOutsideText(String(text ?? ""), max)
/**
 * A name someone else wrote: in quotes and bounded, so it never reads as part of a sentence of ours;
 * a quote mark inside becomes a single one, so the name can never close the quote and go on as ours.
 */
export const quote = (text: string) => `“${bounded(text).replace(/["\u201c\u201d\u201e\u201f\u2033\uff02]/g, "'")}”`

export const contactsOf = (state: State): ReadonlyMap<string, Contact> => {
  const names = new Map<string, Contact>()
  const add = (address: string | undefined | null, name: string, quoted: boolean) => {
    if (address === undefined || address === null) return
    const key = address.toLowerCase()
    if (!names.has(key)) names.set(key, { name, quoted })
  }
  add(state.session?.signer.address, "You", false)
  for (const c of state.chains) {
    add(c.account.address, "Your account", false)
    for (const g of c.rules?.recovery?.guardians ?? []) add(g.address, g.label ?? "Guardian", g.label !== null)
    for (const p of c.rules?.panicKeys ?? []) add(p.panicKey, p.label, true)
    add(c.rules?.safeAddress, "Your safe address", false)
  }
  for (const g of state.grants) {
    add(g.delegateeAddress, g.name, true)
    for (const r of g.policySet.recipientAllowlist ?? []) add(r.address, r.name, true)
  }
  return names
}
