/** The anchored-history check (Anchored.ts): pure, no database. */
import { assert, describe, it } from "@effect/vitest"
import { checkAnchored } from "../../src/audit/Anchored.ts"

const h = (n: number) => `0x${n.toString(16).padStart(64, "0")}`

describe("checkAnchored", () => {
  const chain = [h(1), h(2), h(3), h(4)]
  it("a chain that extends every anchored head passes", () => {
    assert.isUndefined(checkAnchored(chain, []))
    assert.isUndefined(checkAnchored(chain, [{ length: 3, headHash: h(3) }, { length: 1, headHash: h(1) }]))
  })
  it("names the entry exactly when the anchors around it are adjacent", () => {
    const rewritten = [h(1), h(22), h(33), h(44)]
    const r = checkAnchored(rewritten, [{ length: 1, headHash: h(1) }, { length: 2, headHash: h(2) }, { length: 3, headHash: h(3) }])
    assert.strictEqual(r?.from, 2)
    assert.strictEqual(
      r?.message,
      `entry #2 was rewritten after it was anchored: anchored at length 2 with head ${h(2)}, the chain now has ${h(22)} at #2`
    )
  })
  it("names the range otherwise, and a chain cut short of an anchor", () => {
    const r = checkAnchored([h(1), h(22), h(33)], [{ length: 3, headHash: h(3) }])
    assert.strictEqual(r?.from, 1)
    assert.match(r?.message ?? "", /^an entry in #1\.\.#3 was rewritten/)
    const cut = checkAnchored([h(1)], [{ length: 1, headHash: h(1) }, { length: 3, headHash: h(3) }])
    assert.strictEqual(cut?.from, 2)
    assert.match(cut?.message ?? "", /the chain now has only 1 entries$/)
  })
})
