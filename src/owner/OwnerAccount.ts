/**
 * The owner's own account (issue 27, docs/account.md "The HTTP flows"): send and
 * withdraw-to-safety, devices (a passkey, or an EOA as the owner key's replacement), guardians,
 * the recovery delay, the safe address and the owner's cancel of a recovery. Each is one owner
 * operation through the one builder (build → sign by any device → relay), its intent on the
 * owner's record; what the account holds is read back from the chain, never from here. Checks
 * that the chain would refuse anyway come first, as a 400 naming the field, so that nothing is
 * built for them.
 */
import type { Delegation } from "@metamask/smart-accounts-kit"
import { hashDelegation } from "@metamask/smart-accounts-kit/utils"
import { DelegationManager } from "@metamask/delegation-abis"
import { Context, Effect, Layer, Schema } from "effect"
import {
  type Address,
  decodeFunctionResult,
  encodeFunctionData,
  erc20Abi,
  formatUnits,
  type Hash,
  type Hex,
  parseUnits,
  toHex,
  zeroAddress
} from "viem"
import type { Account } from "../accounts/Domain.ts"
import { BadRequest, Conflict, ServiceUnavailable } from "../api/Errors.ts"
import { type BuildError, type Call, OperationBuilder } from "../builds/OperationBuilder.ts"
import { isDelegationSignatureValid, sameAddress } from "../chain/AccountDelegations.ts"
import { Chain } from "../chain/Chain.ts"
import { type ChainNetwork, Chains } from "../chain/Chains.ts"
import { networkTokens } from "../chain/Network.ts"
import {
  addPasskeyCall,
  keyIdHashOf,
  parsePasskeyPublicKey,
  passkeyStubSignature,
  readDevices,
  readPasskey,
  removeOwnerCall,
  removePasskeyCall,
  replaceOwnerCall
} from "../chain/Devices.ts"
import {
  addGuardianCall,
  cancelRecoveryCall,
  checkGuardianChange,
  makeRecoveryDelegation,
  readApprovals,
  readRecovery,
  RECOVERY_LIMITS,
  removeGuardianCall,
  setDelayCall,
  setSafeAddressCall,
  standingApprovals
} from "../chain/Recovery.ts"
import type { IntentType } from "../domain/Operations.ts"
import { RelayHooks } from "../userops/RelayHooks.ts"
import { OwnerRepo, type RecoveryDelegationRow } from "./OwnerRepo.ts"
import { AccountRules } from "./Rules.ts"
import { PanicKeys } from "./PanicKeys.ts"
import { answerOf, delegationDigest, delegationFromRow, delegationWire, deviceSignature, toSign } from "./Signing.ts"
import { quoteOutsideText } from "../domain/OutsideText.ts"
import type {
  AccountRules as AccountRulesWire,
  DelegationToSign,
  Device,
  DeviceAddRequest,
  DeviceRemoveRequest,
  GuardianAddRequest,
  GuardianRemoveRequest,
  OwnerBuild,
  OwnerBuildRequest,
  RulesUpdateRequest,
  SendRequest,
  SignDelegationRequest
} from "./Wire.ts"

/** A HybridDeleGator accepts any one of its signers (docs/account.md, Devices). */
export const NO_THRESHOLD =
  "This account (HybridDeleGator) accepts any one of its signers; it cannot hold a threshold. " +
  "The framework's MultiSigDeleGator has thresholds but only EOA signers (no passkeys), and the account would have to move to it."

export const NO_SWAP =
  "Swaps are not offered by this service: it holds stablecoins for delegated payments; swap through a wallet or a DEX aggregator."

export const NO_FUND_OPERATION =
  "account_fund is not an operation the account signs: funds come from outside. GET /account/fund answers the address, the chain and a payment request."

export const PANIC_FREEZE_ELSEWHERE =
  "panic_freeze is the panic key's own operation: it signs in with its own address and builds it with POST /panic/freeze/build."

export const RECOVERY_DELEGATION_UNSIGNED = "recovery_delegation_unsigned"

export type OwnerBuildError = BuildError | Conflict | BadRequest

export class OwnerAccount extends Context.Service<OwnerAccount, {
  build(account: Account, request: OwnerBuildRequest): Effect.Effect<OwnerBuild, OwnerBuildError>
  rules(account: Account): Effect.Effect<AccountRulesWire, ServiceUnavailable>
  devices(account: Account): Effect.Effect<ReadonlyArray<Device>, ServiceUnavailable>
  /** The account's delegation to the Recovery contract, signed by a current device; answers it as `GET /account/rules` shows it. */
  signDelegation(account: Account, request: typeof SignDelegationRequest.Type): Effect.Effect<AccountRulesWire, BadRequest | ServiceUnavailable>
  /** The account's delegation to the Recovery contract to sign (guardian_add is built once one is signed). */
  recoveryDelegationToSign(account: Account): Effect.Effect<typeof DelegationToSign.Type, BadRequest | ServiceUnavailable>
  /** Which of the signer's accounts a stored delegation belongs to (undefined: none). */
  delegationAccount(hash: string): Effect.Effect<{ readonly accountId: string; readonly chainId: number } | undefined>
}>()("das/owner/OwnerAccount") {
  static readonly layer = Layer.effect(OwnerAccount, Effect.suspend(() => make))
}

