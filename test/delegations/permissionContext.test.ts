/**
 * The remembered permission context (Caveats.permissionContextOf): always what
 * `encodeDelegations` gives for that very delegation — a different caveat argument, term,
 * signature or salt is never answered with another's encoding.
 */
import { assert, describe, it } from "@effect/vitest"
import { encodeDelegations } from "@metamask/smart-accounts-kit/utils"
import { type Address, type Hex, toHex } from "viem"
import { type Delegation, permissionContextOf } from "../../src/delegations/Caveats.ts"

const word = (n: number): Hex => toHex(n, { size: 32 })
const address = (n: number) => toHex(n, { size: 20 }) as Address

const grant: Delegation = {
  delegate: address(1),
  delegator: address(2),
  authority: `0x${"f".repeat(64)}`,
  caveats: [
    { enforcer: address(10), terms: word(1_000), args: "0x" },
    { enforcer: address(11), terms: word(5), args: word(0) }
  ],
  salt: word(42),
  signature: `0x${"ab".repeat(65)}`
}

describe("permissionContextOf", () => {
  it("is encodeDelegations of the delegation it is given, remembered or not", () => {
    const variants: Array<Delegation> = [
      grant,
      { ...grant, caveats: [grant.caveats[0]!, { ...grant.caveats[1]!, args: word(1) }] },
      { ...grant, caveats: [{ ...grant.caveats[0]!, terms: word(999) }, grant.caveats[1]!] },
      { ...grant, signature: `0x${"cd".repeat(65)}` },
      { ...grant, salt: word(43) },
      { ...grant, delegate: address(3) }
    ]
    const expected = variants.map((d) => encodeDelegations([d]))
    assert.strictEqual(new Set(expected).size, variants.length)
    for (let round = 0; round < 2; round++) {
      variants.forEach((d, i) => assert.strictEqual(permissionContextOf(d), expected[i]))
    }
  })
})
