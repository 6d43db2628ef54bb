/**
 * The payment delegation's caveats, built and read back (packages/x402-erc7710/src/PaymentDelegation.ts),
 * and the shape of a delegation chain: pure functions, the local network's enforcer addresses.
 */
import { assert, describe, it } from "@effect/vitest"
import { ROOT_AUTHORITY } from "@metamask/smart-accounts-kit"
import { hashDelegation } from "@metamask/smart-accounts-kit/utils"
import type { Hex } from "viem"
import { randomSalt } from "../../../src/delegations/Caveats.ts"
import { delegationHashOf } from "../../../src/follower/Redemptions.ts"
import { paymentDelegationUnder } from "../../../src/payments/Authorize.ts"
import {
  checkChain,
  decodeChain,
  makePaymentDelegation,
  paymentCaveats,
  permissionContextOf,
  readPaymentTerms
} from "@das/x402-erc7710"
import { net, randomAddress, signGrant, USD, usdc } from "./support.ts"

const env = net.delegation
const facilitator = randomAddress()
const terms = (scheme: "exact" | "upto") => ({ scheme, asset: usdc, payTo: randomAddress(), amount: USD(1.25), validBefore: 2_000_000_000 })
/** A grant-shaped parent: only its hash and delegate matter here. */
const parent = { delegate: randomAddress(), delegator: randomAddress(), authority: ROOT_AUTHORITY as Hex, caveats: [], salt: randomSalt(), signature: "0x" as Hex }

describe("the payment delegation", () => {
  it("reads back exactly the terms it was built with, for each scheme", () => {
    for (const scheme of ["exact", "upto"] as const) {
      const t = terms(scheme)
      const leaf = makePaymentDelegation(env, { parent, facilitator, terms: t, salt: randomSalt() })
      assert.strictEqual(leaf.delegate, facilitator)
      assert.strictEqual(leaf.delegator, parent.delegate)
      assert.strictEqual(leaf.authority, hashDelegation(parent))
      assert.deepStrictEqual(readPaymentTerms(env, leaf, scheme), { ok: true, terms: t })
    }
  })

  it("the service's payment delegation (the parent's hash from its leg's permission id) is the package's, and hashes as the kit hashes it", () => {
    const withCaveats = {
      ...parent,
      caveats: [{ enforcer: randomAddress(), terms: "0x1234" as Hex, args: "0x" as Hex }, { enforcer: randomAddress(), terms: `0x${"ab".repeat(100)}` as Hex, args: "0x01" as Hex }]
    }
    for (const grant of [parent, withCaveats]) {
      for (const scheme of ["exact", "upto"] as const) {
        const t = terms(scheme)
        const salt = randomSalt()
        const ours = paymentDelegationUnder(env, { permissionId: hashDelegation(grant), delegation: grant }, { facilitator, terms: t, salt })
        const theirs = makePaymentDelegation(env, { parent: grant, facilitator, terms: t, salt })
        assert.deepStrictEqual(ours, theirs, scheme)
        assert.strictEqual(delegationHashOf({ ...ours, salt: BigInt(ours.salt) }), hashDelegation(theirs), `${scheme}: the payment hash`)
      }
    }
    // A permission id stored upper-case still gives the package's (lower-case) authority.
    const upper = paymentDelegationUnder(env, { permissionId: hashDelegation(parent).toUpperCase().replace("0X", "0x") as Hex, delegation: parent }, {
      facilitator,
      terms: terms("exact"),
      salt: randomSalt()
    })
    assert.strictEqual(upper.authority, hashDelegation(parent))
  })

  it("names its caveats by enforcer: exact pins the execution; upto caps, pins the recipient, forbids value; both once, before a deadline", () => {
    const names = (scheme: "exact" | "upto") => {
      const byAddress = Object.fromEntries(Object.entries(env.caveatEnforcers).map(([name, address]) => [address.toLowerCase(), name]))
      return paymentCaveats(env, terms(scheme)).map((c) => byAddress[c.enforcer.toLowerCase()])
    }
    assert.deepStrictEqual(names("exact"), ["ExactExecutionEnforcer", "LimitedCallsEnforcer", "TimestampEnforcer"])
    assert.deepStrictEqual(names("upto"), ["ERC20TransferAmountEnforcer", "AllowedCalldataEnforcer", "ValueLteEnforcer", "LimitedCallsEnforcer", "TimestampEnforcer"])
  })

  it("refuses to read a leaf as the other scheme, or one whose caveats repeat or are missing", () => {
    const exact = makePaymentDelegation(env, { parent, facilitator, terms: terms("exact"), salt: randomSalt() })
    const upto = makePaymentDelegation(env, { parent, facilitator, terms: terms("upto"), salt: randomSalt() })
    assert.include(String((readPaymentTerms(env, exact, "upto") as { reason: string }).reason), "no ceiling")
    assert.include(String((readPaymentTerms(env, upto, "exact") as { reason: string }).reason), "does not pin its execution")
    const twice = { ...exact, caveats: [...exact.caveats, exact.caveats[1]!] }
    assert.include(String((readPaymentTerms(env, twice, "exact") as { reason: string }).reason), "repeats a caveat")
    const unbounded = { ...upto, caveats: upto.caveats.filter((c) => c.enforcer !== env.caveatEnforcers["ValueLteEnforcer"]) }
    assert.include(String((readPaymentTerms(env, unbounded, "upto") as { reason: string }).reason), "allows native value")
  })

  it("a chain is well formed only leaf to root, linked by hash and delegate, ending in a root delegation", async () => {
    const owner = { eoa: { signTypedData: async () => "0x" as Hex }, address: randomAddress() }
    const grant = (await signGrant(owner as never, randomAddress())).grant
    const leaf = { ...makePaymentDelegation(env, { parent: grant, facilitator, terms: terms("exact"), salt: randomSalt() }), signature: "0x01" as Hex }
    const chain = decodeChain(permissionContextOf([leaf, grant]))!
    const ok = checkChain(chain)
    assert.isTrue(ok.ok)
    assert.include((checkChain([grant, leaf]) as { reason: string }).reason, "authority")
    assert.include((checkChain([leaf]) as { reason: string }).reason, "root delegation")
    assert.include((checkChain([{ ...leaf, delegator: randomAddress() }, grant]) as { reason: string }).reason, "delegator")
    assert.include((checkChain([]) as { reason: string }).reason, "no delegation")
    assert.isUndefined(decodeChain("0xdeadbeef"))
  })
})
