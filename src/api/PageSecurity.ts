/**
 * Pages that cannot be framed or sniffed (docs/edge.md, "Pages"; issue 41 item 5). The edge
 * stamps every answer with `X-Content-Type-Options: nosniff`, and every HTML answer (the console,
 * the API reference, the home page, any page added later) with:
 *
 * - `Content-Security-Policy`: everything from this origin only (`default-src 'self'`), never
 *   framed (`frame-ancestors 'none'`), no plugins, no `<base>`, forms only to this origin. Inline
 *   code is refused, except the exact inline `<script>` and `<style>` blocks and `style`
 *   attributes the page itself was served with (their SHA-256 in `script-src` / `style-src`): a
 *   block injected into the page (or rewritten by it) runs nowhere. A page may set a policy of
 *   its own (the reference: `pagePolicy(html, { runtimeStyles: true })`); the edge keeps it.
 * - `X-Frame-Options: DENY` (browsers without `frame-ancestors`) and `Referrer-Policy: no-referrer`
 *   (links out carry no URL of the console).
 */
import { createHash } from "node:crypto"

/** Every answer: the browser uses the declared `Content-Type`, never a guess. */
export const everyAnswer: Readonly<Record<string, string>> = { "x-content-type-options": "nosniff" }

const inlineBlock = /<(script|style)\b([^>]*)>([\s\S]*?)<\/\1\s*>/gi
const styleAttribute = /<[a-z][^>]*?\sstyle\s*=\s*(?:"([^"]*)"|'([^']*)')/gi

const sha256 = (text: string) => `'sha256-${createHash("sha256").update(text, "utf8").digest("base64")}'`

/**
 * The hashes of a page's inline `<script>` (not those loaded by `src`) and `<style>` blocks, and
 * of its `style` attributes (allowed by hash only with `'unsafe-hashes'`).
 */
export const inlineHashes = (html: string) => {
  const scripts = new Set<string>()
  const styles = new Set<string>()
  const attributes = new Set<string>()
  for (const [, tag, attrs, body] of html.matchAll(inlineBlock)) {
    if (body === undefined || body.length === 0) continue
    if (tag!.toLowerCase() === "style") styles.add(sha256(body))
    else if (!/\bsrc\s*=/i.test(attrs ?? "")) scripts.add(sha256(body))
  }
  for (const [, double, single] of html.matchAll(styleAttribute)) attributes.add(sha256(double ?? single ?? ""))
  return { scripts: [...scripts], styles: [...styles], attributes: [...attributes] }
}

/**
 * The Content-Security-Policy of a page whose HTML is `html`. `runtimeStyles`: the page's script
 * (loaded from here, pinned like any other) writes `<style>` elements and `style` attributes as it
 * runs, whose text is not known beforehand (the reference's Scalar bundle): inline styles are
 * allowed, scripts stay as pinned as on any page, and nothing comes from anywhere else.
 */
export const pagePolicy = (html: string, options: { readonly runtimeStyles?: boolean } = {}): string => {
  const { scripts, styles, attributes } = inlineHashes(html)
  const styleSources = options.runtimeStyles === true
    ? ["'unsafe-inline'"]
    : [...styles, ...(attributes.length === 0 ? [] : ["'unsafe-hashes'", ...attributes])]
  return [
    "default-src 'self'",
    ["script-src 'self'", ...scripts].join(" "),
    ["style-src 'self'", ...styleSources].join(" "),
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'"
  ].join("; ")
}

/** The headers of an HTML page whose body is `html` (plus `everyAnswer`); `policy`: the page's own. */
export const pageHeaders = (html: string, policy?: string): Readonly<Record<string, string>> => ({
  ...everyAnswer,
  "content-security-policy": policy ?? pagePolicy(html),
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer"
})

export const isHtml = (contentType: string | undefined) => contentType !== undefined && /^\s*text\/html\b/i.test(contentType)
