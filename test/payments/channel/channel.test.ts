/**
 * Payment channels under a grant (issue 46 item 5), on the run's local chain with a real
 * merchant server on loopback: 1,000 payments checked in memory, then one settlement that
 * moves exactly their sum; the verifier refuses a replayed, lower, foreign or over-budget
 * voucher; and, going around the verifier with the merchant's own settlement key, the chain
 * refuses a settlement past the grant's budget, past what the agent signed, or twice.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { LimitedCallsEnforcer, MultiTokenPeriodEnforcer } from "@metamask/delegation-abis"
import type { Delegation } from "@metamask/smart-accounts-kit"
import { hashDelegation } from "@metamask/smart-accounts-kit/utils"
import {
  channelSettlementCallData,
  decodeChain,
  encodeVoucherHeader,
  revertReasonOf,
  type Voucher,
  voucherDigester,
  voucherEnforcerReadAbi,
  voucherTypedData,
  VOUCHER_HEADER
} from "@das/x402-erc7710"
import { secp256k1 } from "@noble/curves/secp256k1"
import { type Address, createWalletClient, decodeEventLog, erc20Abi, hashTypedData, type Hex, http, type LocalAccount, recoverAddress } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { localChannel } from "../../../src/payments/x402/Channel.ts"
import { deployVoucherEnforcer, startChannelServer, type ChannelServer } from "../../../src/payments/x402/world/ChannelServer.ts"
import { balanceOf, chain, fundedKey, type GrantLimits, makeOwner, net, publicClient, randomAddress, revokeGrant, signGrant, USD, usdc } from "../x402/support.ts"

const PRICE = USD(0.001)
let enforcer: Address
let merchantKey: Hex
let payTo: Address
let server: ChannelServer

beforeAll(async () => {
  enforcer = await deployVoucherEnforcer(net, await fundedKey())
  merchantKey = await fundedKey()
  payTo = randomAddress()
  server = await startChannelServer({ network: net, enforcer, key: merchantKey, token: usdc, payTo, price: PRICE })
}, 120_000)
afterAll(async () => {
  await server?.close()
})

const dm = net.delegation.DelegationManager

/** An owner with USDC, an agent key and its grant naming the merchant's payee, and a channel opened from it. */
const openChannel = async (limits: GrantLimits, cap: bigint) => {
  const owner = await makeOwner(100)
  const agent = privateKeyToAccount(generatePrivateKey())
  const grant = await signGrant(owner, agent.address, { recipients: [payTo], ...limits })
  const channel = await localChannel(grant, agent, {
    enforcer,
    merchant: server.merchant.merchant,
    token: usdc,
    payTo,
    cap,
    validBefore: Math.floor(Date.now() / 1000) + 3_600
  })
  return { owner, agent, grant, channel, chain: decodeChain(channel.permissionContext)! }
}

const get = (header?: string) => fetch(`${server.url}/item`, header === undefined ? {} : { headers: { [VOUCHER_HEADER]: header } })

const signVoucher = async (signer: LocalAccount, channel: Hex, cumulativeAmount: bigint, nonce: bigint): Promise<Voucher> => ({
  channel,
  cumulativeAmount,
  nonce,
  signature: await signer.signTypedData(voucherTypedData({ chainId: net.chainId, enforcer, channel, cumulativeAmount, nonce }))
})

const headerOf = (v: Voucher, permissionContext?: Hex) =>
  encodeVoucherHeader({
    channel: v.channel,
    cumulativeAmount: v.cumulativeAmount.toString(),
    nonce: v.nonce.toString(),
    signature: v.signature,
    ...(permissionContext === undefined ? {} : { permissionContext })
  })

/** The grant's state on chain: what its budget still allows, and its action count. */
const grantOnChain = async (grant: Delegation) => {
  const multi = net.delegation.caveatEnforcers["MultiTokenPeriodEnforcer"]!
  const caveat = grant.caveats.find((c) => c.enforcer.toLowerCase() === multi.toLowerCase())!
  const [available] = await publicClient.readContract({
    address: multi,
    abi: MultiTokenPeriodEnforcer,
    functionName: "getAvailableAmount",
    args: [hashDelegation(grant), dm, caveat.terms, "0x0000000000000000000000000000000000000000000000000000000000000000"]
  }) as readonly [bigint, boolean, bigint]
  const calls = await publicClient.readContract({
    address: net.delegation.caveatEnforcers["LimitedCallsEnforcer"]!,
    abi: LimitedCallsEnforcer,
    functionName: "callCounts",
    args: [dm, hashDelegation(grant)]
  }) as bigint
  return { available, calls }
}

const settledOnChain = (channel: Hex) =>
  publicClient.readContract({ address: enforcer, abi: voucherEnforcerReadAbi, functionName: "settled", args: [dm, channel] })

