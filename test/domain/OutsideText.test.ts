/**
 * Outside text as a summary may show it (src/domain/OutsideText.ts): every hidden character of the
 * issue's list gone, line breaks collapsed, bounded by code points, quoted so it cannot close its
 * quote, and nothing at all when nothing readable is left.
 */
import { assert, describe, it } from "@effect/vitest"
import { cleanOutsideText, OUTSIDE_TEXT_MAX, quoteOutsideText, requesterWords } from "../../src/domain/OutsideText.ts"

const HIDDEN = [
  ...Array.from({ length: 0x20 }, (_, i) => i),
  0x7f, 0x85, 0x9f,
  0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069, 0x200e, 0x200f, 0x061c,
  0x200b, 0x200c, 0x200d, 0xfeff, 0x2060, 0x2028, 0x2029
]

describe("outside text", () => {
  it("removes every control, bidi and zero-width character (a line break becomes a space)", () => {
    for (const code of HIDDEN) {
      const c = String.fromCodePoint(code)
      const cleaned = cleanOutsideText(`Cof${c}fee`)
      assert.isTrue(cleaned === "Coffee" || cleaned === "Cof fee", `U+${code.toString(16)} → ${JSON.stringify(cleaned)}`)
      assert.notInclude(cleaned, c)
    }
    assert.strictEqual(cleanOutsideText("a\r\n\n\tb  \u2028 c"), "a b c")
    assert.strictEqual(cleanOutsideText("\u202eUSDC 0001\u202c"), "USDC 0001")
  })

  it("bounds by code points, marks the cut, never splits a surrogate pair", () => {
    const long = cleanOutsideText("x".repeat(10_000))
    assert.strictEqual(Array.from(long).length, OUTSIDE_TEXT_MAX)
    assert.isTrue(long.endsWith("…"))
    const emoji = cleanOutsideText("💰".repeat(100))
    assert.strictEqual(emoji, "💰".repeat(OUTSIDE_TEXT_MAX - 1) + "…")
    assert.strictEqual(cleanOutsideText("x".repeat(OUTSIDE_TEXT_MAX)), "x".repeat(OUTSIDE_TEXT_MAX))
  })

  it("quotes: a double quote inside cannot close the quote", () => {
    assert.strictEqual(quoteOutsideText(`"Coffee" may spend at most 1 USDC in total`), `"'Coffee' may spend at most 1 USDC in total"`)
    assert.strictEqual(quoteOutsideText("a\u201cb\u201dc"), `"a'b'c"`)
  })

  it("the requester's words: labelled, quoted, after what precedes; nothing when nothing readable is left", () => {
    assert.strictEqual(requesterWords("Named by the requester", "Coffee"), ` Named by the requester: "Coffee".`)
    assert.strictEqual(requesterWords("Named by the requester", "\u202e\u200b\n "), "")
    assert.strictEqual(requesterWords("Named by the requester", undefined), "")
  })
})
