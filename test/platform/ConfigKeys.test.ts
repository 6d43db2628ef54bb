/**
 * docs/operations.md keeps ONE table of every configuration key the service reads. This test
 * reads `src/` for every key (Effect `Config` constructors, `Config.schema` / `Config.Literals`,
 * and the small helpers that hand a key to them, such as `perMinute("RATE_LIMIT_…")` or
 * `tokenConfig("TOKEN_USD")` with its `${prefix}_ADDRESS`), and fails naming each key missing
 * from the table, and each row of the table that names a key no longer read.
 * A key built from a chain id (`CHAIN_${chainId}_PAYMASTER_SIGNER_KEY`) is written
 * `CHAIN_<id>_PAYMASTER_SIGNER_KEY`.
 */
import { assert, describe, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"

const root = path.resolve(import.meta.dirname, "../..")

const sourceFiles = (dir: string): Array<string> =>
  fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name)
    return e.isDirectory() ? sourceFiles(p) : e.name.endsWith(".ts") ? [p] : []
  })

/** The text of the call's arguments starting at `open` (the index of its `(`). */
const argumentsAt = (text: string, open: number): string => {
  let depth = 0
  for (let i = open; i < text.length; i++) {
    if (text[i] === "(") depth++
    else if (text[i] === ")" && --depth === 0) return text.slice(open + 1, i)
  }
  return text.slice(open + 1)
}

const LITERAL = /^\s*(["'`])([^"'`]*)\1\s*$/
const literalOf = (arg: string | undefined) => (arg === undefined ? undefined : LITERAL.exec(arg)?.[2])

/** Top-level arguments of an argument list. */
const splitArguments = (args: string): Array<string> => {
  const out: Array<string> = []
  let depth = 0
  let start = 0
  for (let i = 0; i < args.length; i++) {
    const c = args[i]
    if (c === "(" || c === "[" || c === "{") depth++
    else if (c === ")" || c === "]" || c === "}") depth--
    else if (c === "," && depth === 0) {
      out.push(args.slice(start, i))
      start = i + 1
    }
  }
  out.push(args.slice(start))
  return out.filter((a) => a.trim() !== "")
}

/** Every key read in `src/`, as the table writes them. */
const keysReadInSource = (): Set<string> => {
  const files = sourceFiles(path.join(root, "src")).map((f) => fs.readFileSync(f, "utf8"))
  /** A key argument: a literal, or a parameter of a helper (resolved at its call sites). */
  const raw: Array<{ key: string; text: string }> = []
  for (const text of files) {
    // Constructors (`Config.String`, `Config.Duration`, ..., and `Config.schema`); not combinators (`withDefault`, `map`, ...).
    for (const m of text.matchAll(/\bConfig\.([A-Z][A-Za-z]*|schema)\(/g)) {
      const args = splitArguments(argumentsAt(text, m.index! + m[0].length - 1))
      const arg = m[1] === "schema" || m[1] === "Literals" ? args[args.length - 1] : args[0]
      if (arg !== undefined) raw.push({ key: arg.trim(), text })
    }
  }
  const keys = new Set<string>()
  /** A helper whose parameter `param` becomes (part of) a key: its name, in the same text. */
  const helperOf = (text: string, param: string) =>
    [...text.matchAll(new RegExp(`(?:const|function)\\s+(\\w+)\\s*=?\\s*\\(\\s*${param}\\s*:\\s*string`, "g"))].map((m) => m[1]!)
  const add = (key: string, text: string, depth = 0): void => {
    const literal = literalOf(key)
    if (literal === undefined) {
      // A bare parameter (`Config.Int(key)`) or a call (`AddressConfig(...)`): found at the helper's call sites.
      const param = /^\w+$/.exec(key)?.[0]
      if (param === undefined || depth > 3) return
      for (const helper of helperOf(text, param)) addCallsOf(helper, (k) => add(k, text, depth + 1))
      return
    }
    const templated = /\$\{(\w+)\}/.exec(literal)
    if (templated === null) return void keys.add(literal.replace(/\$\{[^}]+\}/g, "<id>"))
    const helpers = helperOf(text, templated[1]!)
    if (helpers.length === 0) return void keys.add(literal.replace(/\$\{[^}]+\}/g, "<id>"))
    for (const helper of helpers) {
      addCallsOf(helper, (prefix) => {
        const value = literalOf(prefix)
        if (value !== undefined) add(`"${literal.replace(`\${${templated[1]}}`, value)}"`, text, depth + 1)
      })
    }
  }
  const addCallsOf = (helper: string, found: (arg: string) => void) => {
    for (const text of files) {
      for (const m of text.matchAll(new RegExp(`\\b${helper}\\(`, "g"))) {
        const first = splitArguments(argumentsAt(text, m.index! + m[0].length - 1))[0]
        if (first !== undefined && literalOf(first) !== undefined) found(first.trim())
      }
    }
  }
  for (const { key, text } of raw) add(key, text)
  return new Set([...keys].filter((k) => /^[A-Z][A-Z0-9_]*(<id>[A-Z0-9_]*)*$/.test(k)))
}

/** The keys of the table in docs/operations.md (first column, in backticks). */
const keysInGuide = (): Set<string> => {
  const text = fs.readFileSync(path.join(root, "docs/operations.md"), "utf8")
  const start = text.indexOf("## Configuration")
  assert.isAtLeast(start, 0, "docs/operations.md has a Configuration section")
  const section = text.slice(start, text.indexOf("\n## ", start + 1))
  return new Set([...section.matchAll(/^\| `([A-Z][A-Z0-9_<>a-z]*)`[^|`]*\|/gm)].map((m) => m[1]!))
}

describe("configuration keys", () => {
  it("every key read in src/ is in docs/operations.md's table, and every row is a key read", () => {
    const read = keysReadInSource()
    // The extraction itself finds the kinds of keys there are (a helper's, a template's, a schema's).
    for (const k of ["DATABASE_URL", "RATE_LIMIT_BUILDS_PER_MINUTE", "TOKEN_USD_ADDRESS", "CHAINS", "LOG_LEVEL", "CHAIN_<id>_PAYMASTER_SIGNER_KEY", "PAYMASTER_ADDRESS"]) {
      assert.isTrue(read.has(k), `the extraction misses ${k}`)
    }
    const guide = keysInGuide()
    const missing = [...read].filter((k) => !guide.has(k)).sort()
    const stale = [...guide].filter((k) => !read.has(k)).sort()
    assert.deepStrictEqual(missing, [], "keys read in src/ but missing from docs/operations.md")
    assert.deepStrictEqual(stale, [], "rows of docs/operations.md naming no key read in src/")
  })
})
