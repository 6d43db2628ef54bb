import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Api } from "../Api.ts"
import { CurrentSigner } from "../auth/Middleware.ts"
import { AccountRulesLive } from "./Live.ts"
import { Accounts } from "../accounts/Accounts.ts"
import { AccountRules } from "./Rules.ts"

export const AccountsHandlers = HttpApiBuilder.group(
  Api,
  "accounts",
  Effect.fn(function*(handlers) {
    const accounts = yield* Accounts
    const rules = yield* AccountRules
    return handlers
      .handle("listAccounts", () => Effect.flatMap(CurrentSigner, (s) => accounts.list(s.address)))
      .handle("createAccount", ({ payload }) =>
        Effect.flatMap(CurrentSigner, (s) => accounts.create(s.address, payload.label, payload.chainId)))
      .handle("getRules", ({ query }) =>
        Effect.gen(function*() {
          const signer = yield* CurrentSigner
          return yield* rules.rules(yield* accounts.resolve(signer.address, query))
        }))
      .handle("buildRules", ({ payload }) =>
        Effect.gen(function*() {
          const signer = yield* CurrentSigner
          return yield* rules.build(yield* accounts.resolve(signer.address, payload), payload.intentType)
        }))
      .handle("listDevices", ({ query }) =>
        Effect.gen(function*() {
          const signer = yield* CurrentSigner
          return yield* rules.devices(yield* accounts.resolve(signer.address, query))
        }))
  })
).pipe(Layer.provide(AccountRulesLive))
