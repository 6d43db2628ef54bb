/**
 * Who signs in after the owner key changes on chain, and what the owner hears of a recovery,
 * on a local network of this file's own (its clock is moved past the recovery delay).
 *
 *  - A replaced EOA owner key (`device_add` of an EOA): the new key signs in and reaches the
 *    account (and signs its operations); the old key's sign-in is refused, its open session
 *    no longer finds the account, and its own operation, straight to the bundler, is refused.
 *  - A recovery by guardians with their own transactions (around the service): every step
 *    (each approval, the start, the execution) is an entry on the owner's log and a signed
 *    webhook to the owner's real receiver on loopback; after it, the recovered key signs in to
 *    the account and the lost one cannot.
 */
import { assert, layer } from "@effect/vitest"
import type { Delegation } from "@metamask/smart-accounts-kit"
import { Duration, Effect, Layer } from "effect"
import { Webhook } from "standardwebhooks"
import type { Address, Hex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { AccountStack } from "../../src/chain/Accounts4337.ts"
import { BundlerRejected } from "../../src/chain/Bundler.ts"
import { LocalNetworks, make as makeLocalNetwork } from "../../src/chain/LocalNetwork.ts"
import { approveCall, executeRecoveryCall, type RecoverySigners } from "../../src/chain/Recovery.ts"
import { signIn } from "../../src/client/signIn.ts"
import { TestServer, TestServerLive } from "../support/TestServer.ts"
import { failure, newSession, session, signLeg } from "../delegations/helpers.ts"
import { eoaDevice, sendOwnerOp } from "../support/OwnerOps.ts"
import { startReceiver } from "../notifications/webhooks/Receiver.ts"
import { increaseTime, run, sendTx } from "./helpers.ts"

process.env.DO_NOT_TRACK = "1"

const DELAY = 3_600
const addressOf = (key: Hex) => privateKeyToAccount(key).address

const OwnNetworkServer = Layer.unwrap(
  Effect.map(makeLocalNetwork({}), (network) =>
    TestServerLive({
      chain: { networks: [network] },
      config: {
        BUILD_TTL: "4 hours",
        RECOVERY_WATCH_INTERVAL: "200 millis",
        WEBHOOKS_ALLOW_LOOPBACK: "true",
        WEBHOOKS_POLL_INTERVAL: "50 millis"
      }
    }))
)



/** The sign-in of `key` is refused (401, the key was replaced). */
const signInRefused = (key: Hex) =>
  Effect.gen(function*() {
    const { baseUrl } = yield* TestServer
    const refused = yield* failure(signIn(baseUrl, privateKeyToAccount(key)))
    assert.strictEqual(refused.tag, "Unauthorized")
    assert.include(refused.message, "replaced")
  })

const eventually = <A>(effect: Effect.Effect<A, unknown>, ok: (a: A) => boolean, what: string) =>
  Effect.gen(function*() {
    for (let i = 0; i < 100; i++) {
      const a = yield* Effect.orDie(effect)
      if (ok(a)) return a
      yield* Effect.sleep(Duration.millis(100))
    }
    return assert.fail(`timed out waiting for ${what}`)
  })

layer(OwnNetworkServer, { timeout: Duration.seconds(240), excludeTestServices: true })("owner keys and recovery events", (it) => {
  it.effect("a replaced owner key: the new key signs in to the account, the old one cannot", () =>
    Effect.gen(function*() {
      const stack = yield* AccountStack
      const owner = yield* newSession()
      const newKey = generatePrivateKey()
      const replace = yield* owner.api.accounts.buildRules({
        payload: { intentType: "device_add", device: { kind: "eoa", address: addressOf(newKey), label: "New phone" } }
      })
      assert.strictEqual((yield* run(owner.api, replace, { kind: "eoa", key: owner.key })).outcome, "mined")

      // The old key: its sign-in refused, its open session no longer finds the account, its own operation refused on chain.
      yield* signInRefused(owner.key)
      assert.strictEqual((yield* failure(owner.api.accounts.getRules({ query: { accountId: owner.account.id } }))).tag, "NotFound")
      assert.deepStrictEqual(yield* owner.api.accounts.listAccounts(), [])
      const A = owner.account.address as Address
      const asBefore = { ...(yield* stack.counterfactualAccount(addressOf(owner.key), 0n)), address: A }
      const rejected = yield* sendOwnerOp({
        account: asBefore,
        device: eoaDevice(owner.key),
        calls: [{ to: A, value: 0n, data: "0x" }],
        fixedGas: { callGasLimit: 100_000n, verificationGasLimit: 400_000n, preVerificationGas: 100_000n }
      }).pipe(Effect.flip)
      assert.instanceOf(rejected, BundlerRejected)
      assert.include(`${rejected.message} ${JSON.stringify((rejected as BundlerRejected).data ?? "")}`, "AA24")

      // The new key's sign-in reaches the account, and its operations execute.
      const next = yield* session(newKey)
      assert.strictEqual(next.account.id, owner.account.id)
      const devices = yield* next.api.accounts.listDevices({ query: { accountId: owner.account.id } })
      assert.deepStrictEqual(devices.map((d) => [d.address, d.label]), [[addressOf(newKey).toLowerCase(), "New phone"]])
      const freeze = yield* next.api.accounts.buildRules({ payload: { intentType: "account_freeze", accountId: owner.account.id } })
      assert.strictEqual((yield* run(next.api, freeze, { kind: "eoa", key: newKey })).outcome, "mined")
      assert.isTrue((yield* next.api.accounts.getRules({ query: { accountId: owner.account.id } })).frozen)
    }))

  it.effect("a recovery by guardians around the service: each step on the owner's log and webhook; then only the recovered key signs in", () =>
    Effect.gen(function*() {
      const [net] = yield* LocalNetworks
      const R = net!.recovery.address
      const owner = yield* newSession()
      const A = owner.account.address as Address
      const eoa = { kind: "eoa" as const, key: owner.key }
      const receiver = yield* Effect.promise(startReceiver)
      const hook = yield* owner.api.notifications.createWebhook({ payload: { url: receiver.url } })

      const toSign = yield* owner.api.accounts.buildAccountDelegation({ payload: {} })
      yield* owner.api.accounts.signAccountDelegation({ payload: { delegationHash: toSign.delegationHash, signature: yield* signLeg(owner.key, toSign.typedData) } })
      const [g1, g2, stranger] = [generatePrivateKey(), generatePrivateKey(), generatePrivateKey()]
      const install = yield* owner.api.accounts.buildRules({
        payload: { intentType: "guardian_add", guardians: [{ address: addressOf(g1) }, { address: addressOf(g2) }], threshold: 2, delaySeconds: DELAY }
      })
      assert.strictEqual((yield* run(owner.api, install, eoa)).outcome, "mined")
      const wire = (yield* owner.api.accounts.getRules({ query: {} })).recovery!.delegation!.delegation
      const delegation = { ...wire, caveats: wire.caveats.map((c) => ({ ...c })) } as unknown as Delegation

      // The guardians' own transactions: two approvals start it; after the delay anyone executes it.
      const recovered = generatePrivateKey()
      const signers: RecoverySigners = { owner: addressOf(recovered), passkeys: [] }
      const own = (g: Hex) => [{ guardian: addressOf(g), signature: "0x" as Hex }]
      assert.strictEqual(yield* sendTx(g1, approveCall(R, A, signers, own(g1))), "success")
      assert.strictEqual(yield* sendTx(g2, approveCall(R, A, signers, own(g2))), "success")
      yield* increaseTime(DELAY + 1)
      assert.strictEqual(yield* sendTx(stranger, executeRecoveryCall(R, A, signers, delegation)), "success")

      // Told at once on the owner's webhook (a real receiver on loopback), signed.
      const titles = ["Recovery approved by a guardian", "Recovery started", "Recovery executed"]
      yield* Effect.promise(() =>
        receiver.waitFor(() => titles.every((t) => receiver.received.some((r) => r.body.includes(t))), 20_000)
      )
      for (const r of receiver.received) {
        const payload = new Webhook(hook.secret).verify(r.body, r.headers as Record<string, string>) as { data?: { title?: string } } | { title?: string }
        assert.isDefined(payload)
      }
      const started = receiver.received.find((r) => r.body.includes("Recovery started"))!
      assert.include(started.body, "cancel it now")
      yield* Effect.promise(() => receiver.close())

      // The recovered key signs in to the account; the lost one cannot.
      yield* eventually(
        owner.api.accounts.getRules({ query: { accountId: owner.account.id } }).pipe(
          Effect.match({ onFailure: (e) => e._tag as string, onSuccess: () => "Found" })
        ),
        (tag) => tag === "NotFound",
        "the account handed to the recovered key"
      )
      yield* signInRefused(owner.key)
      const next = yield* session(recovered)
      assert.strictEqual(next.account.id, owner.account.id)
      const devices = yield* next.api.accounts.listDevices({ query: { accountId: owner.account.id } })
      assert.deepStrictEqual(devices.map((d) => d.address), [addressOf(recovered).toLowerCase()])
      // On the account's log, which moved with it (each step once, by whom).
      const recoverySteps = ["recovery_approved", "recovery_approved", "recovery_started", "recovery_executed"]
      const stepsOf = (items: ReadonlyArray<{ readonly action: string }>) => items.map((e) => e.action).filter((a) => a.startsWith("recovery_")).sort()
      const log = yield* eventually(next.api.activity.list({ query: { limit: 50 } }), (l) => stepsOf(l.items).length >= 4, "the recovery's entries")
      assert.deepStrictEqual(stepsOf(log.items), [...recoverySteps].sort())
      assert.deepStrictEqual(
        log.items.filter((e) => e.action === "recovery_approved").map((e) => e.actor).sort(),
        [addressOf(g1), addressOf(g2)].map((a) => a.toLowerCase()).sort()
      )
    }))
})
