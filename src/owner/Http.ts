import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { contractOf } from "../api/Contract.ts"
import { BadRequest, NotFound, Unauthorized } from "../api/Errors.ts"
import { BearerSession, CurrentSigner } from "../auth/Middleware.ts"
import { GuardianLaneLive, OwnerAccountLive, PanicKeysLive } from "./Live.ts"
import { Accounts } from "../accounts/Accounts.ts"
import { Chains } from "../chain/Chains.ts"
import { AccountsApi, GuardianApi, PanicApi } from "./Api.ts"
import { fundingRequest } from "./Funding.ts"
import { GuardianLane } from "./Guardians.ts"
import { OwnerAccount } from "./OwnerAccount.ts"
import { PanicKeys } from "./PanicKeys.ts"

export const AccountsHandlers = HttpApiBuilder.group(
  contractOf(AccountsApi),
  "accounts",
  Effect.fn(function*(handlers) {
    const accounts = yield* Accounts
    const owner = yield* OwnerAccount
    const panic = yield* PanicKeys
    const chains = yield* Chains
    return handlers
      .handle("listAccounts", () =>
        // The session is checked in the accounts' own statement (InlineAuthorization: no query of its own).
        Effect.flatMap(BearerSession, (s) => accounts.listForSession(s.tokenHash)).pipe(
          Effect.flatMap((list) => list === undefined ? Effect.fail(new Unauthorized({ message: "Missing, unknown, expired or revoked session token" })) : Effect.succeed(list))
        ))
      .handle("createAccount", ({ payload }) =>
        Effect.flatMap(CurrentSigner, (s) => accounts.create(s.address, payload.label, payload.chainId)))
      .handle("getRules", ({ query }) =>
        Effect.gen(function*() {
          const signer = yield* CurrentSigner
          return yield* owner.rules(yield* accounts.resolve(signer.address, query))
        }))
      .handle("buildRules", ({ payload }) =>
        Effect.gen(function*() {
          const signer = yield* CurrentSigner
          return yield* owner.build(yield* accounts.resolve(signer.address, payload), payload)
        }))
      .handle("listDevices", ({ query }) =>
        Effect.gen(function*() {
          const signer = yield* CurrentSigner
          return yield* owner.devices(yield* accounts.resolve(signer.address, query))
        }))
      .handle("buildAccountDelegation", ({ payload }) =>
        Effect.gen(function*() {
          const signer = yield* CurrentSigner
          const account = yield* accounts.resolve(signer.address, payload)
          if (payload.kind === "panic") return yield* panic.delegationToSign(account, payload)
          for (const field of ["panicKey", "label"] as const) {
            if (payload[field] !== undefined) return yield* new BadRequest({ message: `${field}: only with kind panic`, details: { field } })
          }
          return yield* owner.recoveryDelegationToSign(account)
        }))
      .handle("signAccountDelegation", ({ payload }) =>
        Effect.gen(function*() {
          const signer = yield* CurrentSigner
          const recovery = yield* owner.delegationAccount(payload.delegationHash)
          const panicKey = recovery === undefined ? yield* panic.delegationAccount(payload.delegationHash) : undefined
          const of = recovery ?? panicKey
          // Another owner's delegation answers as no delegation at all: its account is never named.
          const none = new NotFound({ message: "No delegation of yours to sign with this hash", details: { field: "delegationHash" } })
          if (of === undefined) return yield* none
          const account = yield* accounts.resolve(signer.address, { accountId: of.accountId }).pipe(
            Effect.catchTag("NotFound", () => Effect.fail(none))
          )
          if (recovery !== undefined) return yield* owner.signDelegation(account, payload)
          yield* panic.sign(account, payload)
          return yield* owner.rules(account)
        }))
      .handle("getFunding", ({ query }) =>
        Effect.gen(function*() {
          const signer = yield* CurrentSigner
          const account = yield* accounts.resolve(signer.address, query)
          return yield* fundingRequest(yield* chains.serving(account.chainId), account, query)
        }))
  })
).pipe(Layer.provide([OwnerAccountLive, PanicKeysLive]))

export const PanicHandlers = HttpApiBuilder.group(
  contractOf(PanicApi),
  "panic",
  Effect.fn(function*(handlers) {
    const panic = yield* PanicKeys
    return handlers
      .handle("listPanicAccounts", () => Effect.flatMap(CurrentSigner, (s) => panic.accountsFor(s.address)))
      .handle("buildPanicFreeze", ({ payload }) => Effect.flatMap(CurrentSigner, (s) => panic.freeze(s.address, payload)))
  })
).pipe(Layer.provide(PanicKeysLive))

export const GuardianHandlers = HttpApiBuilder.group(
  contractOf(GuardianApi),
  "guardian",
  Effect.fn(function*(handlers) {
    const lane = yield* GuardianLane
    return handlers
      .handle("listGuardedAccounts", () => Effect.flatMap(CurrentSigner, (s) => lane.accountsFor(s.address)))
      .handle("buildRecoveryApproval", ({ payload }) => Effect.flatMap(CurrentSigner, (s) => lane.approvalToSign(s.address, payload)))
      .handle("buildGuardianRecovery", ({ payload }) => Effect.flatMap(CurrentSigner, (s) => lane.build(s.address, payload)))
  })
).pipe(Layer.provide(GuardianLaneLive))
