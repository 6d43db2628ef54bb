/**
 * The panic key over HTTP (issue 27, docs/account.md "The panic key"). The owner names a
 * trusted contact's or a cold key's address; the service makes the panic delegation (from the
 * account to that key's own account, caveats PanicFreezeEnforcer + RedeemerEnforcer: it can
 * only disable the account's grants, src/chain/Panic.ts), a device signs it, and
 * `panic_install` (an owner operation, deploying the account if needed: the chain checks the
 * delegation's signature through the account) puts it on the record. The panic key signs in
 * with its own address and sees only `GET /panic/accounts`; `panic_freeze` is its own
 * operation (risk-reducing, sponsored) redeeming the delegation to disable every live grant.
 * When it executes, the owner's account reads frozen and the owner's log has the entry.
 */
import { DelegationManager } from "@metamask/delegation-abis"
import { hashDelegation } from "@metamask/smart-accounts-kit/utils"
import { Context, Effect, Layer, Schema } from "effect"
import { type Address, decodeFunctionResult, encodeFunctionData, type Hash, type Hex, toFunctionSelector, toHex, zeroAddress } from "viem"
import { AccountFactory } from "../accounts/AccountFactory.ts"
import { AccountRow, toAccount } from "../accounts/Accounts.ts"
import { Accounts } from "../accounts/Accounts.ts"
import type { Account } from "../accounts/Domain.ts"
import { BadRequest, Conflict, NotFound, ServiceUnavailable } from "../api/Errors.ts"
import { AuditRecorder } from "../audit/Recorder.ts"
import { type BuildError, type Call, OperationBuilder } from "../builds/OperationBuilder.ts"
import { delegationArg } from "../chain/Accounts4337.ts"
import { isDelegationSignatureValid, redeemCall, sameAddress } from "../chain/AccountDelegations.ts"
import { Chain } from "../chain/Chain.ts"
import { type ChainNetwork, Chains } from "../chain/Chains.ts"
import { passkeyStubSignature, readPasskey } from "../chain/Devices.ts"
import { makePanicDelegation } from "../chain/Panic.ts"
import { RelayHooks } from "../userops/RelayHooks.ts"
import { SqlClient } from "effect/sql"
import { OwnerRepo, type PanicKeyRow } from "./OwnerRepo.ts"
import { AccountRules } from "./Rules.ts"
import { answerOf, delegationDigest, delegationFromRow, delegationWire, deviceSignature, toSign } from "./Signing.ts"
import type { DelegationToSign, OwnerBuild, PanicAccount, PanicFreezeRequest, PanicKey, SignDelegationRequest } from "./Wire.ts"

const lower = (s: string) => s.toLowerCase()
const bad = (field: string, message: string) => new BadRequest({ message: `${field}: ${message}`, details: { field } })
const chainDown = (net: ChainNetwork) => (e: { readonly message: string }) =>
  new ServiceUnavailable({ message: `Chain ${net.chainId} cannot be read: ${e.message}`, details: { chainId: net.chainId } })
const DISABLE = toFunctionSelector("disableDelegation((address,address,bytes32,(address,bytes,bytes)[],uint256,bytes))")

export class PanicKeys extends Context.Service<PanicKeys, {
  /** The panic delegation to sign, for `panicKey` (a new one each time: the owner may hold several). */
  delegationToSign(account: Account, request: { readonly panicKey?: string | undefined; readonly label?: string | undefined }): Effect.Effect<typeof DelegationToSign.Type, BadRequest | ServiceUnavailable>
  /** Which account a stored panic delegation belongs to (undefined: none). */
  delegationAccount(hash: string): Effect.Effect<{ readonly accountId: string } | undefined>
  /** A device's signature of the panic delegation, checked against the account's signers now. */
  sign(account: Account, request: typeof SignDelegationRequest.Type): Effect.Effect<void, BadRequest | ServiceUnavailable>
  /** The install's checks: the signed delegation of this account that still verifies. */
  installable(net: ChainNetwork, account: Account, hash: string): Effect.Effect<PanicKeyRow, BadRequest | Conflict | ServiceUnavailable>
  /**
   * An installed panic key of this account still live on chain, for its removal or replacement:
   * the account's own `disableDelegation` of it (the panic key's redemptions revert after it).
   */
  removal(net: ChainNetwork, account: Account, hash: string, field: string): Effect.Effect<{ readonly row: PanicKeyRow; readonly call: Call }, BadRequest | Conflict | ServiceUnavailable>
  /** The account's panic keys as `GET /account/rules` shows them (chain reads). */
  list(net: ChainNetwork, account: Account): Effect.Effect<ReadonlyArray<typeof PanicKey.Type>, ServiceUnavailable>
  /** The panic key's own view: the accounts it can freeze, and nothing else. */
  accountsFor(panicKey: string): Effect.Effect<ReadonlyArray<typeof PanicAccount.Type>, ServiceUnavailable>
  /** `panic_freeze`: the panic key's own operation. */
  freeze(panicKey: string, request: typeof PanicFreezeRequest.Type): Effect.Effect<OwnerBuild, BuildError | NotFound | Conflict | BadRequest>
}>()("das/owner/PanicKeys") {
  static readonly layer = Layer.effect(PanicKeys, Effect.suspend(() => make))
}

