/**
 * Reading a delegated action from logs alone (src/delegations/Redemptions.ts): the
 * delegation hash equals the kit's (the permission id), and only the delegator's own
 * transfers inside the redemption's window count.
 */
import { assert, describe, it } from "@effect/vitest"
import { hashDelegation } from "@metamask/smart-accounts-kit/utils"
import { type Address, encodeAbiParameters, encodeEventTopics, erc20Abi, hashStruct, type Hex, keccak256, pad, toHex } from "viem"
import { delegationHashOf, redemptionsIn, transfersOut } from "../../src/follower/Redemptions.ts"
import { DelegationManager } from "@metamask/delegation-abis"

const a = (n: number) => pad(`0x${n.toString(16)}`, { size: 20 }) as Address

const transferLog = (token: Address, from: Address, to: Address, value: bigint, logIndex: number) => ({
  address: token,
  topics: encodeEventTopics({ abi: erc20Abi, eventName: "Transfer", args: { from, to } }) as ReadonlyArray<Hex>,
  data: encodeAbiParameters([{ type: "uint256" }], [value]),
  logIndex
})

describe("redemptions from logs", () => {
  it("the delegation hash is the kit's (the permission id)", () => {
    const delegation = {
      delegate: a(1),
      delegator: a(2),
      authority: `0x${"ff".repeat(32)}` as Hex,
      caveats: [{ enforcer: a(3), terms: "0x1234" as Hex, args: "0xabcd" as Hex }, { enforcer: a(4), terms: "0x" as Hex, args: "0x" as Hex }],
      salt: 77n,
      signature: "0x" as Hex
    }
    assert.strictEqual(delegationHashOf(delegation), hashDelegation(delegation as never))
  })

  it("the hash with its type hashes computed once is EIP-712's, for any number and size of caveats", () => {
    const types = {
      Delegation: [
        { name: "delegate", type: "address" },
        { name: "delegator", type: "address" },
        { name: "authority", type: "bytes32" },
        { name: "caveats", type: "Caveat[]" },
        { name: "salt", type: "uint256" }
      ],
      Caveat: [{ name: "enforcer", type: "address" }, { name: "terms", type: "bytes" }]
    } as const
    for (let n = 0; n < 6; n++) {
      const caveats = Array.from({ length: n }, (_, i) => ({
        enforcer: a(100 + i),
        // Empty, short, a word, and longer than a word.
        terms: (i % 4 === 0 ? "0x" : toHex(new Uint8Array(i * 17).map((_, j) => (j * 31 + n) & 0xff))) as Hex,
        args: "0x01" as Hex
      }))
      const delegation = {
        delegate: a(7 + n),
        delegator: a(50 + n),
        authority: n % 2 === 0 ? (`0x${"ff".repeat(32)}` as Hex) : keccak256(toHex(`parent ${n}`)),
        caveats,
        salt: 2n ** BigInt(40 * n) + BigInt(n),
        signature: "0x" as Hex
      }
      const viemHash = hashStruct({
        types,
        primaryType: "Delegation",
        data: { ...delegation, caveats: caveats.map((c) => ({ enforcer: c.enforcer, terms: c.terms })) }
      })
      assert.strictEqual(delegationHashOf(delegation), viemHash, `${n} caveats`)
      assert.strictEqual(delegationHashOf(delegation), hashDelegation(delegation as never), `${n} caveats (the kit)`)
    }
  })

  it("a redemption log read again (kept decoded) gives the same facts, with each log's own index; another contract's is not one", () => {
    const manager = a(900)
    const event = DelegationManager.find((x) => x.type === "event" && x.name === "RedeemedDelegation")!
    const delegation = {
      delegate: a(1),
      delegator: a(2),
      authority: `0x${"ff".repeat(32)}` as Hex,
      caveats: [{ enforcer: a(3), terms: "0x1234" as Hex, args: "0xabcd" as Hex }],
      salt: 5n,
      signature: "0x99" as Hex
    }
    const topics = encodeEventTopics({ abi: [event], eventName: "RedeemedDelegation", args: { rootDelegator: a(2), redeemer: a(1) } } as never) as ReadonlyArray<Hex>
    const data = encodeAbiParameters((event as { inputs: ReadonlyArray<{ indexed?: boolean }> }).inputs.filter((i) => i.indexed !== true) as never, [delegation] as never)
    const log = (logIndex: number, address = manager) => ({ address, topics, data, logIndex })
    const first = redemptionsIn(manager, [log(3)])
    const again = redemptionsIn(manager, [log(8), log(9, a(901)), transferLog(a(20), a(2), a(30), 1n, 10)])
    const expected = { rootDelegator: a(2), redeemer: a(1), delegate: a(1), authority: delegation.authority, delegationHash: delegationHashOf(delegation) }
    assert.deepStrictEqual(first, [{ ...expected, logIndex: 3 }])
    assert.deepStrictEqual(again, [{ ...expected, logIndex: 8 }])
  })

  it("only the delegator's transfers inside the window count", () => {
    const owner = a(10)
    const logs = [
      transferLog(a(20), owner, a(30), 5n, 1), // before the window
      transferLog(a(20), owner, a(31), 7n, 3), // inside
      transferLog(a(20), a(11), a(32), 9n, 4), // someone else's
      transferLog(a(21), owner, a(33), 2n, 6) // after the window
    ]
    const inside = transfersOut(logs, owner, { after: 2, before: 5 })
    assert.deepStrictEqual(inside.map((t) => [t.to, t.units]), [[a(31).toLowerCase(), 7n]])
    assert.lengthOf(transfersOut(logs, owner), 3)
  })
})
