/**
 * Reading a delegated action from logs alone (src/delegations/Redemptions.ts): the
 * delegation hash equals the kit's (the permission id), and only the delegator's own
 * transfers inside the redemption's window count.
 */
import { assert, describe, it } from "@effect/vitest"
import { decodeDelegations, encodeDelegations, hashDelegation } from "@metamask/smart-accounts-kit/utils"
import {
  type Address,
  decodeEventLog,
  decodeFunctionData,
  encodeAbiParameters,
  encodeEventTopics,
  encodeFunctionData,
  erc20Abi,
  erc721Abi,
  hashStruct,
  type Hex,
  keccak256,
  pad,
  toHex
} from "viem"
import { entryPoint07Abi } from "viem/account-abstraction"
import { callDecoder, eventDecoder } from "../../src/follower/AbiDecode.ts"
import { decodePermissionContext } from "../../src/follower/RedemptionChains.ts"
import { delegationHashOf, redemptionsIn, transfersOut } from "../../src/follower/Redemptions.ts"
import { DelegationManager, HybridDeleGator } from "@metamask/delegation-abis"

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

  it("a permission context decodes as the kit decodes it: 0–5 caveats, empty and long terms and args, chains of 0–3", () => {
    const delegationWith = (n: number, k: number) => ({
      delegate: a(300 + k),
      delegator: a(400 + k),
      authority: k === 0 ? (`0x${"ff".repeat(32)}` as Hex) : keccak256(toHex(`link ${k}`)),
      caveats: Array.from({ length: n }, (_, i) => ({
        enforcer: a(500 + i),
        // Empty, a byte, a word, past a word, and long (1 KiB).
        terms: [`0x`, `0x01`, toHex(new Uint8Array(32).fill(7)), toHex(new Uint8Array(33).fill(9)), toHex(new Uint8Array(1024).map((_, j) => j & 0xff))][i % 5] as Hex,
        args: (i % 2 === 0 ? "0x" : toHex(new Uint8Array(40 * i).fill(i))) as Hex
      })),
      salt: toHex(2n ** BigInt(30 * n + k) + 1n),
      signature: (k % 2 === 0 ? "0x" : toHex(new Uint8Array(65).fill(k))) as Hex
    })
    for (let n = 0; n < 6; n++) {
      for (let links = 0; links < 4; links++) {
        const chain = Array.from({ length: links }, (_, k) => delegationWith(n, k))
        const context = encodeDelegations(chain as never)
        const ours = decodePermissionContext(context)
        const kits = decodeDelegations(context)
        assert.strictEqual(ours.length, kits.length, `${n} caveats, ${links} links`)
        ours.forEach((d, i) => {
          const kit = kits[i]!
          const label = `${n} caveats, link ${i} of ${links}`
          assert.strictEqual(d.delegate.toLowerCase(), kit.delegate.toLowerCase(), label)
          assert.strictEqual(d.delegator.toLowerCase(), kit.delegator.toLowerCase(), label)
          assert.strictEqual(d.authority, kit.authority, label)
          assert.strictEqual(d.salt, BigInt(kit.salt), label)
          assert.strictEqual(d.signature, kit.signature, label)
          assert.deepStrictEqual(
            d.caveats.map((c) => [c.enforcer.toLowerCase(), c.terms, c.args]),
            kit.caveats.map((c) => [c.enforcer.toLowerCase(), c.terms, c.args]),
            label
          )
          assert.strictEqual(delegationHashOf(d), hashDelegation(kit), label)
        })
      }
    }
    // Bytes that are not a permission context: both refuse them.
    for (const bad of ["0x", "0x1234", `0x${"00".repeat(31)}20${"00".repeat(31)}05`] as const) {
      assert.throws(() => decodePermissionContext(bad as Hex), undefined, undefined, bad)
      assert.throws(() => decodeDelegations(bad as Hex), undefined, undefined, bad)
    }
  })

  it("calls and events decode by selectors computed once as viem decodes them; another function or event is not one", () => {
    const context = encodeDelegations([{ delegate: a(1), delegator: a(2), authority: `0x${"ff".repeat(32)}`, caveats: [], salt: 1n, signature: "0x" }] as never)
    const calls = [
      { abi: DelegationManager, data: encodeFunctionData({ abi: DelegationManager, functionName: "redeemDelegations", args: [[context], [pad("0x00")], ["0xabcdef"]] }) },
      { abi: HybridDeleGator, data: encodeFunctionData({ abi: HybridDeleGator, functionName: "execute", args: [{ target: a(3), value: 5n, callData: "0x1234" }] }) },
      { abi: HybridDeleGator, data: encodeFunctionData({ abi: HybridDeleGator, functionName: "execute", args: [pad("0x01"), "0x99"] }) },
      { abi: erc20Abi, data: encodeFunctionData({ abi: erc20Abi, functionName: "transfer", args: [a(4), 10n ** 30n] }) },
      {
        abi: entryPoint07Abi,
        data: encodeFunctionData({
          abi: entryPoint07Abi,
          functionName: "handleOps",
          args: [[{
            sender: a(5),
            nonce: 7n,
            initCode: "0x",
            callData: "0xdead",
            accountGasLimits: pad("0x01"),
            preVerificationGas: 3n,
            gasFees: pad("0x02"),
            paymasterAndData: "0x",
            signature: "0xbeef"
          }], a(6)]
        })
      }
    ] as const
    for (const { abi, data } of calls) {
      const viem = decodeFunctionData({ abi: abi as never, data }) as { functionName: string; args: ReadonlyArray<unknown> }
      assert.deepStrictEqual(callDecoder(abi as never)(data), { functionName: viem.functionName, args: viem.args }, viem.functionName)
    }
    // A call to another contract's function: viem throws, the decoder answers none.
    const approve = encodeFunctionData({ abi: erc20Abi, functionName: "approve", args: [a(4), 1n] })
    assert.throws(() => decodeFunctionData({ abi: DelegationManager, data: approve }))
    assert.isUndefined(callDecoder(DelegationManager)(approve))
    // A known selector over bytes that do not decode: both throw.
    const truncated = encodeFunctionData({ abi: erc20Abi, functionName: "transfer", args: [a(4), 1n] }).slice(0, 40) as Hex
    assert.throws(() => decodeFunctionData({ abi: erc20Abi, data: truncated }))
    assert.throws(() => callDecoder(erc20Abi)(truncated))

    const transfer = transferLog(a(20), a(21), a(22), 123n, 0)
    const opEvent = entryPoint07Abi.find((x) => x.type === "event" && x.name === "UserOperationEvent")!
    const userOp = {
      topics: encodeEventTopics({ abi: [opEvent], eventName: "UserOperationEvent", args: { userOpHash: keccak256("0x01"), sender: a(5), paymaster: a(0) } }) as ReadonlyArray<Hex>,
      data: encodeAbiParameters([{ type: "uint256" }, { type: "bool" }, { type: "uint256" }, { type: "uint256" }], [7n, true, 100n, 200n])
    }
    const before = { topics: encodeEventTopics({ abi: entryPoint07Abi, eventName: "BeforeExecution" }) as ReadonlyArray<Hex>, data: "0x" as Hex }
    for (const { abi, log } of [{ abi: erc20Abi, log: transfer }, { abi: entryPoint07Abi, log: userOp }, { abi: entryPoint07Abi, log: before }] as const) {
      const viem = decodeEventLog({ abi: abi as never, topics: log.topics as [Hex, ...Array<Hex>], data: log.data }) as { eventName: string; args?: object }
      assert.deepStrictEqual(eventDecoder(abi as never)(log), { eventName: viem.eventName, args: viem.args ?? {} }, viem.eventName)
    }
    // Another contract's event: viem throws, the decoder answers none; an ERC-721 Transfer (a third indexed topic) throws in both.
    assert.throws(() => decodeEventLog({ abi: DelegationManager, topics: transfer.topics as [Hex, ...Array<Hex>], data: transfer.data }))
    assert.isUndefined(eventDecoder(DelegationManager)(transfer))
    const nft = { topics: encodeEventTopics({ abi: erc721Abi, eventName: "Transfer", args: { from: a(1), to: a(2), tokenId: 3n } }) as ReadonlyArray<Hex>, data: "0x" as Hex }
    assert.throws(() => decodeEventLog({ abi: erc20Abi, topics: nft.topics as [Hex, ...Array<Hex>], data: nft.data }))
    assert.throws(() => eventDecoder(erc20Abi)(nft))
    assert.isUndefined(eventDecoder(erc20Abi)({ topics: [], data: "0x" }))
  })
})
