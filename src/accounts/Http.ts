import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Api } from "../Api.ts"
import { notImplemented } from "../api/NotImplemented.ts"
import { CurrentSigner } from "../auth/Middleware.ts"
import { Accounts } from "./Accounts.ts"

export const AccountsHandlers = HttpApiBuilder.group(
  Api,
  "accounts",
  Effect.fn(function*(handlers) {
    const accounts = yield* Accounts
    return handlers
      .handle("listAccounts", () => Effect.flatMap(CurrentSigner, (s) => accounts.list(s.address)))
      .handle("createAccount", ({ payload }) => Effect.flatMap(CurrentSigner, (s) => accounts.create(s.address, payload.label)))
      .handle("getRules", ({ query }) =>
        Effect.flatMap(CurrentSigner, (s) => accounts.resolve(s.address, query.accountId)).pipe(
          Effect.andThen(notImplemented("GET /account/rules (issue 4)"))
        ))
      .handle("buildRules", ({ payload }) =>
        Effect.flatMap(CurrentSigner, (s) => accounts.resolve(s.address, payload.accountId)).pipe(
          Effect.andThen(notImplemented("POST /account/rules/build (issue 4)"))
        ))
      .handle("listDevices", ({ query }) =>
        Effect.gen(function*() {
          const signer = yield* CurrentSigner
          const account = yield* accounts.resolve(signer.address, query.accountId)
          // The owner key is the account's one device until device management lands (issue 4).
          return [{ address: signer.address, label: "Owner key", role: "owner" as const, addedAt: account.createdAt }]
        }))
  })
)
