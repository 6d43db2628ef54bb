/**
 * The README's walk-through, end to end against a running service: sign in with a
 * throwaway key, build an operation (freeze the account), sign it as a wallet would
 * (EIP-712 typed data), relay it, poll until it settles, read it back from
 * /activity, then unfreeze.
 *
 *   npm start                 # in one terminal
 *   npm run walkthrough       # in another (BASE_URL and PRIVATE_KEY may be set)
 */
import { Effect } from "effect"
import type { Hex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { makeClient } from "../src/client/Client.ts"
import { pollUserOp } from "../src/client/poll.ts"
import { signIn } from "../src/client/signIn.ts"
import type { UserOpBuild } from "../src/domain/Operations.ts"

const baseUrl = process.env.BASE_URL ?? "http://127.0.0.1:8080"
const key = (process.env.PRIVATE_KEY as Hex | undefined) ?? generatePrivateKey()
const owner = privateKeyToAccount(key)
const step = (text: string) => Effect.sync(() => console.log(`\n== ${text}`))
const show = (value: unknown) => Effect.sync(() => console.log(JSON.stringify(value, null, 2)))

const program = Effect.gen(function*() {
  yield* step(`sign in as ${owner.address}`)
  const session = yield* signIn(baseUrl, owner)
  const account = session.accounts[0]!
  yield* show({ token: session.token, account: { id: account.id, address: account.address, frozen: account.frozen } })
  const api = yield* makeClient({ baseUrl, token: session.token })

  const relay = (intentType: "account_freeze" | "account_unfreeze") =>
    Effect.gen(function*() {
      yield* step(`build ${intentType} (POST /account/rules/build)`)
      const build: UserOpBuild = yield* api.accounts.buildRules({ payload: { intentType } })
      yield* show({
        userOpHash: build.userOpHash,
        humanSummary: build.humanSummary,
        riskReducing: build.riskReducing,
        gasless: build.gasless,
        willSucceed: build.simulation?.willSucceed
      })

      yield* step("sign the build's EIP-712 typed data with the owner key, then relay it (POST /userops)")
      const signature = yield* Effect.promise(() => owner.signTypedData(build.typedData as never))
      const receipt = yield* api.userops.submit({ payload: { ...build.userOp, signature } })
      yield* show({ userOpId: receipt.userOpId, status: receipt.status })

      yield* step("poll GET /userops/{id} until it settles")
      const settled = yield* pollUserOp(api, receipt.userOpId, { interval: "500 millis", maxTries: 60 })
      yield* show(settled)
      return settled
    })

  const frozen = yield* relay("account_freeze")
  yield* step("GET /account/rules")
  yield* show(yield* api.accounts.getRules({ query: {} }))

  yield* step("the audit entry (GET /activity/{eventId}) and the page (GET /activity)")
  if (frozen.auditEventId !== undefined) yield* show(yield* api.activity.get({ params: { eventId: frozen.auditEventId } }))
  const page = yield* api.activity.list({ query: { limit: 5 } })
  yield* Effect.sync(() => console.log(`${page.items.length} event(s); newest: ${page.items[0]?.action} ${page.items[0]?.status}`))

  yield* relay("account_unfreeze")
  yield* step("GET /activity/anchor")
  yield* show(yield* api.activity.anchor())
})

Effect.runPromise(program).catch((e) => {
  console.error("walkthrough failed:", e)
  process.exit(1)
})