const lower = <S extends string>(s: S) => s.toLowerCase() as S
const iso = (seconds: bigint) => new Date(Number(seconds) * 1000).toISOString()
const bad = (field: string, message: string) => new BadRequest({ message: `${field}: ${message}`, details: { field } })
const chainDown = (net: ChainNetwork) => (e: { readonly message: string }) =>
  new ServiceUnavailable({ message: `Chain ${net.chainId} cannot be read: ${e.message}`, details: { chainId: net.chainId } })

const make = Effect.gen(function*() {
  const chains = yield* Chains
  const builder = yield* OperationBuilder
  const rulesService = yield* AccountRules
  const hooks = yield* RelayHooks
  const repo = yield* OwnerRepo
  const panicKeys = yield* PanicKeys

  /** A chain read of the `Chain`-tagged helpers (Devices.ts, Recovery.ts), on the account's chain. */
  const onChain = <A, E>(net: ChainNetwork, effect: Effect.Effect<A, E, Chain>) =>
    effect.pipe(Effect.provideService(Chain, net.chain), Effect.mapError((e) => chainDown(net)(e as { message: string })))

  const recoveryOf = (net: ChainNetwork, field: string) =>
    net.network.recovery === undefined
      ? Effect.fail(bad(field, `chain ${net.chainId} has no Recovery contract: guardians, recovery and the safe address are not served on it`))
      : Effect.succeed(net.network.recovery.address)

  // ---- signing device ----

  const signWithOf = (net: ChainNetwork, account: Account, request: OwnerBuildRequest) =>
    Effect.gen(function*() {
      const keyId = request.signWith?.keyId
      if (keyId === undefined) return { wire: { kind: "eoa" as const }, stub: undefined }
      const key = yield* readPasskey(net.chain.client, account.address as Address, keyId).pipe(Effect.mapError(chainDown(net)))
      if (key === undefined) return yield* bad("signWith.keyId", "the account holds no passkey with this key id")
      return { wire: { kind: "passkey" as const, keyId }, stub: passkeyStubSignature(keyId) }
    })

  const answer = answerOf

  const buildOp = (
    net: ChainNetwork,
    account: Account,
    signer: { readonly wire: OwnerBuild["signWith"]; readonly stub: Hex | undefined },
    op: {
      readonly intentType: IntentType
      readonly calls: ReadonlyArray<Call>
      readonly humanSummary: string
      readonly metadata: Schema.JsonObject
      readonly riskReducing?: boolean
      readonly warnings?: ReadonlyArray<string>
      readonly gasToken?: "USDC" | "USDT"
    }
  ) =>
    builder.build({
      account,
      intentType: op.intentType,
      calls: op.calls,
      humanSummary: op.humanSummary,
      metadata: op.metadata,
      ...(op.riskReducing === undefined ? {} : { riskReducing: op.riskReducing }),
      ...(op.warnings === undefined ? {} : { simulation: { warnings: op.warnings } }),
      ...(op.gasToken === undefined ? {} : { gasToken: op.gasToken }),
      ...(signer.stub === undefined ? {} : { stubSignature: signer.stub })
    }).pipe(Effect.map((built) => answer(net, account, built.build, signer.wire)))

  // ---- send and withdraw to safety ----

  const tokenBySymbol = (net: ChainNetwork, symbol: string) =>
    networkTokens(net.network.tokens).find((t) => t.symbol.toUpperCase() === symbol.toUpperCase())

  const buildSend = Effect.fn("OwnerAccount.send")(function*(net: ChainNetwork, account: Account, request: typeof SendRequest.Type, signer: { wire: OwnerBuild["signWith"]; stub: Hex | undefined }) {
    const sender = account.address as Address
    if (request.withdrawToSafety === true) {
      for (const field of ["to", "token", "amount"] as const) {
        if (request[field] !== undefined) return yield* bad(field, "not with withdrawToSafety: everything (or `tokens`) goes to the safe address registered on chain")
      }
      const recovery = yield* recoveryOf(net, "withdrawToSafety")
      const { safeAddress } = yield* onChain(net, readRecovery(recovery, sender))
      if (safeAddress === null) {
        return yield* new Conflict({
          message: "No safe address is registered on chain for this account: register one first (rules_update, change.kind safe_address)",
          details: { field: "withdrawToSafety" }
        })
      }
      const symbols = [...new Set((request.tokens ?? ["ETH", ...networkTokens(net.network.tokens).map((t) => t.symbol)]).map((s) => s.toUpperCase()))]
      for (const [i, symbol] of symbols.entries()) {
        if (symbol !== "ETH" && tokenBySymbol(net, symbol) === undefined) {
          return yield* bad(`tokens[${i}]`, `unknown token ${symbol} on chain ${net.chainId} (ETH, ${networkTokens(net.network.tokens).map((t) => t.symbol).join(", ")})`)
        }
      }
      const moves = yield* Effect.forEach(symbols, (symbol) =>
        Effect.gen(function*() {
          if (symbol === "ETH") {
            const balance = yield* net.chain.nativeBalance(sender).pipe(Effect.mapError(chainDown(net)))
            return { symbol, decimals: 18, balance, call: { to: safeAddress, value: balance, data: "0x" as Hex } satisfies Call }
          }
          const token = tokenBySymbol(net, symbol)!
          const balance = yield* net.chain.erc20Balance(token.address, sender).pipe(Effect.mapError(chainDown(net)))
          const data = encodeFunctionData({ abi: erc20Abi, functionName: "transfer", args: [safeAddress, balance] })
          return { symbol: token.symbol, decimals: token.decimals, balance, call: { to: token.address, value: 0n, data } satisfies Call }
        }), { concurrency: "unbounded" })
      const held = moves.filter((m) => m.balance > 0n)
      if (held.length === 0) {
        return yield* new Conflict({ message: `The account holds none of ${symbols.join(", ")}: there is nothing to withdraw`, details: { field: "tokens" } })
      }
      const frozen = account.frozen
      const freezes = !frozen && request.freeze !== false
      const freeze = freezes ? yield* rulesService.freezeCalls(account) : { calls: [], description: "" }
      const listed = held.map((m) => `${formatUnits(m.balance, m.decimals)} ${m.symbol}`).join(", ")
      return yield* buildOp(net, account, signer, {
        intentType: "send",
        calls: [...freeze.calls, ...held.map((m) => m.call)],
        riskReducing: true,
        humanSummary: `Withdraw to safety: move ${listed} from account ${quoteOutsideText(account.label)} (${account.address}) to the safe address ${safeAddress}` +
          (freezes
            ? ` and freeze the account${freeze.description === "" ? "" : ` (disable ${freeze.description})`} in the same operation.`
            : "."),
        metadata: { withdrawToSafety: true, freezes, safeAddress: lower(safeAddress), moved: held.map((m) => ({ symbol: m.symbol, amount: m.balance.toString() })) },
        ...(request.gasToken === undefined ? {} : { gasToken: request.gasToken })
      })
    }
    if (request.tokens !== undefined) return yield* bad("tokens", "only with withdrawToSafety")
    if (request.freeze !== undefined) return yield* bad("freeze", "only with withdrawToSafety")
    if (request.to === undefined) return yield* bad("to", "the recipient is required")
    if (request.token === undefined) return yield* bad("token", "the token is required (a symbol, ETH for the native coin)")
    if (request.amount === undefined) return yield* bad("amount", "the amount is required")
    if (sameAddress(request.to, sender)) return yield* bad("to", "the account cannot send to itself")
    if (sameAddress(request.to, zeroAddress)) return yield* bad("to", "the zero address burns what it receives")
    const token = request.token.toUpperCase() === "ETH" ? undefined : tokenBySymbol(net, request.token)
    if (request.token.toUpperCase() !== "ETH" && token === undefined) {
      return yield* bad("token", `unknown token ${request.token} on chain ${net.chainId}`)
    }
    const decimals = token?.decimals ?? 18
    const units = yield* Effect.try({ try: () => parseUnits(String(request.amount), decimals), catch: () => bad("amount", "not a decimal amount") })
    if (units <= 0n || String(request.amount).split(".")[1]?.length! > decimals || String(request.amount).includes("e")) {
      return yield* bad("amount", `at most ${decimals} decimals, above 0`)
    }
    const to = request.to as Address
    const call: Call = token === undefined
      ? { to, value: units, data: "0x" }
      : { to: token.address, value: 0n, data: encodeFunctionData({ abi: erc20Abi, functionName: "transfer", args: [to, units] }) }
    const symbol = token?.symbol ?? "ETH"
    return yield* buildOp(net, account, signer, {
      intentType: "send",
      calls: [call],
      humanSummary: `Send ${formatUnits(units, decimals)} ${symbol} from account ${quoteOutsideText(account.label)} (${account.address}) to ${to}.`,
      metadata: { send: { to: lower(to), symbol, amount: units.toString() } },
      ...(request.gasToken === undefined ? {} : { gasToken: request.gasToken })
    })
  })

  // ---- rules: safe address, recovery delay, cancel ----

  const buildRulesUpdate = Effect.fn("OwnerAccount.rulesUpdate")(function*(net: ChainNetwork, account: Account, request: typeof RulesUpdateRequest.Type, signer: { wire: OwnerBuild["signWith"]; stub: Hex | undefined }) {
    const change = request.change
    if (change.kind === "panic_key_remove") {
      const { row, call } = yield* panicKeys.removal(net, account, change.delegationHash, "change.delegationHash")
      return yield* buildOp(net, account, signer, {
        intentType: "rules_update",
        calls: [call],
        humanSummary: `Remove the panic key ${row.panic_key} (${quoteOutsideText(row.label)}) of account ${quoteOutsideText(account.label)} (${account.address}): ` +
          "the account disables its panic delegation on chain, so that key can no longer freeze it.",
        metadata: { rule: "panic_key_remove", panicDelegation: row.hash, panicKey: row.panic_key }
      })
    }
    const recovery = yield* recoveryOf(net, "change.kind")
    switch (change.kind) {
      case "safe_address": {
        if (change.address !== null && sameAddress(change.address, account.address)) return yield* bad("change.address", "the safe address is another address than the account")
        if (change.address !== null && sameAddress(change.address, zeroAddress)) return yield* bad("change.address", "the zero address: clear the safe address with null")
        return yield* buildOp(net, account, signer, {
          intentType: "rules_update",
          calls: [setSafeAddressCall(recovery, change.address as Address | null)],
          humanSummary: change.address === null
            ? `Clear the safe address of account ${quoteOutsideText(account.label)} (${account.address}): withdraw-to-safety will have nowhere to send.`
            : `Register ${change.address} as the safe address of account ${quoteOutsideText(account.label)} (${account.address}): withdraw-to-safety sends everything there.`,
          metadata: { rule: "safe_address", address: change.address === null ? null : lower(change.address) }
        })
      }
      case "recovery_delay": {
        const { minDelaySeconds: min, maxDelaySeconds: max } = RECOVERY_LIMITS
        if (change.delaySeconds < min || change.delaySeconds > max) return yield* bad("change.delaySeconds", `between ${min} (1 hour) and ${max} (30 days)`)
        return yield* buildOp(net, account, signer, {
          intentType: "rules_update",
          calls: [setDelayCall(recovery, change.delaySeconds)],
          humanSummary: `Set the recovery delay of account ${quoteOutsideText(account.label)} (${account.address}) to ${change.delaySeconds} seconds. ` +
            "A recovery in progress is stopped and approvals gathered so far are void.",
          metadata: { rule: "recovery_delay", delaySeconds: change.delaySeconds }
        })
      }
      case "recovery_cancel": {
        const state = yield* onChain(net, readRecovery(recovery, account.address as Address))
        // Free (risk-reducing) only when it stops something now: a started recovery, or guardians' approvals that stand.
        const standing = state.started === null && state.threshold > 0 ? yield* onChain(net, standingApprovals(recovery, account.address as Address)) : 0
        if (state.started === null && standing === 0) {
          return yield* new Conflict({
            message: "No recovery is started and no guardian approval stands for this account: there is nothing to cancel",
            details: { field: "change.kind" }
          })
        }
        return yield* buildOp(net, account, signer, {
          intentType: "rules_update",
          riskReducing: true,
          calls: [cancelRecoveryCall(recovery)],
          humanSummary: state.started === null
            ? `Void the ${standing} recovery approval(s) guardians gave so far for account ${quoteOutsideText(account.label)} (${account.address}) (no recovery is started).`
            : `Cancel the recovery of account ${quoteOutsideText(account.label)} (${account.address}) started by its guardians (it could execute after ${iso(state.started.executeAfter)}); approvals gathered so far are void.`,
          metadata: { rule: "recovery_cancel", recoveryId: state.started?.recoveryId ?? null }
        })
      }
    }
  })

  // ---- devices ----

  const buildDeviceAdd = Effect.fn("OwnerAccount.deviceAdd")(function*(net: ChainNetwork, account: Account, request: typeof DeviceAddRequest.Type, signer: { wire: OwnerBuild["signWith"]; stub: Hex | undefined }) {
    const device = request.device
    const sender = account.address as Address
    if (device.kind === "passkey") {
      const parsed = parsePasskeyPublicKey(device.keyId, device.publicKey as Hex)
      if (parsed._tag === "Invalid") return yield* bad(`device.${parsed.field}`, parsed.message)
      const held = yield* readPasskey(net.chain.client, sender, device.keyId).pipe(Effect.mapError(chainDown(net)))
      if (held !== undefined) return yield* bad("device.keyId", "the account already holds a passkey with this key id")
      return yield* buildOp(net, account, signer, {
        intentType: "device_add",
        calls: [addPasskeyCall(sender, parsed.value)],
        humanSummary: `Add the passkey ${quoteOutsideText(device.label)} (key id ${device.keyId}) to account ${quoteOutsideText(account.label)} (${account.address}): it can sign every operation of the owner.`,
        metadata: { device: { kind: "passkey", id: keyIdHashOf(device.keyId), keyId: device.keyId, label: device.label } }
      })
    }
    const { owner } = yield* currentSigners(net, account)
    if (owner !== null && sameAddress(owner, device.address)) return yield* bad("device.address", "already the account's owner key")
    if (sameAddress(device.address, sender) || sameAddress(device.address, zeroAddress)) return yield* bad("device.address", "not a key that can sign")
    return yield* buildOp(net, account, signer, {
      intentType: "device_add",
      calls: [replaceOwnerCall(sender, lower(device.address) as Address)],
      humanSummary: owner === null
        ? `Make ${device.address} (${quoteOutsideText(device.label)}) the owner key of account ${quoteOutsideText(account.label)} (${account.address}).`
        : `Replace the owner key ${owner} of account ${quoteOutsideText(account.label)} (${account.address}) by ${device.address} (${quoteOutsideText(device.label)}): ` +
          "the account holds one EOA key, so the old one stops signing.",
      metadata: { device: { kind: "eoa", id: lower(device.address), label: device.label } },
      warnings: owner === null ? [] : [
        `${owner} stops signing for the account: what it signed (grants, the recovery delegation) stops verifying on chain; sign those again with a remaining device`
      ]
    })
  })

  /** The account's signers now: `owner()` and passkeys on chain, or (not deployed) the key it will be deployed with. */
  const currentSigners = (net: ChainNetwork, account: Account) =>
    Effect.gen(function*() {
      const devices = yield* onChain(net, readDevices(account.address as Address))
      if (!devices.deployed) return { deployed: false, owner: lower(account.signerAddress) as Address | null, passkeys: [] as typeof devices.passkeys }
      return { deployed: true, owner: devices.owner === null ? null : lower(devices.owner.address), passkeys: devices.passkeys }
    })

  const buildDeviceRemove = Effect.fn("OwnerAccount.deviceRemove")(function*(net: ChainNetwork, account: Account, request: typeof DeviceRemoveRequest.Type, signer: { wire: OwnerBuild["signWith"]; stub: Hex | undefined }) {
    const sender = account.address as Address
    const signers = yield* currentSigners(net, account)
    const count = (signers.owner === null ? 0 : 1) + signers.passkeys.length
    const stops = "what it signed (grants, the recovery delegation) stops verifying on chain; sign those again with a remaining device"
    if (request.device.kind === "passkey") {
      const keyId = request.device.keyId
      if (!signers.passkeys.some((k) => k.keyId === keyId)) return yield* bad("device.keyId", "the account holds no passkey with this key id")
      if (count === 1) return yield* bad("device", "the account's last device: add another first (the account refuses to keep no signer)")
      if (signer.wire.keyId === keyId) return yield* bad("signWith.keyId", "a device cannot sign its own removal here: sign with another device")
      return yield* buildOp(net, account, signer, {
        intentType: "device_remove",
        calls: [removePasskeyCall(sender, keyId)],
        humanSummary: `Remove the passkey ${keyId} from account ${quoteOutsideText(account.label)} (${account.address}): it can no longer sign.`,
        metadata: { device: { kind: "passkey", id: keyIdHashOf(keyId), keyId } },
        warnings: [`The passkey ${keyId} stops signing for the account: ${stops}`]
      })
    }
    if (signers.owner === null) return yield* bad("device.kind", "the account has no EOA owner key")
    if (count === 1) return yield* bad("device", "the account's last device: add another first (the account refuses to keep no signer)")
    if (signer.wire.kind === "eoa") return yield* bad("signWith", "the owner key cannot sign its own removal here: sign with a passkey (signWith.keyId)")
    return yield* buildOp(net, account, signer, {
      intentType: "device_remove",
      calls: [removeOwnerCall(sender)],
      humanSummary: `Remove the owner key ${signers.owner} from account ${quoteOutsideText(account.label)} (${account.address}): only its passkeys sign from now on. ` +
        "Signing in to this service stays with that key's address.",
      metadata: { device: { kind: "eoa", id: signers.owner } },
      warnings: [`${signers.owner} stops signing for the account: ${stops}`]
    })
  })

  // ---- guardians ----

  /** Whether a signed delegation still verifies: the account accepts its signature now (not deployed: it was checked when signed). */
  const usable = (net: ChainNetwork, account: Account, row: RecoveryDelegationRow) =>
    Effect.gen(function*() {
      if (row.signature === null) return false
      const deployed = yield* net.chain.isDeployed(account.address as Address).pipe(Effect.mapError(chainDown(net)))
      return !deployed || (yield* onChain(net, isDelegationSignatureValid(delegationFromRow(row.delegation, row.signature), dmConfig(net))))
    })

  /** The account's signed recovery delegation that still verifies, if any. */
  const usableRecoveryDelegation = (net: ChainNetwork, account: Account) =>
    Effect.gen(function*() {
      const signed = (yield* repo.recoveryDelegationsOf(account.id)).find((r) => r.signature !== null)
      return signed !== undefined && (yield* usable(net, account, signed)) ? signed : undefined
    })

  /** The delegation to sign: the latest one not signed yet, or a new one (unsigned). */
  const recoveryDelegationToSign = Effect.fn("OwnerAccount.recoveryDelegation")(function*(account: Account) {
    const net = yield* chains.serving(account.chainId)
    const recovery = yield* recoveryOf(net, "chainId")
    const pending = (yield* repo.recoveryDelegationsOf(account.id)).find((r) => r.signature === null)
    const row = pending ?? (yield* Effect.gen(function*() {
      const delegation = makeRecoveryDelegation(net.network.delegation, {
        account: account.address as Address,
        recovery,
        salt: toHex(crypto.getRandomValues(new Uint8Array(32)))
      })
      const hash = lower(hashDelegation(delegation))
      yield* repo.insertRecoveryDelegation({ hash, accountId: account.id, chainId: net.chainId, delegation: delegationWire(delegation) })
      return (yield* repo.findRecoveryDelegation(hash))!
    }))
    return toSign(
      net,
      row.hash,
      delegationFromRow(row.delegation),
      "Guardians can execute a recovery only with the account's delegation to the Recovery contract (it allows nothing but " +
        "updateSigners on the account, once guardians approved and the delay passed). Sign it with a device and post it to " +
        "POST /account/rules/delegations/sign; guardian_add is built once it is signed."
    )
  })

  const buildGuardianChange = Effect.fn("OwnerAccount.guardians")(function*(
    net: ChainNetwork,
    account: Account,
    request: typeof GuardianAddRequest.Type | typeof GuardianRemoveRequest.Type,
    signer: { wire: OwnerBuild["signWith"]; stub: Hex | undefined }
  ) {
    const recovery = yield* recoveryOf(net, "intentType")
    const sender = account.address as Address
    const state = yield* onChain(net, readRecovery(recovery, sender))
    const adding = request.intentType === "guardian_add"
    const targets = request.intentType === "guardian_add" ? request.guardians.map((g) => g.address as Address) : request.guardians.map((g) => g as Address)
    const seen = new Set<string>()
    for (const [i, g] of targets.entries()) {
      if (seen.has(lower(g))) return yield* bad(`guardians[${i}]`, "named twice")
      seen.add(lower(g))
    }
    const t = request.threshold
    let current: ReadonlyArray<Address> = state.guardians
    const calls: Array<Call> = []
    for (const [i, g] of targets.entries()) {
      const last = i === targets.length - 1
      const after = current.length + (adding ? 1 : -1)
      // Each call must leave a threshold the contract accepts; the last one sets the one asked for.
      const step = last ? t : after === 0 ? 0 : Math.min(Math.max(t, 1), after)
      const checked = checkGuardianChange(sender, current, adding ? { add: g } : { remove: g }, step)
      if (checked._tag === "Invalid") {
        return yield* bad(checked.field === "guardian" ? (adding ? `guardians[${i}].address` : `guardians[${i}]`) : "threshold", checked.message)
      }
      current = checked.value
      calls.push(adding ? addGuardianCall(recovery, g, step) : removeGuardianCall(recovery, g, step))
    }
    const delaySeconds = request.intentType === "guardian_add" ? request.delaySeconds : undefined
    if (delaySeconds !== undefined) {
      const { minDelaySeconds: min, maxDelaySeconds: max } = RECOVERY_LIMITS
      if (delaySeconds < min || delaySeconds > max) return yield* bad("delaySeconds", `between ${min} (1 hour) and ${max} (30 days)`)
      calls.push(setDelayCall(recovery, delaySeconds))
    }
    const labels = request.intentType === "guardian_add"
      ? request.guardians.flatMap((g) => g.label === undefined ? [] : [{ address: lower(g.address), label: g.label }])
      : []
    // Guardians installed without the signed delegation could approve a recovery nobody can execute.
    const delegation = adding ? yield* usableRecoveryDelegation(net, account) : undefined
    if (adding && delegation === undefined) {
      return yield* new Conflict({
        message: "Sign the account's delegation to the Recovery contract first: POST /account/rules/delegations/build, " +
          "then POST /account/rules/delegations/sign (a delegation signed by a device the account no longer holds must be signed again)",
        details: { field: "intentType", reason: RECOVERY_DELEGATION_UNSIGNED }
      })
    }
    const delay = delaySeconds ?? state.delaySeconds
    const summary = adding
      ? `Add ${targets.length} guardian(s) (${targets.join(", ")}) to account ${quoteOutsideText(account.label)} (${account.address}); ` +
        `${t} of ${current.length} can start a recovery that replaces the account's devices after ${delay} seconds, unless a device cancels it.`
      : `Remove ${targets.length} guardian(s) (${targets.join(", ")}) from account ${quoteOutsideText(account.label)} (${account.address}); ` +
        (current.length === 0 ? "no guardian is left: the account cannot be recovered." : `${t} of ${current.length} left can start a recovery.`)
    return yield* buildOp(net, account, signer, {
      intentType: request.intentType,
      calls,
      humanSummary: summary + " Approvals gathered so far are void.",
      metadata: {
        guardians: targets.map(lower),
        threshold: t,
        labels,
        recoveryDelegation: delegation?.hash ?? null
      }
    })
  })

  const build = Effect.fn("OwnerAccount.build")(function*(account: Account, request: OwnerBuildRequest) {
    const net = yield* chains.serving(account.chainId)
    if (request.intentType === "device_threshold") return yield* bad("intentType", NO_THRESHOLD)
    if (request.intentType === "swap") return yield* bad("intentType", NO_SWAP)
    if (request.intentType === "account_fund") return yield* bad("intentType", NO_FUND_OPERATION)
    if (request.intentType === "panic_freeze") return yield* bad("intentType", PANIC_FREEZE_ELSEWHERE)
    const signer = yield* signWithOf(net, account, request)
    switch (request.intentType) {
      case "account_freeze":
      case "account_unfreeze": {
        const built = yield* rulesService.build(account, request.intentType, signer.stub === undefined ? {} : { stubSignature: signer.stub })
        return answer(net, account, built, signer.wire)
      }
      case "send":
        return yield* buildSend(net, account, request, signer)
      case "rules_update":
        return yield* buildRulesUpdate(net, account, request, signer)
      case "device_add":
        return yield* buildDeviceAdd(net, account, request, signer)
      case "device_remove":
        return yield* buildDeviceRemove(net, account, request, signer)
      case "guardian_add":
      case "guardian_remove":
        return yield* buildGuardianChange(net, account, request, signer)
      case "panic_install": {
        const row = yield* panicKeys.installable(net, account, request.delegationHash)
        if (request.replaces !== undefined && lower(request.replaces) === row.hash) return yield* bad("replaces", "a panic key cannot replace itself")
        // Rotation: the old key's delegation is disabled in the same operation that installs the new one.
        const replaced = request.replaces === undefined ? undefined : yield* panicKeys.removal(net, account, request.replaces, "replaces")
        const deployed = yield* net.chain.isDeployed(account.address as Address).pipe(Effect.mapError(chainDown(net)))
        return yield* buildOp(net, account, signer, {
          intentType: "panic_install",
          // The record of the install on chain (and the deployment the delegation's ERC-1271 check needs).
          calls: [...(replaced === undefined ? [] : [replaced.call]), { to: account.address as Address, value: 0n, data: "0x" }],
          humanSummary: `Install ${row.panic_key} (${quoteOutsideText(row.label)}) as a panic key of account ${quoteOutsideText(account.label)} (${account.address})` +
            (deployed ? "" : ", deploying the account") +
            (replaced === undefined ? "" : `, replacing the panic key ${replaced.row.panic_key} (${quoteOutsideText(replaced.row.label)}), whose delegation is disabled on chain`) +
            `: signing in with that key, it can freeze the account (disable its grants) and do nothing else; only a device unfreezes.`,
          metadata: { panicDelegation: row.hash, panicKey: row.panic_key, delegate: row.delegate, replaces: replaced?.row.hash ?? null }
        })
      }
      case "account_deploy": {
        const deployed = yield* net.chain.isDeployed(account.address as Address).pipe(Effect.mapError(chainDown(net)))
        if (deployed) return yield* new Conflict({ message: `Account ${account.address} is already deployed on chain ${net.chainId}`, details: { field: "intentType" } })
        return yield* buildOp(net, account, signer, {
          intentType: "account_deploy",
          calls: [{ to: account.address as Address, value: 0n, data: "0x" }],
          humanSummary: `Deploy account ${quoteOutsideText(account.label)} (${account.address}) on chain ${net.chainId} (${net.name}), with no other call: ` +
            "its code is put at its address; what it holds and who signs for it do not change.",
          metadata: { deploy: true }
        })
      }
    }
  })

  // ---- reads ----

  const dmConfig = (net: ChainNetwork) => ({ chainId: net.chainId, delegationManager: net.network.delegation.DelegationManager })

  const devices = Effect.fn("OwnerAccount.devices")(function*(account: Account) {
    const net = yield* chains.serving(account.chainId)
    const [onchain, labels] = yield* Effect.all([onChain(net, readDevices(account.address as Address)), repo.labelsOf(account.id)])
    const labelOf = (id: string, fallback: string) => labels.find((l) => l.device === lower(id))?.label ?? fallback
    if (!onchain.deployed) {
      const owner = lower(account.signerAddress)
      return [{ id: owner, kind: "eoa", address: owner, label: labelOf(owner, "Owner key"), role: "owner", addedAt: account.createdAt }] satisfies Array<Device>
    }
    const list: Array<Device> = []
    if (onchain.owner !== null) {
      const owner = lower(onchain.owner.address)
      const since = onchain.owner.since
      list.push({
        id: owner,
        kind: "eoa",
        address: owner,
        label: labelOf(owner, "Owner key"),
        role: "owner",
        addedAt: since === undefined ? account.createdAt : iso(since.timestamp),
        ...(since === undefined ? {} : { transactionHash: since.transactionHash })
      })
    }
    for (const k of onchain.passkeys) {
      list.push({
        id: lower(k.keyIdHash),
        kind: "passkey",
        keyId: k.keyId,
        publicKey: `0x04${k.x.toString(16).padStart(64, "0")}${k.y.toString(16).padStart(64, "0")}`,
        label: labelOf(k.keyIdHash, "Passkey"),
        role: "owner",
        addedAt: iso(k.added.timestamp),
        transactionHash: k.added.transactionHash
      })
    }
    return list
  })

  const disabledOnChain = (net: ChainNetwork, hash: Hash) =>
    net.chain.call({
      to: net.network.delegation.DelegationManager,
      data: encodeFunctionData({ abi: DelegationManager, functionName: "disabledDelegations", args: [hash] })
    }).pipe(
      Effect.map((data) => decodeFunctionResult({ abi: DelegationManager, functionName: "disabledDelegations", data }) as boolean),
      Effect.mapError(chainDown(net))
    )

  const recoveryDelegationView = (net: ChainNetwork, row: RecoveryDelegationRow) =>
    Effect.gen(function*() {
      const delegation: Delegation = delegationFromRow(row.delegation, row.signature)
      const [disabled, valid] = yield* Effect.all([
        disabledOnChain(net, row.hash as Hash),
        onChain(net, isDelegationSignatureValid(delegation, dmConfig(net)))
      ], { concurrency: "unbounded" })
      return {
        delegationHash: row.hash,
        delegate: lower(delegation.delegate),
        installedAt: row.installed_at?.toISOString() ?? null,
        enabledOnChain: !disabled,
        signatureValid: valid,
        delegation: delegationWire(delegation)
      }
    })

  const rules = Effect.fn("OwnerAccount.rules")(function*(account: Account) {
    const net = yield* chains.serving(account.chainId)
    const sender = account.address as Address
    const recovery = net.network.recovery?.address
    const [deviceList, deployed, state, guardianLabels, delegations, panicList] = yield* Effect.all([
      devices(account),
      net.chain.isDeployed(sender).pipe(Effect.mapError(chainDown(net))),
      recovery === undefined ? Effect.succeed(undefined) : onChain(net, readRecovery(recovery, sender)),
      repo.guardianLabels(account.id),
      repo.recoveryDelegationsOf(account.id),
      panicKeys.list(net, account)
    ], { concurrency: "unbounded" })
    const frozen = account.frozen
    const started = state?.started === null || state === undefined || recovery === undefined ? null : {
      recoveryId: state.started.recoveryId,
      executeAfter: iso(state.started.executeAfter),
      approvals: (yield* onChain(net, readApprovals(recovery, state.started.recoveryId))).approvals
    }
    const signed = delegations.find((d) => d.signature !== null)
    const buildable: Array<IntentType> = frozen
      ? ["account_unfreeze", "send", ...(recovery === undefined ? [] : ["rules_update" as const])]
      : [
        "account_freeze",
        "send",
        "device_add",
        "device_remove",
        "panic_install",
        ...(deployed ? [] : ["account_deploy" as const]),
        ...(recovery === undefined ? [] : ["rules_update", "guardian_add", "guardian_remove"] as const)
      ]
    return {
      accountId: account.id,
      address: lower(account.address),
      chainId: net.chainId,
      frozen,
      deployed,
      buildableIntents: buildable,
      devices: deviceList,
      safeAddress: state?.safeAddress === null || state === undefined ? null : lower(state.safeAddress),
      recovery: state === undefined || recovery === undefined ? null : {
        contract: lower(recovery),
        guardians: state.guardians.map((g) => ({ address: lower(g), label: guardianLabels.find((l) => l.guardian === lower(g))?.label ?? null })),
        threshold: state.threshold,
        delaySeconds: state.delaySeconds,
        nonce: state.nonce.toString(),
        started,
        delegation: signed === undefined ? null : yield* recoveryDelegationView(net, signed)
      },
      panicKeys: panicList
    } satisfies AccountRulesWire
  })

  const signDelegation = Effect.fn("OwnerAccount.signDelegation")(function*(account: Account, request: typeof SignDelegationRequest.Type) {
    const row = yield* repo.findRecoveryDelegation(request.delegationHash)
    if (row === undefined || row.account_id !== account.id) return yield* bad("delegationHash", "no delegation of this account to sign with this hash")
    const net = yield* chains.serving(account.chainId)
    const delegation = delegationFromRow(row.delegation)
    const digest = delegationDigest(net, delegation)
    const signature = yield* deviceSignature(net, account, digest, request)
    yield* repo.setSignature(row.hash, signature)
    return yield* rules(account)
  })

  // ---- relay hooks ----

  const Meta = Schema.Struct({
    device: Schema.optionalKey(Schema.Struct({ kind: Schema.Literals(["passkey", "eoa"]), id: Schema.String, label: Schema.optionalKey(Schema.String) })),
    labels: Schema.optionalKey(Schema.Array(Schema.Struct({ address: Schema.String, label: Schema.String }))),
    recoveryDelegation: Schema.optionalKey(Schema.NullOr(Schema.String))
  })
  const metaOf = (metadata: Schema.JsonObject) => Schema.decodeUnknownEffect(Meta)(metadata).pipe(Effect.orDie)

  // Only on execution, inside the relay's settling transaction: the label of what the chain now holds.
  yield* hooks.registerOnExecuted("device_add", "owner_device_label", (op, receipt) =>
    Effect.gen(function*() {
      const { device } = yield* metaOf(op.build.metadata)
      if (device?.label !== undefined) yield* repo.upsertLabel(op.accountId, device.id, device.kind, device.label)
      // A new EOA owner key replaced the old one on chain: the account follows it to its sign-in.
      if (device?.kind === "eoa") {
        yield* repo.changeOwnerKey({ accountId: op.accountId, oldSigner: op.signerAddress, newSigner: device.id, txHash: receipt.transactionHash })
      }
    }))
  yield* hooks.registerOnExecuted("guardian_add", "owner_guardians", (op, receipt) =>
    Effect.gen(function*() {
      const meta = yield* metaOf(op.build.metadata)
      yield* repo.upsertGuardianLabels(op.accountId, meta.labels ?? [])
      if (typeof meta.recoveryDelegation === "string") yield* repo.markInstalled(meta.recoveryDelegation, receipt.transactionHash)
    }))
  return OwnerAccount.of({
    build,
    rules,
    devices,
    signDelegation,
    recoveryDelegationToSign,
    delegationAccount: (hash) =>
      repo.findRecoveryDelegation(hash).pipe(Effect.map((row) => row === undefined ? undefined : { accountId: row.account_id, chainId: row.chain_id }))
  })
})
