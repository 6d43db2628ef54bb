/**
 * The guardian lane (issue 27, docs/account.md "The guardian lane"). A guardian signs in with
 * its own key and sees only the accounts whose guardians include that key on chain
 * (`Recovery.isGuardian`, found through the contract's `GuardianAdded` events); it can build
 * the two things a guardian does, each an operation of its own account relayed like any other:
 *
 *  - `approve`: the guardian signs the EIP-712 approval of a new owner key with its key (the
 *    contract checks that signature, so the sender is the guardian's own smart account); the
 *    approval that reaches the threshold starts the delay;
 *  - `execute`: once the delay has passed (chain time), the started recovery with the
 *    account's signed delegation to the Recovery contract (stored when the owner signed it).
 *
 * Neither is risk-reducing (they hand the account to another key): they are sponsored as the
 * sponsorship policy sponsors any operation. The contract refuses every guardian step it
 * would refuse around the service (not a guardian, below the threshold, before the delay,
 * after a cancel); the checks here come first for a clear answer. When the relay settles one,
 * its Recovery events go on the owner's log at once (RecoveryWatcher.recordTransaction).
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { type Address, type Hash, type Hex, hashTypedData, recoverTypedDataAddress, zeroAddress } from "viem"
import { Accounts, AccountRow, toAccount } from "../accounts/Accounts.ts"
import type { Account } from "../accounts/Domain.ts"
import { BadRequest, Conflict, NotFound, ServiceUnavailable } from "../api/Errors.ts"
import { AuditRecorder } from "../audit/Recorder.ts"
import { type BuildError, OperationBuilder } from "../builds/OperationBuilder.ts"
import { isDelegationSignatureValid, sameAddress } from "../chain/AccountDelegations.ts"
import { Chain } from "../chain/Chain.ts"
import { type ChainNetwork, Chains } from "../chain/Chains.ts"
import { passkeyStubSignature, readPasskey } from "../chain/Devices.ts"
import {
  APPROVAL_TYPES,
  approvalTypedData,
  approveCall,
  executeRecoveryCall,
  readApprovals,
  readRecovery,
  recoveryAbi,
  recoveryIdOf,
  type RecoverySigners
} from "../chain/Recovery.ts"
import { RelayHooks } from "../userops/RelayHooks.ts"
import { OwnerRepo } from "./OwnerRepo.ts"
import { recordTransaction } from "./RecoveryWatcher.ts"
import { answerOf, delegationFromRow } from "./Signing.ts"
import { EIP712_DOMAIN_TYPE } from "../builds/Wire.ts"
import type { GuardianAccount, GuardianApprovalRequest, GuardianApprovalToSign, GuardianRecoveryRequest, OwnerBuild } from "./Wire.ts"

const lower = <S extends string>(s: S) => s.toLowerCase() as S
const iso = (seconds: bigint) => new Date(Number(seconds) * 1000).toISOString()
const bad = (field: string, message: string) => new BadRequest({ message: `${field}: ${message}`, details: { field } })
const chainDown = (net: ChainNetwork) => (e: { readonly message: string }) =>
  new ServiceUnavailable({ message: `Chain ${net.chainId} cannot be read: ${e.message}`, details: { chainId: net.chainId } })
/** One answer for "not guarded by you", "not managed here" and "no such account": a guardian learns nothing of other accounts. */
const notYours = () => new NotFound({ message: "No account at this address of which you are a guardian", details: { field: "account" } })

export class GuardianLane extends Context.Service<GuardianLane, {
  /** The accounts `guardian` guards on chain, with their recovery's state. */
  accountsFor(guardian: string): Effect.Effect<ReadonlyArray<typeof GuardianAccount.Type>, ServiceUnavailable>
  /** The approval of `newOwner` for the guardian key to sign. */
  approvalToSign(guardian: string, request: typeof GuardianApprovalRequest.Type): Effect.Effect<typeof GuardianApprovalToSign.Type, BadRequest | NotFound | Conflict | ServiceUnavailable>
  /** An operation of the guardian's own account: its approval, or the execution after the delay. */
  build(guardian: string, request: typeof GuardianRecoveryRequest.Type): Effect.Effect<OwnerBuild, BuildError | NotFound | Conflict | BadRequest>
}>()("das/owner/GuardianLane") {
  static readonly layer = Layer.effect(GuardianLane, Effect.suspend(() => make))
}

