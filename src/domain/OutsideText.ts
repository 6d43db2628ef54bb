/**
 * Text from outside (an ERC-7715 `justification`, a grant's or an agent's name, a label, a
 * contact's name) as it may stand in anything a person reads or signs: bounded, with no control,
 * bidirectional or zero-width character (each could reorder, hide or fake what is around it), on
 * one line, and always quoted after the limits as the requester's words, never where a limit is
 * read (docs/decisions.md, "Summaries from the chain's terms alone"). Pure functions, used by
 * every feature that writes a summary, a card or a log line.
 */

/** Most characters (code points) of outside text a summary shows. */
export const OUTSIDE_TEXT_MAX = 64

/**
 * C0 and C1 controls and DEL; the bidi embeddings, overrides and isolates (U+202A-202E,
 * U+2066-2069), the marks (U+200E/F, U+061C); the zero-width characters (U+200B-200D, U+2060,
 * U+FEFF); and the line and paragraph separators (U+2028/9), which break a line as a newline does.
 */
const HIDDEN = /[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2060-\u2069\u061c\ufeff\u2028\u2029]/gu
/** Whitespace that a reader could take for a line break or a gap: collapsed to one space. */
const BREAKS = /[\s\u0085\u2028\u2029]+/gu

/**
 * The text cleaned: U+FEFF (which JavaScript counts as a space) goes first; line breaks and other runs of whitespace become one space (before the hidden
 * characters go, so a newline still separates words), hidden characters are removed, the ends are
 * trimmed, and the rest is cut to `max` code points (a cut ends in "…", and never splits a pair).
 */
export const cleanOutsideText = (text: string, max: number = OUTSIDE_TEXT_MAX): string => {
  const flat = text.replace(/\ufeff/g, "").replace(BREAKS, " ").replace(HIDDEN, "").replace(/ {2,}/g, " ").trim()
  const points = Array.from(flat)
  return points.length <= max ? flat : `${points.slice(0, max - 1).join("").trimEnd()}…`
}

/**
 * The cleaned text in double quotes; a double quote inside becomes a single one, so the quoted
 * words can never close the quote and go on as if the summary said it.
 */
export const quoteOutsideText = (text: string, max: number = OUTSIDE_TEXT_MAX): string =>
  `"${cleanOutsideText(text, max).replace(/["\u201c\u201d\u201e\u201f\u2033\uff02]/g, "'")}"`

/**
 * The requester's words that follow a summary's limits: ` Named by the requester: "Coffee".`,
 * or nothing when there are none (empty once cleaned).
 */
export const requesterWords = (label: string, text: string | undefined): string => {
  if (text === undefined || cleanOutsideText(text) === "") return ""
  return ` ${label}: ${quoteOutsideText(text)}.`
}