/** The merchant's key redeeming the channel itself, around its verifier: the chain's answer (a revert reason, or the receipt). */
const redeemAround = async (
  opened: Awaited<ReturnType<typeof openChannel>>,
  voucher: Voucher,
  amount: bigint,
  overrides: { readonly payTo?: Address } = {}
) => {
  const terms = { ...opened.channel.terms, ...(overrides.payTo === undefined ? {} : { payTo: overrides.payTo }) }
  const data = channelSettlementCallData(opened.chain, { enforcer, terms, voucher, amount })
  const account = privateKeyToAccount(merchantKey)
  let reason: string | undefined
  try {
    await publicClient.call({ account, to: dm, data })
  } catch (e) {
    reason = revertReasonOf(e)
  }
  // Sent anyway with a fixed gas: mined, and refused by the chain itself.
  const wallet = createWalletClient({ chain, transport: http(net.rpcUrl), account })
  const hash = await wallet.sendTransaction({ to: dm, data, gas: 1_500_000n })
  const receipt = await publicClient.waitForTransactionReceipt({ hash })
  return { reason, receipt }
}

describe("payment channels under a grant", () => {
  it("the merchant's voucher digest is the EIP-712 digest the enforcer checks", async () => {
    const digest = voucherDigester(net.chainId, enforcer)
    const abi = [{ type: "function", name: "voucherDigest", stateMutability: "view", inputs: [{ type: "bytes32" }, { type: "uint256" }, { type: "uint256" }], outputs: [{ type: "bytes32" }] }] as const
    for (const [channel, cumulativeAmount, nonce] of [[`0x${"ab".repeat(32)}`, 1n, 1n], [`0x${"01".repeat(32)}`, 10n ** 30n, 2n ** 200n]] as const) {
      const onChain = await publicClient.readContract({ address: enforcer, abi, functionName: "voucherDigest", args: [channel, cumulativeAmount, nonce] })
      assert.strictEqual(digest(channel, cumulativeAmount, nonce), onChain)
      assert.strictEqual(hashTypedData(voucherTypedData({ chainId: net.chainId, enforcer, channel, cumulativeAmount, nonce })), onChain)
    }
  })

  it("1,000 payments over HTTP, each checked in memory, then one settlement transaction moves exactly their sum", async () => {
    const opened = await openChannel({ budget: 20, perAction: 5 }, USD(2))
    const unpaid = await get()
    assert.strictEqual(unpaid.status, 402)
    assert.deepStrictEqual((await unpaid.json() as { accepts: unknown }).accepts, server.offer)

    const before = { owner: await balanceOf(usdc, opened.owner.address), payTo: await balanceOf(usdc, payTo), grant: await grantOnChain(opened.grant.grant) }
    for (let i = 1; i <= 1_000; i++) {
      const res = await get(await opened.channel.payer.pay(PRICE))
      const body = await res.json() as { paid?: string; error?: string }
      assert.strictEqual(res.status, 200, body.error)
      assert.strictEqual(body.paid, (PRICE * BigInt(i)).toString())
    }
    // Nothing moved while paying: the payments are vouchers in the merchant's memory.
    assert.strictEqual(await balanceOf(usdc, opened.owner.address), before.owner)

    const settled = await server.merchant.settle(opened.channel.payer.channel)
    assert.isTrue(settled.ok, settled.ok ? "" : settled.reason)
    if (!settled.ok) return
    const sum = PRICE * 1_000n
    assert.strictEqual(settled.amount, sum)
    const transfers = settled.receipt.logs.filter((l) => l.address.toLowerCase() === usdc.toLowerCase()).map((l) => decodeEventLog({ abi: erc20Abi, ...l }))
    assert.strictEqual(transfers.length, 1)
    assert.deepStrictEqual(transfers[0]!.args, { from: opened.owner.address, to: payTo, value: sum })
    const voucherEvents = settled.receipt.logs
      .filter((l) => l.address.toLowerCase() === enforcer.toLowerCase())
      .map((l) => decodeEventLog({ abi: voucherEnforcerReadAbi, ...l }))
    assert.strictEqual(voucherEvents.length, 1)
    assert.strictEqual(voucherEvents[0]!.args.cumulativeAmount, sum)
    assert.strictEqual(voucherEvents[0]!.args.nonce, 1_000n)

    assert.strictEqual(await balanceOf(usdc, opened.owner.address), before.owner - sum)
    assert.strictEqual(await balanceOf(usdc, payTo), before.payTo + sum)
    assert.strictEqual(await settledOnChain(opened.channel.payer.channel), sum)
    const after = await grantOnChain(opened.grant.grant)
    assert.strictEqual(after.available, before.grant.available - sum)
    assert.strictEqual(after.calls, before.grant.calls + 1n)

    // Settled: nothing more to settle, and the same voucher again is refused by the chain.
    const again = await server.merchant.settle(opened.channel.payer.channel)
    assert.isFalse(again.ok)
    const replay = await redeemAround(opened, server.merchant.book.get(opened.channel.payer.channel)!.highest!, sum)
    assert.strictEqual(replay.reason, "VoucherEnforcer:voucher-already-settled")
    assert.strictEqual(replay.receipt.status, "reverted")
    assert.strictEqual(await balanceOf(usdc, payTo), before.payTo + sum)
  }, 300_000)

  it("a replayed, lower, foreign or malformed voucher is refused by the verifier, and the channel keeps its highest", async () => {
    const opened = await openChannel({}, USD(1))
    const headers: Array<string> = []
    for (let i = 0; i < 3; i++) {
      headers.push(await opened.channel.payer.pay(PRICE))
      assert.strictEqual((await get(headers[i])).status, 200)
    }
    const refused = async (header: string, pattern: RegExp) => {
      const res = await get(header)
      assert.strictEqual(res.status, 402)
      const error = (await res.json() as { error: string }).error
      assert.match(error, pattern)
    }
    const id = opened.channel.payer.channel
    await refused(headers[1]!, /replayed or old voucher/)
    await refused(headers[2]!, /replayed or old voucher/)
    // A higher nonce but a lower (or equal) total: pays nothing new.
    await refused(headerOf(await signVoucher(opened.agent, id, PRICE * 2n, 10n)), /less than the price/)
    await refused(headerOf(await signVoucher(opened.agent, id, PRICE * 3n, 10n)), /less than the price/)
    // Signed by someone else (the merchant forging a voucher).
    await refused(headerOf(await signVoucher(privateKeyToAccount(merchantKey), id, PRICE * 4n, 10n)), /not signed by the channel's signer/)
    // Another channel's id, never opened.
    await refused(headerOf(await signVoucher(opened.agent, `0x${"11".repeat(32)}`, PRICE, 1n)), /unknown channel/)
    // The agent's own next voucher, its signature changed the ways the chain (OpenZeppelin's ECDSA) refuses:
    // s in the upper half with v flipped (the same signer to a lax recover), and v flipped alone.
    const next = await signVoucher(opened.agent, id, PRICE * 4n, 4n)
    const r = next.signature.slice(2, 66)
    const s = BigInt(`0x${next.signature.slice(66, 130)}`)
    const v = Number.parseInt(next.signature.slice(130, 132), 16)
    const flipped = (55 - v).toString(16)
    const highS = `0x${r}${(secp256k1.CURVE.n - s).toString(16).padStart(64, "0")}${flipped}` as Hex
    assert.strictEqual((await recoverAddress({ hash: hashTypedData(voucherTypedData({ chainId: net.chainId, enforcer, ...next })), signature: highS })).toLowerCase(), opened.agent.address.toLowerCase())
    await refused(headerOf({ ...next, signature: highS }), /not signed by the channel's signer/)
    await refused(headerOf({ ...next, signature: `0x${r}${next.signature.slice(66, 130)}${flipped}` }), /not signed by the channel's signer/)
    await refused("not base64 json", /not base64 JSON|not an object/)
    await refused(Buffer.from(JSON.stringify({ channel: id, cumulativeAmount: "-1", nonce: "1", signature: "0x" })).toString("base64"), /cumulativeAmount/)
    const highest = server.merchant.book.get(id)!.highest!
    assert.strictEqual(highest.cumulativeAmount, PRICE * 3n)
    assert.strictEqual(highest.nonce, 3n)
    // The next honest voucher is still good.
    assert.strictEqual((await get(await opened.channel.payer.pay(PRICE))).status, 200)
  }, 120_000)

  it("past the grant's budget: the verifier refuses the voucher, and the chain refuses the merchant's settlement of it", async () => {
    const opened = await openChannel({ budget: 1, perAction: 1 }, USD(5))
    assert.strictEqual((await get(await opened.channel.payer.pay(PRICE))).status, 200)
    const channel = server.merchant.book.get(opened.channel.payer.channel)!
    // The channel's cap is 5 USDC, the grant's budget 1: the verifier holds vouchers to 1.
    assert.strictEqual(channel.limit, USD(1))
    assert.strictEqual((await get(await opened.channel.payer.pay(USD(0.6) - PRICE))).status, 200)
    const first = await server.merchant.settle(channel.id)
    assert.isTrue(first.ok)

    // The agent signs a voucher for 1.2 USDC in total: 0.6 more, within the per-action cap, past the budget.
    const over = await signVoucher(opened.agent, channel.id, USD(1.2), 3n)
    const res = await get(headerOf(over))
    assert.strictEqual(res.status, 402)
    assert.match((await res.json() as { error: string }).error, /passes what the channel may move/)
    assert.strictEqual(channel.highest!.cumulativeAmount, USD(0.6))

    // Around the verifier: the merchant's own key redeems the signed 1.2 voucher. The grant's budget refuses it.
    const before = { owner: await balanceOf(usdc, opened.owner.address), payTo: await balanceOf(usdc, payTo), grant: await grantOnChain(opened.grant.grant) }
    assert.strictEqual(before.grant.available, USD(0.4))
    const around = await redeemAround(opened, over, USD(0.6))
    assert.match(around.reason ?? "", /MultiTokenPeriodEnforcer/)
    assert.strictEqual(around.receipt.status, "reverted")
    assert.strictEqual(await balanceOf(usdc, opened.owner.address), before.owner)
    assert.strictEqual(await balanceOf(usdc, payTo), before.payTo)
    assert.deepStrictEqual(await grantOnChain(opened.grant.grant), before.grant)
    assert.strictEqual(await settledOnChain(channel.id), USD(0.6))

    // Up to the budget the same path pays and settles: the rest of the grant, exactly.
    assert.strictEqual((await get(headerOf(await signVoucher(opened.agent, channel.id, USD(1), 4n)))).status, 200)
    const rest = await server.merchant.settle(channel.id)
    assert.isTrue(rest.ok)
    assert.strictEqual(await balanceOf(usdc, payTo), before.payTo + USD(0.4))
    assert.strictEqual((await grantOnChain(opened.grant.grant)).available, 0n)
  }, 120_000)

  it("the chain moves only what the agent signed: not more than a voucher adds, not past the cap, not a forged voucher, not to another payee", async () => {
    const opened = await openChannel({ budget: 20, perAction: 5 }, USD(0.01))
    assert.strictEqual((await get(await opened.channel.payer.pay(PRICE))).status, 200)
    const id = opened.channel.payer.channel
    const voucher = await signVoucher(opened.agent, id, USD(0.005), 7n)
    const before = { owner: await balanceOf(usdc, opened.owner.address), grant: await grantOnChain(opened.grant.grant) }

    const cases: Array<[string, () => ReturnType<typeof redeemAround>]> = [
      ["VoucherEnforcer:invalid-amount", async () => redeemAround(opened, voucher, USD(0.006))],
      ["VoucherEnforcer:invalid-amount", async () => redeemAround(opened, voucher, USD(0.004))],
      ["VoucherEnforcer:cap-exceeded", async () => redeemAround(opened, await signVoucher(opened.agent, id, USD(0.02), 8n), USD(0.02))],
      ["VoucherEnforcer:invalid-signature", async () => redeemAround(opened, await signVoucher(privateKeyToAccount(merchantKey), id, USD(0.005), 9n), USD(0.005))],
      ["VoucherEnforcer:invalid-recipient", async () => redeemAround(opened, voucher, USD(0.005), { payTo: randomAddress() })]
    ]
    for (const [reason, attempt] of cases) {
      const { reason: got, receipt } = await attempt()
      assert.strictEqual(got, reason)
      assert.strictEqual(receipt.status, "reverted")
    }
    assert.strictEqual(await balanceOf(usdc, opened.owner.address), before.owner)
    assert.deepStrictEqual(await grantOnChain(opened.grant.grant), before.grant)

    // The genuine voucher settles exactly once, around the service too.
    const good = await redeemAround(opened, voucher, USD(0.005))
    assert.strictEqual(good.reason, undefined)
    assert.strictEqual(good.receipt.status, "success")
    assert.strictEqual(await balanceOf(usdc, opened.owner.address), before.owner - USD(0.005))
    const twice = await redeemAround(opened, voucher, USD(0.005))
    assert.strictEqual(twice.reason, "VoucherEnforcer:voucher-already-settled")
    assert.strictEqual(await settledOnChain(id), USD(0.005))
  }, 120_000)

  it("the owner's revoke holds the channel: vouchers the merchant accepted before it no longer settle", async () => {
    const opened = await openChannel({}, USD(1))
    for (let i = 0; i < 3; i++) assert.strictEqual((await get(await opened.channel.payer.pay(PRICE))).status, 200)
    await revokeGrant(opened.owner, opened.grant.grant)
    const before = await balanceOf(usdc, opened.owner.address)
    const settled = await server.merchant.settle(opened.channel.payer.channel)
    assert.isFalse(settled.ok)
    if (!settled.ok) assert.match(settled.reason, /CannotUseADisabledDelegation/)
    const around = await redeemAround(opened, server.merchant.book.get(opened.channel.payer.channel)!.highest!, PRICE * 3n)
    assert.match(around.reason ?? "", /CannotUseADisabledDelegation/)
    assert.strictEqual(around.receipt.status, "reverted")
    assert.strictEqual(await balanceOf(usdc, opened.owner.address), before)
    assert.strictEqual(await settledOnChain(opened.channel.payer.channel), 0n)
  }, 120_000)
})