const make = Effect.gen(function*() {
  const chains = yield* Chains
  const builder = yield* OperationBuilder
  const accounts = yield* Accounts
  const repo = yield* OwnerRepo
  const hooks = yield* RelayHooks
  const recorder = yield* AuditRecorder
  const sql = yield* SqlClient.SqlClient

  const onChain = <A, E>(net: ChainNetwork, effect: Effect.Effect<A, E, Chain>) =>
    effect.pipe(Effect.provideService(Chain, net.chain), Effect.mapError((e) => chainDown(net)(e as { message: string })))
  const rpc = <A>(net: ChainNetwork, f: () => Promise<A>) =>
    Effect.tryPromise(f).pipe(Effect.mapError((e) => chainDown(net)({ message: e.message })))

  const managed = (net: ChainNetwork, address: string) =>
    sql`SELECT * FROM accounts WHERE address = ${address.toLowerCase()} AND chain_id = ${net.chainId}`.pipe(
      Effect.flatMap(Schema.decodeUnknownEffect(Schema.Array(AccountRow))),
      Effect.map((rows) => rows[0] === undefined ? undefined : toAccount(rows[0])),
      Effect.orDie
    )

  const isGuardian = (net: ChainNetwork, recovery: Address, account: Address, guardian: string) =>
    rpc(net, () => net.chain.client.readContract({ address: recovery, abi: recoveryAbi, functionName: "isGuardian", args: [account, guardian as Address] }))

  /** The account guarded by `guardian` at `request.account`, or the one 404 for anything else. */
  const guarded = (guardian: string, request: { readonly account: string; readonly chainId?: number | undefined }) =>
    Effect.gen(function*() {
      const net = request.chainId === undefined ? chains.primary : yield* chains.get(request.chainId)
      const recovery = net.network.recovery?.address
      if (recovery === undefined) return yield* bad("chainId", `chain ${net.chainId} has no Recovery contract: no guardians on it`)
      const account = yield* managed(net, request.account)
      if (account === undefined) return yield* notYours()
      const A = account.address as Address
      if (!(yield* isGuardian(net, recovery, A, guardian).pipe(Effect.mapError((e) => e as ServiceUnavailable)))) return yield* notYours()
      const state = yield* onChain(net, readRecovery(recovery, A))
      return { net, recovery, account, A, state }
    })

  /** The signers a started recovery puts on the account, from its `RecoveryStarted` event. */
  const startedSigners = (net: ChainNetwork, recovery: Address, A: Address, recoveryId: Hash) =>
    Effect.gen(function*() {
      const events = yield* rpc(net, () =>
        net.chain.client.getContractEvents({ address: recovery, abi: recoveryAbi, eventName: "RecoveryStarted", args: { account: A, recoveryId }, fromBlock: 0n }))
      const args = events.at(-1)?.args
      if (args === undefined) return undefined
      return {
        owner: args.owner === undefined || args.owner === zeroAddress ? null : args.owner,
        passkeys: (args.keyIds ?? []).map((keyId, i) => ({ keyId, x: args.xs![i]!, y: args.ys![i]! }))
      } satisfies RecoverySigners
    })

  const chainTime = (net: ChainNetwork) => rpc(net, () => net.chain.client.getBlock({ blockTag: "latest" })).pipe(Effect.map((b) => b.timestamp))

  const accountsFor = Effect.fn("GuardianLane.accountsFor")(function*(guardian: string) {
    const perChain = yield* Effect.forEach(chains.all, (net) =>
      Effect.gen(function*() {
        const recovery = net.network.recovery?.address
        if (recovery === undefined) return []
        // Where it was ever added; `isGuardian` now decides (it may have been removed since).
        const added = yield* rpc(net, () =>
          net.chain.client.getContractEvents({ address: recovery, abi: recoveryAbi, eventName: "GuardianAdded", args: { guardian: guardian as Address }, fromBlock: 0n }))
        const candidates = [...new Set(added.flatMap((e) => e.args.account === undefined ? [] : [lower(e.args.account)]))]
        const found = yield* Effect.forEach(candidates, (address) =>
          Effect.gen(function*() {
            const seen = yield* guarded(guardian, { account: address, chainId: net.chainId }).pipe(
              Effect.catchTag("NotFound", () => Effect.succeed(undefined)),
              Effect.catchTag("BadRequest", () => Effect.succeed(undefined))
            )
            if (seen === undefined) return []
            const { state, A } = seen
            const started = state.started === null ? null : yield* Effect.gen(function*() {
              const s = state.started!
              const [approvals, signers, now] = yield* Effect.all([
                onChain(net, readApprovals(recovery, s.recoveryId, guardian as Address)),
                startedSigners(net, recovery, A, s.recoveryId),
                chainTime(net)
              ], { concurrency: "unbounded" })
              return {
                recoveryId: s.recoveryId,
                newOwner: signers?.owner == null ? null : lower(signers.owner),
                executeAfter: iso(s.executeAfter),
                approvals: approvals.approvals,
                approvedByYou: approvals.approved === true,
                executable: now >= s.executeAfter
              }
            })
            return [{
              account: lower(A),
              chainId: net.chainId,
              threshold: state.threshold,
              guardians: state.guardians.length,
              delaySeconds: state.delaySeconds,
              nonce: state.nonce.toString(),
              started
            }]
          }), { concurrency: 4 })
        return found.flat()
      }), { concurrency: "unbounded" })
    return perChain.flat()
  })

  /** The proposal's checks (a clear answer before the contract's refusal) and its typed data. */
  const proposal = (guardian: string, request: { readonly account: string; readonly chainId?: number | undefined; readonly newOwner: string }) =>
    Effect.gen(function*() {
      const g = yield* guarded(guardian, request)
      const { net, recovery, A, state } = g
      const newOwner = lower(request.newOwner) as Address
      if (sameAddress(newOwner, zeroAddress) || sameAddress(newOwner, A)) return yield* bad("newOwner", "not a key that can sign for the account")
      if (state.started !== null) {
        return yield* new Conflict({
          message: `A recovery of this account is already started (it can execute after ${iso(state.started.executeAfter)}); its owner can cancel it`,
          details: { field: "account", recoveryId: state.started.recoveryId }
        })
      }
      const signers: RecoverySigners = { owner: newOwner, passkeys: [] }
      const recoveryId = recoveryIdOf(A, state.nonce, signers)
      const approvals = yield* onChain(net, readApprovals(recovery, recoveryId, guardian as Address))
      const typedData = approvalTypedData({ chainId: net.chainId, recovery }, A, state.nonce, signers)
      return { ...g, newOwner, signers, recoveryId, approvals, typedData }
    })

  const approvalToSign = Effect.fn("GuardianLane.approvalToSign")(function*(guardian: string, request: typeof GuardianApprovalRequest.Type) {
    const p = yield* proposal(guardian, request)
    if (p.approvals.approved === true) return yield* new Conflict({ message: "You already approved this new owner key", details: { field: "newOwner" } })
    const digest = hashTypedData(p.typedData)
    return {
      recoveryId: p.recoveryId,
      nonce: p.state.nonce.toString(),
      approvals: p.approvals.approvals,
      threshold: p.state.threshold,
      typedData: {
        domain: { name: "Recovery", version: "1", chainId: p.net.chainId, verifyingContract: lower(p.recovery) },
        types: {
          EIP712Domain: EIP712_DOMAIN_TYPE.map((f) => ({ ...f })),
          RecoveryApproval: APPROVAL_TYPES.RecoveryApproval.map((f) => ({ ...f }))
        },
        primaryType: "RecoveryApproval" as const,
        message: { account: lower(p.A), nonce: p.state.nonce.toString(), owner: p.newOwner, keyIds: [], xs: [], ys: [] }
      },
      signingDigest: digest,
      humanSummary: `Approve, as a guardian, that ${p.newOwner} becomes the only key of account ${p.A} on chain ${p.net.chainId}. ` +
        `${p.state.threshold} of ${p.state.guardians.length} guardians must approve this same key (${p.approvals.approvals} so far); ` +
        `the recovery then waits ${p.state.delaySeconds} seconds, during which the owner is told and any of its devices can cancel it.`
    }
  })

  /** The guardian's own account on the chain, and the device it signs with. */
  const ownAccount = (guardian: string, net: ChainNetwork, signWith: string | undefined) =>
    Effect.gen(function*() {
      const own: Account = yield* accounts.resolve(guardian as Address, { chainId: net.chainId }).pipe(
        Effect.catchTag("NotFound", () => Effect.fail(new Conflict({ message: `Your sign-in has no visible account on chain ${net.chainId} to send from`, details: { field: "chainId" } })))
      )
      if (signWith !== undefined) {
        const key = yield* readPasskey(net.chain.client, own.address as Address, signWith).pipe(Effect.mapError(chainDown(net)))
        if (key === undefined) return yield* bad("signWith.keyId", "your own account holds no passkey with this key id")
      }
      return own
    })

  const build = Effect.fn("GuardianLane.build")(function*(guardian: string, request: typeof GuardianRecoveryRequest.Type) {
    const signWith = request.signWith?.keyId
    const signer = signWith === undefined ? { kind: "eoa" as const } : { kind: "passkey" as const, keyId: signWith }
    const stub = signWith === undefined ? {} : { stubSignature: passkeyStubSignature(signWith) }
    if (request.action === "approve") {
      if (request.newOwner === undefined) return yield* bad("newOwner", "the new owner key is required to approve")
      if (request.approvalSignature === undefined) return yield* bad("approvalSignature", "sign the approval first: POST /guardian/recovery/approval/build")
      const p = yield* proposal(guardian, { account: request.account, chainId: request.chainId, newOwner: request.newOwner })
      if (p.approvals.approved === true) return yield* new Conflict({ message: "You already approved this new owner key", details: { field: "newOwner" } })
      const signature = request.approvalSignature as Hex
      const by = yield* Effect.tryPromise(() => recoverTypedDataAddress({ ...p.typedData, signature } as Parameters<typeof recoverTypedDataAddress>[0])).pipe(
        Effect.orElseSucceed(() => undefined)
      )
      if (by === undefined || !sameAddress(by, guardian)) {
        return yield* bad("approvalSignature", "not your key's signature of this approval (at the account's current nonce)")
      }
      const own = yield* ownAccount(guardian, p.net, signWith)
      const reaches = p.approvals.approvals + 1 >= p.state.threshold
      const built = yield* builder.build({
        account: own,
        intentType: "rules_update",
        calls: [approveCall(p.recovery, p.A, p.signers, [{ guardian: guardian as Address, signature }])],
        humanSummary: `Approve, as a guardian of account ${p.A} on chain ${p.net.chainId}, that ${p.newOwner} becomes its only key: ` +
          (reaches
            ? `this approval reaches the threshold (${p.state.threshold}) and starts the recovery; it can execute after ${p.state.delaySeconds} seconds unless the owner cancels it.`
            : `${p.approvals.approvals + 1} of the ${p.state.threshold} approvals needed.`),
        metadata: { guardianRecovery: { action: "approve", account: lower(p.A), recoveryId: p.recoveryId, newOwner: p.newOwner } },
        ...stub
      })
      return answerOf(p.net, own, built.build, signer)
    }
    for (const field of ["newOwner", "approvalSignature"] as const) {
      if (request[field] !== undefined) return yield* bad(field, "only with action approve")
    }
    const { net, recovery, account, A, state } = yield* guarded(guardian, request)
    if (state.started === null) return yield* new Conflict({ message: "No recovery of this account is started", details: { field: "account" } })
    const now = yield* chainTime(net)
    if (now < state.started.executeAfter) {
      return yield* new Conflict({
        message: `The recovery's delay has not passed: it can execute after ${iso(state.started.executeAfter)}`,
        details: { field: "action", executeAfter: iso(state.started.executeAfter) }
      })
    }
    const signers = yield* startedSigners(net, recovery, A, state.started.recoveryId)
    if (signers === undefined) return yield* new ServiceUnavailable({ message: "The started recovery's event is not readable yet", details: { chainId: net.chainId } })
    // The account's signed delegation to the Recovery contract that still verifies (the owner signed it; it allows only updateSigners).
    const dm = { chainId: net.chainId, delegationManager: net.network.delegation.DelegationManager }
    const signed = (yield* repo.recoveryDelegationsOf(account.id)).filter((r) => r.signature !== null)
    let delegation: ReturnType<typeof delegationFromRow> | undefined
    for (const row of signed) {
      const d = delegationFromRow(row.delegation, row.signature)
      if (yield* onChain(net, isDelegationSignatureValid(d, dm))) {
        delegation = d
        break
      }
    }
    if (delegation === undefined) {
      return yield* new Conflict({
        message: "The account's delegation to the Recovery contract no longer verifies on chain: the recovery cannot execute",
        details: { field: "account" }
      })
    }
    const own = yield* ownAccount(guardian, net, signWith)
    const built = yield* builder.build({
      account: own,
      intentType: "rules_update",
      calls: [executeRecoveryCall(recovery, A, signers, delegation)],
      humanSummary: `Execute the recovery of account ${A} on chain ${net.chainId} its guardians approved: ` +
        `${signers.owner ?? "its passkeys"} becomes its only key; every device it holds now stops signing.`,
      metadata: { guardianRecovery: { action: "execute", account: lower(A), recoveryId: state.started.recoveryId, newOwner: signers.owner === null ? null : lower(signers.owner) } },
      ...stub
    })
    return answerOf(net, own, built.build, signer)
  })

  const Meta = Schema.Struct({ guardianRecovery: Schema.optionalKey(Schema.Struct({ action: Schema.String })) })

  // Told at once: the guardian's operation settled, its Recovery events go on the owner's log (and
  // notifications) in the relay's settling transaction, under the ids the watcher uses.
  yield* hooks.registerOnExecuted("rules_update", "owner_guardian_recovery", (op, receipt) =>
    Effect.gen(function*() {
      const meta = yield* Schema.decodeUnknownEffect(Meta)(op.build.metadata).pipe(Effect.orDie)
      if (meta.guardianRecovery === undefined) return
      const net = chains.find(op.chainId)
      if (net === undefined) return
      yield* recordTransaction(net, receipt.transactionHash).pipe(
        Effect.provideService(SqlClient.SqlClient, sql),
        Effect.provideService(AuditRecorder, recorder),
        Effect.provideService(OwnerRepo, repo),
        // The watcher records it on its next pass if the chain cannot be read now.
        Effect.catchTag("UnknownError", () => Effect.void),
        Effect.orDie
      )
    }))

  return GuardianLane.of({ accountsFor, approvalToSign, build })
})
