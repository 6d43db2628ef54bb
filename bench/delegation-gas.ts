/**
 * Gas of one delegated action (the delegate's `DelegationManager.redeemDelegations` moving
 * one ERC-20 transfer out of the owner's HybridDeleGator) with every caveat, on a fresh
 * local network:
 *
 *   before: the old per-leg delegation (one per budget token: AllowedTargets, AllowedMethods,
 *           ValueLte, ERC20TransferAmount, LimitedCalls, Timestamp, AllowedCalldata when the
 *           allowlist has exactly one entry) — which did NOT hold the per-action maximum,
 *           a 2+ allowlist or the count across tokens;
 *   after:  the grant (src/delegations/Grant.ts): Timestamp, ValueLte, AllowedTargets,
 *           AllowedMethods, AllowedCalldata or LogicalOrWrapper, TransferCap, LimitedCalls,
 *           MultiTokenPeriod — every limit on chain;
 *   approval: the grant (1 token, 1 recipient) with an approval rule (ApprovalEnforcer, 2 of 3,
 *           threshold 5 USDC): a transfer at or below the threshold (no signature checked), and
 *           above it with two ECDSA approvals, or one ECDSA and one ERC-1271 (a HybridDeleGator
 *           approver, whose owner key signs).
 *   basket: the grant over USDC, USDT and DAI (1 recipient) without and with a basket of 50 USD
 *           (BasketPeriodEnforcer beside the per-token MultiTokenPeriodEnforcer), a USDC transfer.
 *
 * Each shape redeems twice (the first action writes fresh enforcer storage, the second
 * updates it). Measured as the transaction's gasUsed with the delegate's smart account as
 * sender (anvil impersonation), so the EntryPoint and bundler overheads, equal for both,
 * are left out.
 *
 *   npx tsx bench/delegation-gas.ts      (about 15 s)
 */
import { Effect, Exit, Scope } from "effect"
import { parseUnits } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { make as startLocalNetwork } from "../src/chain/LocalNetwork.ts"
import { makeLeg, randomSalt } from "../src/delegations/Caveats.ts"
import { makeGrant, redeemArgs } from "../src/delegations/Grant.ts"
import { chainGrants, usdcUnits as units } from "./support/grants.ts"

process.env.DO_NOT_TRACK = "1"

