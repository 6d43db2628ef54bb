import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { contractOf } from "../api/Contract.ts"
import { NotFound } from "../api/Errors.ts"
import { CurrentSigner } from "../auth/Middleware.ts"
import { OwnerAccountLive } from "./Live.ts"
import { Accounts } from "../accounts/Accounts.ts"
import { AccountsApi } from "./Api.ts"
import { OwnerAccount } from "./OwnerAccount.ts"

export const AccountsHandlers = HttpApiBuilder.group(
  contractOf(AccountsApi),
  "accounts",
  Effect.fn(function*(handlers) {
    const accounts = yield* Accounts
    const owner = yield* OwnerAccount
    return handlers
      .handle("listAccounts", () => Effect.flatMap(CurrentSigner, (s) => accounts.list(s.address)))
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
          return yield* owner.recoveryDelegationToSign(yield* accounts.resolve(signer.address, payload))
        }))
      .handle("signAccountDelegation", ({ payload }) =>
        Effect.gen(function*() {
          const signer = yield* CurrentSigner
          const of = yield* owner.delegationAccount(payload.delegationHash)
          if (of === undefined) return yield* new NotFound({ message: "No delegation of yours to sign with this hash", details: { field: "delegationHash" } })
          const account = yield* accounts.resolve(signer.address, { accountId: of.accountId })
          return yield* owner.signDelegation(account, payload)
        }))
  })
).pipe(Layer.provide(OwnerAccountLive))