const make = Effect.gen(function*() {
  const chains = yield* Chains
  const builder = yield* OperationBuilder
  const rules = yield* AccountRules
  const repo = yield* OwnerRepo
  const factory = yield* AccountFactory
  const accounts = yield* Accounts
  const hooks = yield* RelayHooks
  const recorder = yield* AuditRecorder
  const sql = yield* SqlClient.SqlClient

  const dmConfig = (net: ChainNetwork) => ({ chainId: net.chainId, delegationManager: net.network.delegation.DelegationManager })

  const accountById = (id: string) =>
    sql`SELECT * FROM accounts WHERE id = ${id}`.pipe(
      Effect.flatMap(Schema.decodeUnknownEffect(Schema.Array(AccountRow))),
      Effect.map((rows) => rows[0] === undefined ? undefined : toAccount(rows[0])),
      Effect.orDie
    )

  const disabledOnChain = (net: ChainNetwork, hash: string) =>
    net.chain.call({
      to: net.network.delegation.DelegationManager,
      data: encodeFunctionData({ abi: DelegationManager, functionName: "disabledDelegations", args: [hash as Hash] })
    }).pipe(
      Effect.map((data) => decodeFunctionResult({ abi: DelegationManager, functionName: "disabledDelegations", data }) as boolean),
      Effect.mapError(chainDown(net))
    )

  /** Read from the chain: not disabled, and its signature verifies against the account's signers now. */
  const stateOf = (net: ChainNetwork, row: PanicKeyRow) =>
    Effect.gen(function*() {
      if (row.signature === null) return { enabled: true, valid: false }
      const [disabled, valid] = yield* Effect.all([
        disabledOnChain(net, row.hash),
        isDelegationSignatureValid(delegationFromRow(row.delegation, row.signature), dmConfig(net)).pipe(
          Effect.provideService(Chain, net.chain),
          Effect.mapError((e) => chainDown(net)(e as { message: string }))
        )
      ], { concurrency: "unbounded" })
      return { enabled: !disabled, valid }
    })

  const delegationToSign = Effect.fn("PanicKeys.delegationToSign")(function*(account: Account, request: { readonly panicKey?: string | undefined; readonly label?: string | undefined }) {
    const net = yield* chains.serving(account.chainId)
    if (request.panicKey === undefined) return yield* bad("panicKey", "the panic key's address is required with kind panic")
    const key = lower(request.panicKey) as Address
    if (sameAddress(key, zeroAddress)) return yield* bad("panicKey", "the zero address signs nothing")
    if (sameAddress(key, account.address) || sameAddress(key, account.signerAddress)) {
      return yield* bad("panicKey", "the panic key is another key than the account and its owner key: a trusted contact's or a cold key")
    }
    const delegate = (yield* factory.counterfactualAddress(net.chainId, key, 0)) as Address
    if (sameAddress(delegate, account.address)) return yield* bad("panicKey", "the panic key's own account is this account")
    const made = makePanicDelegation(net.network.delegation, {
      delegator: account.address as Address,
      delegate,
      protectedDelegates: net.network.recovery === undefined ? [] : [net.network.recovery.address],
      salt: toHex(crypto.getRandomValues(new Uint8Array(32)))
    })
    if (made._tag === "Invalid") return yield* bad(made.field === "network" ? "chainId" : "panicKey", made.message)
    const hash = lower(hashDelegation(made.value))
    yield* repo.insertPanicKey({
      hash,
      accountId: account.id,
      chainId: net.chainId,
      panicKey: key,
      delegate,
      label: request.label ?? "Panic key",
      delegation: delegationWire(made.value)
    })
    return {
      ...toSign(
        net,
        hash,
        made.value,
        `The panic key ${lower(key)} (its own account ${lower(delegate)}) may freeze this account with it and do nothing else: ` +
          "each use can only disable one of the account's grants (never the recovery's or a panic key's), which the owner can re-enable. " +
          "Sign it with a device and post it to POST /account/rules/delegations/sign; then build panic_install."
      ),
      kind: "panic" as const
    }
  })

  const sign = Effect.fn("PanicKeys.sign")(function*(account: Account, request: typeof SignDelegationRequest.Type) {
    const row = yield* repo.findPanicKey(request.delegationHash)
    if (row === undefined || row.account_id !== account.id) return yield* bad("delegationHash", "no delegation of this account to sign with this hash")
    const net = yield* chains.serving(account.chainId)
    const signature = yield* deviceSignature(net, account, delegationDigest(net, delegationFromRow(row.delegation)), request)
    yield* repo.setPanicSignature(row.hash, signature)
  })

  const installable = Effect.fn("PanicKeys.installable")(function*(net: ChainNetwork, account: Account, hash: string) {
    const row = yield* repo.findPanicKey(hash)
    if (row === undefined || row.account_id !== account.id) return yield* bad("delegationHash", "no panic delegation of this account with this hash")
    if (row.signature === null) {
      return yield* new Conflict({ message: "Sign the panic delegation first: POST /account/rules/delegations/sign", details: { field: "delegationHash" } })
    }
    if (row.installed_at !== null) return yield* new Conflict({ message: "This panic key is already installed", details: { field: "delegationHash" } })
    const deployed = yield* net.chain.isDeployed(account.address as Address).pipe(Effect.mapError(chainDown(net)))
    if (deployed) {
      const { enabled, valid } = yield* stateOf(net, row)
      if (!enabled || !valid) {
        return yield* new Conflict({
          message: "This panic delegation no longer verifies on chain (a device that signed it is gone, or it was disabled): make and sign a new one",
          details: { field: "delegationHash" }
        })
      }
    }
    return row
  })

  const removal = Effect.fn("PanicKeys.removal")(function*(net: ChainNetwork, account: Account, hash: string, field: string) {
    const row = yield* repo.findPanicKey(hash)
    if (row === undefined || row.account_id !== account.id || row.installed_at === null || row.signature === null) {
      return yield* bad(field, "no installed panic key of this account with this hash")
    }
    if (yield* disabledOnChain(net, row.hash)) return yield* new Conflict({ message: "This panic key is already removed (its delegation is disabled on chain)", details: { field } })
    const delegation = delegationFromRow(row.delegation, row.signature)
    const call: Call = {
      to: net.network.delegation.DelegationManager,
      value: 0n,
      data: encodeFunctionData({ abi: DelegationManager, functionName: "disableDelegation", args: [delegationArg(delegation)] })
    }
    return { row, call }
  })

  const list = Effect.fn("PanicKeys.list")(function*(net: ChainNetwork, account: Account) {
    const rows = yield* repo.panicKeysOf(account.id)
    return yield* Effect.forEach(rows, (row) =>
      Effect.map(stateOf(net, row), ({ enabled, valid }) => ({
        delegationHash: row.hash,
        panicKey: row.panic_key,
        delegate: row.delegate,
        label: row.label,
        signed: row.signature !== null,
        installedAt: row.installed_at?.toISOString() ?? null,
        enabledOnChain: enabled,
        signatureValid: valid
      })), { concurrency: 4 })
  })

  const accountsFor = Effect.fn("PanicKeys.accountsFor")(function*(panicKey: string) {
    const rows = yield* repo.panicKeysHeldBy(panicKey)
    return yield* Effect.forEach(rows, (row) =>
      Effect.gen(function*() {
        const net = yield* chains.serving(row.chain_id)
        const [account, state] = yield* Effect.all([accountById(row.account_id), stateOf(net, row)])
        return {
          delegationHash: row.hash,
          account: lower(account!.address),
          chainId: row.chain_id,
          label: account!.label,
          frozen: account!.frozen,
          usable: state.enabled && state.valid,
          delegation: delegationWire(delegationFromRow(row.delegation, row.signature))
        }
      }), { concurrency: 4 })
  })

  const freeze = Effect.fn("PanicKeys.freeze")(function*(panicKey: string, request: typeof PanicFreezeRequest.Type) {
    const row = yield* repo.findPanicKey(request.delegationHash)
    if (row === undefined || !sameAddress(row.panic_key, panicKey) || row.signature === null || row.installed_at === null) {
      return yield* new NotFound({ message: "No installed panic key of yours with this hash", details: { field: "delegationHash" } })
    }
    const owner = (yield* accountById(row.account_id))!
    if (owner.frozen) return yield* new Conflict({ message: "The account is already frozen", details: { field: "delegationHash" } })
    const net = yield* chains.serving(row.chain_id)
    const { enabled, valid } = yield* stateOf(net, row)
    if (!enabled || !valid) {
      return yield* new Conflict({ message: "The owner replaced this panic key (its delegation no longer verifies on chain)", details: { field: "delegationHash" } })
    }
    const own = (yield* accounts.list(lower(panicKey))).find((a) => a.chainId === row.chain_id && sameAddress(a.address, row.delegate))
    if (own === undefined) {
      return yield* new Conflict({ message: `The panic key's own account ${row.delegate} is not in this sign-in's accounts`, details: { field: "delegationHash" } })
    }
    const signWith = request.signWith?.keyId
    if (signWith !== undefined) {
      const key = yield* readPasskey(net.chain.client, own.address as Address, signWith).pipe(Effect.mapError(chainDown(net)))
      if (key === undefined) return yield* bad("signWith.keyId", "the panic key's account holds no passkey with this key id")
    }
    // Only the grants' disables go through the panic delegation (the enforcer allows nothing else).
    const plan = yield* rules.freezeCalls(owner)
    const dm = net.network.delegation.DelegationManager
    const disables = plan.calls.filter((c) => sameAddress(c.to, dm) && (c.value ?? 0n) === 0n && c.data?.slice(0, 10) === DISABLE)
    const executions = disables.length === 0
      ? [{ target: owner.address as Address, value: 0n, callData: "0x" as Hex }]
      : disables.map((c) => ({ target: dm, value: 0n, callData: c.data as Hex }))
    const delegation = delegationFromRow(row.delegation, row.signature)
    const built = yield* builder.build({
      account: own,
      intentType: "panic_freeze",
      calls: [redeemCall(dm, delegation, executions)],
      riskReducing: true,
      humanSummary: `Panic freeze of account ${owner.address} on chain ${net.chainId}: ` +
        (disables.length === 0
          ? "it has no live grants; the operation records the freeze on chain."
          : `disable its ${disables.length} live on-chain permission(s)${plan.description === "" ? "" : ` (${plan.description})`}.`) +
        " Only the owner can unfreeze it.",
      metadata: { panic: { accountId: owner.id, delegationHash: row.hash, disables: disables.length } },
      ...(signWith === undefined ? {} : { stubSignature: passkeyStubSignature(signWith) })
    })
    return answerOf(net, own, built.build, signWith === undefined ? { kind: "eoa" } : { kind: "passkey", keyId: signWith })
  })

  const PanicMeta = Schema.Struct({ panic: Schema.Struct({ accountId: Schema.String, delegationHash: Schema.String }) })
  const InstallMeta = Schema.Struct({ panicDelegation: Schema.String })

  // The panic key's freeze executed: the owner's account is frozen, and the owner's log says who froze it.
  yield* hooks.registerOnExecuted("panic_freeze", "owner_panic_frozen", (op, receipt) =>
    Effect.gen(function*() {
      const { panic } = yield* Schema.decodeUnknownEffect(PanicMeta)(op.build.metadata).pipe(Effect.orDie)
      yield* repo.setFrozen(panic.accountId, true)
      const net = chains.find(op.chainId)
      yield* recorder.record({
        accountId: panic.accountId,
        declineId: `panic:${op.id}${op.settlementKey === undefined ? "" : `:${op.settlementKey}`}`,
        actor: lower(op.signerAddress),
        action: "panic_freeze",
        chain: net?.name ?? String(op.chainId),
        chainId: op.chainId,
        status: "executed",
        provenance: "onchain",
        txHash: receipt.transactionHash
      }).pipe(Effect.catchTag("AuditDuplicate", () => Effect.void))
    }))
  yield* hooks.registerOnExecuted("panic_install", "owner_panic_installed", (op, receipt) =>
    Effect.gen(function*() {
      const meta = yield* Schema.decodeUnknownEffect(InstallMeta)(op.build.metadata).pipe(Effect.orDie)
      yield* repo.markPanicInstalled(meta.panicDelegation, receipt.transactionHash)
    }))

  return PanicKeys.of({
    delegationToSign,
    delegationAccount: (hash) => repo.findPanicKey(hash).pipe(Effect.map((row) => row === undefined ? undefined : { accountId: row.account_id })),
    sign,
    installable,
    removal,
    list,
    accountsFor,
    freeze
  })
})