const scope = Effect.runSync(Scope.make())
const net = await Effect.runPromise(startLocalNetwork().pipe(Scope.provide(scope)))
try {
  const { account, mint, sign, redeem, approvalsOf } = chainGrants(net)
  const usdc = net.tokens.usd.address
  const usdt = net.tokens.usdt.address

  const expires = Math.floor(Date.now() / 1000) + 3600
  const recipients = [0, 1, 2].map(() => privateKeyToAccount(generatePrivateKey()).address)
  const rows: Array<{ shape: string; first: bigint; second: bigint }> = []

  // Before: the per-leg shape, one recipient pinned (its most complete form).
  {
    const owner = await account()
    const delegate = await account()
    await mint(usdc, owner.address, units(100))
    const leg = await sign(owner.key, makeLeg(net.delegation, {
      delegator: owner.address, delegate: delegate.address, token: usdc, budgetUnits: units(50), maxActions: 10,
      expiresAtSeconds: expires, onlyRecipient: recipients[0]!, salt: randomSalt()
    }))
    rows.push({
      shape: "before: per-leg delegation, 1 token, 1 recipient",
      first: await redeem(delegate.address, leg, usdc, recipients[0]!, units(1)),
      second: await redeem(delegate.address, leg, usdc, recipients[0]!, units(1))
    })
  }

  // After: the grant, with 1 token and 1 recipient, then 2 tokens and 3 recipients.
  for (const shape of [{ tokens: [usdc], recipients: recipients.slice(0, 1) }, { tokens: [usdc, usdt], recipients }]) {
    const owner = await account()
    const delegate = await account()
    for (const t of shape.tokens) await mint(t, owner.address, units(100))
    const made = makeGrant(net.delegation, {
      delegator: owner.address, delegate: delegate.address,
      budgets: shape.tokens.map((token) => ({ token, units: units(50), perActionUnits: units(5) })),
      targets: shape.tokens, recipients: shape.recipients, maxActions: 10,
      startSeconds: Math.floor(Date.now() / 1000) - 60, expiresAtSeconds: expires, salt: randomSalt()
    })
    if (made._tag !== "Ok") throw new Error(made.message)
    const signed = await sign(owner.key, made.delegation)
    const to = shape.recipients[shape.recipients.length - 1]!
    const token = shape.tokens[shape.tokens.length - 1]!
    const args = redeemArgs(net.delegation, signed, made.scope, { token, to })!
    rows.push({
      shape: `after: grant, ${shape.tokens.length} token(s), ${shape.recipients.length} recipient(s)`,
      first: await redeem(delegate.address, args, token, to, units(1)),
      second: await redeem(delegate.address, args, token, to, units(1))
    })
  }

  // Approval: the grant with 1 token and 1 recipient and a 2-of-3 rule over 5 USDC; a fresh
  // grant per shape, so that its first action writes fresh enforcer storage as above.
  const keys = [generatePrivateKey(), generatePrivateKey()]
  const smartApprover = await account()
  const approvers = [privateKeyToAccount(keys[0]!).address, privateKeyToAccount(keys[1]!).address, smartApprover.address]
  const ecdsa = [{ key: keys[0]!, address: approvers[0]! }, { key: keys[1]!, address: approvers[1]! }]
  const mixed = [{ key: keys[0]!, address: approvers[0]! }, { key: smartApprover.key, address: smartApprover.address }]
  for (const [shape, amount, signers] of [
    ["approval rule, at or below the threshold", units(1), undefined],
    ["approval rule, above: 2 ECDSA approvals", units(6), ecdsa],
    ["approval rule, above: ECDSA + ERC-1271", units(6), mixed]
  ] as const) {
    const owner = await account()
    const delegate = await account()
    await mint(usdc, owner.address, units(100))
    const to = recipients[0]!
    const made = makeGrant(net.delegation, {
      delegator: owner.address, delegate: delegate.address,
      budgets: [{ token: usdc, units: units(50), perActionUnits: units(10) }],
      targets: [usdc], recipients: [to], maxActions: 10,
      startSeconds: Math.floor(Date.now() / 1000) - 60, expiresAtSeconds: expires, salt: randomSalt(),
      approval: { required: 2, approvers, thresholds: [{ token: usdc, units: units(5) }] }
    })
    if (made._tag !== "Ok") throw new Error(made.message)
    const signed = await sign(owner.key, made.delegation)
    const once = async () => {
      const approvals = signers === undefined ? undefined : await approvalsOf(signed, { token: usdc, to, amount }, signers, BigInt(expires))
      const args = redeemArgs(net.delegation, signed, made.scope, { token: usdc, to, ...(approvals === undefined ? {} : { approvals }) })!
      return redeem(delegate.address, args, usdc, to, amount)
    }
    rows.push({ shape, first: await once(), second: await once() })
  }

  // Basket: three tokens of 6, 6 and 18 decimals, without and with one 50 USD allowance across them.
  const dai = net.tokens.dai!.address
  const daiUnits = (n: number) => parseUnits(String(n), 18)
  for (const basket of [false, true]) {
    const owner = await account()
    const delegate = await account()
    await mint(usdc, owner.address, units(100))
    await mint(usdt, owner.address, units(100))
    await mint(dai, owner.address, daiUnits(100))
    const to = recipients[0]!
    const tokens = [usdc, usdt, dai]
    const made = makeGrant(net.delegation, {
      delegator: owner.address, delegate: delegate.address,
      budgets: tokens.map((token) => ({
        token, units: token === dai ? daiUnits(50) : units(50), perActionUnits: token === dai ? daiUnits(5) : units(5)
      })),
      targets: tokens, recipients: [to], maxActions: 10,
      startSeconds: Math.floor(Date.now() / 1000) - 60, expiresAtSeconds: expires, salt: randomSalt(),
      ...(basket
        ? { basket: { units: daiUnits(50), tokens: [{ token: usdc, decimals: 6 }, { token: usdt, decimals: 6 }, { token: dai, decimals: 18 }] } }
        : {})
    })
    if (made._tag !== "Ok") throw new Error(made.message)
    const signed = await sign(owner.key, made.delegation)
    const args = redeemArgs(net.delegation, signed, made.scope, { token: usdc, to })!
    rows.push({
      shape: `basket: 3 tokens, 1 recipient, ${basket ? "with" : "without"} basket`,
      first: await redeem(delegate.address, args, usdc, to, units(1)),
      second: await redeem(delegate.address, args, usdc, to, units(1))
    })
  }

  const pad = (s: string, n: number) => s.padEnd(n)
  console.log(`${pad("shape", 52)}${pad("1st action", 12)}2nd action   (gasUsed of the redemption transaction)`)
  for (const r of rows) console.log(`${pad(r.shape, 52)}${pad(r.first.toString(), 12)}${r.second}`)
  const pct = (a: bigint, b: bigint) => `${a >= b ? "+" : ""}${(Number(a - b) / Number(b) * 100).toFixed(1)} %`
  const base = rows[0]!
  const grant = rows[1]!
  for (const r of rows.slice(1).filter((x) => !x.shape.endsWith("without basket"))) {
    // The approval rows are the 1-token, 1-recipient grant plus the rule: compared with that grant.
    const without = rows.find((x) => x.shape.endsWith("without basket"))!
    const [than, b] = r.shape.startsWith("approval")
      ? ["the grant without it", grant]
      : r.shape.startsWith("basket")
      ? ["the same grant without basket", without]
      : ["before", base]
    console.log(`${r.shape} vs ${than}: 1st ${pct(r.first, b.first)} (${r.first - b.first}), 2nd ${pct(r.second, b.second)} (${r.second - b.second})`)
  }
} finally {
  await Effect.runPromise(Scope.close(scope, Exit.void))
}
