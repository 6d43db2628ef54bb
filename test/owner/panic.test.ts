/**
 * The panic key over HTTP, on the local chain: the owner makes a panic delegation for a
 * trusted contact's key, signs it, installs it (an owner operation); the panic key signs in
 * with its own address and sees only the account it can freeze; its freeze (its own account's
 * operation, relayed twice at once: one operation) disables the owner's grant on chain and the
 * account reads frozen, with the entry and a notification on the owner's side. Around the
 * service, the panic key's own account redeeming the delegation for anything but a freeze is
 * refused by the chain.
 */
import { assert, layer } from "@effect/vitest"
import type { Delegation } from "@metamask/smart-accounts-kit"
import { Duration, Effect } from "effect"
import { type Address, encodeFunctionData, erc20Abi } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { fromWire } from "../../src/builds/Wire.ts"
import { AccountStack } from "../../src/chain/Accounts4337.ts"
import { redeemCall } from "../../src/chain/AccountDelegations.ts"
import { Bundler } from "../../src/chain/Bundler.ts"
import { LocalNetwork } from "../../src/chain/LocalNetwork.ts"
import { Network } from "../../src/chain/Network.ts"
import { eoaDevice, refusedOwnerOp } from "../support/OwnerOps.ts"
import { mint, testNetwork } from "../support/TestChain.ts"
import { TestServerLive } from "../support/TestServer.ts"
import { disabledOnChain, dmErrorIn, enabled, failure, newSession, session, signLeg, signOp, usdcBalance } from "../delegations/helpers.ts"
import { relayOp, run, signed } from "./helpers.ts"
import type { PanicAccount } from "../../src/owner/Wire.ts"

process.env.DO_NOT_TRACK = "1"

const randomAddress = () => privateKeyToAccount(generatePrivateKey()).address.toLowerCase() as Address

layer(TestServerLive(), { timeout: Duration.seconds(180), excludeTestServices: true })("the panic key over HTTP", (it) => {
  it.effect("installed by the owner, it freezes the account through its own sign-in and can do nothing else", () =>
    Effect.gen(function*() {
      const net = yield* Network
      const bundler = yield* Bundler
      const stack = yield* AccountStack
      const owner = yield* newSession()
      const delegate = yield* newSession()
      const eoa = { kind: "eoa" as const, key: owner.key }
      const A = owner.account.address as Address
      yield* mint("usd", A, 30)
      const grant = yield* enabled(owner, delegate, { budget: 20, perAction: 10, maxActions: 5 })
      const action = yield* owner.api.delegations.act({ params: { delegationId: grant.created.id }, payload: { recipient: randomAddress(), amount: 5 } })
      const delegateOwn = yield* signOp(delegate.key, action.userOp)

      // Bad input: 400 naming the field, nothing stored.
      const panicKey = generatePrivateKey()
      const P = privateKeyToAccount(panicKey).address
      const noKey = yield* failure(owner.api.accounts.buildAccountDelegation({ payload: { kind: "panic" } }))
      assert.deepStrictEqual([noKey.tag, noKey.details["field"]], ["BadRequest", "panicKey"])
      const ownKey = yield* failure(owner.api.accounts.buildAccountDelegation({ payload: { kind: "panic", panicKey: owner.account.signerAddress } }))
      assert.deepStrictEqual([ownKey.tag, ownKey.details["field"]], ["BadRequest", "panicKey"])
      const stray = yield* failure(owner.api.accounts.buildAccountDelegation({ payload: { panicKey: P } }))
      assert.deepStrictEqual([stray.tag, stray.details["field"]], ["BadRequest", "panicKey"])
      assert.deepStrictEqual((yield* owner.api.accounts.getRules({ query: {} })).panicKeys, [])

      // The panic delegation, signed by a device, then installed by an owner operation.
      const toSign = yield* owner.api.accounts.buildAccountDelegation({ payload: { kind: "panic", panicKey: P, label: "Bob" } })
      assert.strictEqual(toSign.kind, "panic")
      const unsigned = yield* failure(owner.api.accounts.buildRules({ payload: { intentType: "panic_install", delegationHash: toSign.delegationHash } }))
      assert.strictEqual(unsigned.tag, "Conflict")
      const byPanicKey = yield* failure(owner.api.accounts.signAccountDelegation({
        payload: { delegationHash: toSign.delegationHash, signature: yield* signLeg(panicKey, toSign.typedData) }
      }))
      assert.strictEqual(byPanicKey.details["field"], "signature")
      yield* owner.api.accounts.signAccountDelegation({ payload: { delegationHash: toSign.delegationHash, signature: yield* signLeg(owner.key, toSign.typedData) } })
      const install = yield* owner.api.accounts.buildRules({ payload: { intentType: "panic_install", delegationHash: toSign.delegationHash } })
      assert.strictEqual(install.intentType, "panic_install")
      assert.strictEqual((yield* run(owner.api, install, eoa)).outcome, "mined")
      const [installed] = (yield* owner.api.accounts.getRules({ query: {} })).panicKeys!
      assert.strictEqual(installed!.panicKey, P.toLowerCase())
      assert.isNotNull(installed!.installedAt)
      assert.isTrue(installed!.enabledOnChain && installed!.signatureValid)
      const twice = yield* failure(owner.api.accounts.buildRules({ payload: { intentType: "panic_install", delegationHash: toSign.delegationHash } }))
      assert.strictEqual(twice.tag, "Conflict")

      // The panic key's own sign-in: the account it can freeze, and nothing else of it.
      const contact = yield* session(panicKey)
      const [held, ...more] = yield* contact.api.panic.listPanicAccounts()
      assert.strictEqual(more.length, 0)
      assert.deepStrictEqual([held!.account, held!.chainId, held!.frozen, held!.usable], [A.toLowerCase(), net.chainId, false, true])
      assert.deepStrictEqual(yield* owner.api.panic.listPanicAccounts(), [])
      assert.strictEqual((yield* failure(contact.api.accounts.getRules({ query: { accountId: owner.account.id } }))).tag, "NotFound")
      assert.strictEqual((yield* failure(contact.api.accounts.buildRules({ payload: { intentType: "account_unfreeze", accountId: owner.account.id } }))).tag, "NotFound")
      assert.strictEqual((yield* failure(contact.api.delegations.revoke({ params: { delegationId: grant.created.id } }))).tag, "NotFound")
      assert.deepStrictEqual((yield* contact.api.delegations.list({ query: {} })).map((d) => d.id).filter((id) => id === grant.created.id), [])
      assert.strictEqual((yield* failure(owner.api.panic.buildPanicFreeze({ payload: { delegationHash: toSign.delegationHash } }))).tag, "NotFound")
      const unknown = yield* failure(contact.api.panic.buildPanicFreeze({ payload: { delegationHash: `0x${"ab".repeat(32)}` } }))
      assert.strictEqual(unknown.tag, "NotFound")

      // Around the service: the panic key's own account redeeming the delegation to move money is refused by the chain.
      const wire = held!.delegation
      const delegation = { ...wire, caveats: wire.caveats.map((c) => ({ ...c })) } as unknown as Delegation
      const own = yield* stack.counterfactualAccount(P, 0n)
      assert.strictEqual(own.address.toLowerCase(), contact.account.address.toLowerCase())
      const dm = net.delegation.DelegationManager
      const steal = { target: net.tokens.usd.address, callData: encodeFunctionData({ abi: erc20Abi, functionName: "transfer", args: [P, 1_000_000n] }) }
      yield* refusedOwnerOp({ account: own, device: eoaDevice(panicKey), calls: [redeemCall(dm, delegation, [steal])] }, "PanicFreezeEnforcer:target-not-allowed").pipe(
        Effect.provideService(LocalNetwork, testNetwork())
      )
      yield* refusedOwnerOp({ account: own, device: eoaDevice(panicKey), calls: [redeemCall(dm, delegation, [{ target: P, value: 1n, callData: "0x" }])] }, "PanicFreezeEnforcer:value-not-allowed").pipe(
        Effect.provideService(LocalNetwork, testNetwork())
      )
      assert.strictEqual(yield* usdcBalance(A), 30_000_000n)

      // The freeze: the panic key's own operation, risk-reducing; relayed twice at once, it is one operation.
      const freeze = yield* contact.api.panic.buildPanicFreeze({ payload: { delegationHash: toSign.delegationHash } })
      assert.deepStrictEqual([freeze.intentType, freeze.riskReducing, freeze.gasless], ["panic_freeze", true, true])
      assert.strictEqual(freeze.userOp.sender.toLowerCase(), contact.account.address.toLowerCase())
      assert.isTrue(freeze.simulation!.willSucceed, JSON.stringify(freeze.simulation))
      const op = yield* signed(freeze, { kind: "eoa", key: panicKey })
      const [r1, r2] = yield* Effect.all([relayOp(contact.api, op), relayOp(contact.api, op)], { concurrency: 2 })
      assert.strictEqual(r1.userOpId, r2.userOpId)
      assert.strictEqual(r1.outcome, "mined")

      // What the chain shows: the grant disabled; the delegate's own operation is refused; nothing moved.
      assert.isTrue(yield* disabledOnChain(grant.leg.permissionId))
      const estimate = yield* bundler.estimateUserOperationGas(fromWire(delegateOwn)).pipe(Effect.flip)
      const text = estimate._tag === "BundlerRejected" ? `${estimate.message} ${JSON.stringify(estimate.data ?? "")}` : ""
      assert.strictEqual(dmErrorIn(text), "CannotUseADisabledDelegation", text)
      assert.strictEqual(yield* usdcBalance(A), 30_000_000n)
      const rules = yield* owner.api.accounts.getRules({ query: {} })
      assert.isTrue(rules.frozen)
      assert.isTrue((yield* contact.api.panic.listPanicAccounts())[0]!.frozen)
      // Once: frozen, a second freeze is refused.
      assert.strictEqual((yield* failure(contact.api.panic.buildPanicFreeze({ payload: { delegationHash: toSign.delegationHash } }))).tag, "Conflict")

      // The owner's record and notification: who froze it.
      const log = yield* owner.api.activity.list({ query: { limit: 50 } })
      const entry = log.items.find((e) => e.action === "panic_freeze")
      assert.isDefined(entry, JSON.stringify(log.items.map((e) => e.action)))
      assert.strictEqual(entry!.actor, P.toLowerCase())
      const notes = yield* owner.api.notifications.list({ query: { unreadOnly: false } })
      assert.isTrue(notes.some((n) => n.title === "Account frozen by a panic key"), JSON.stringify(notes.map((n) => n.title)))

      // The owner unfreezes (only a device can): the grant is live again.
      const unfreeze = yield* owner.api.accounts.buildRules({ payload: { intentType: "account_unfreeze" } })
      assert.strictEqual((yield* run(owner.api, unfreeze, eoa)).outcome, "mined")
      assert.isFalse(yield* disabledOnChain(grant.leg.permissionId))
    }))

  it.effect("the owner replaces a panic key and removes one: each is refused on chain afterwards", () =>
    Effect.gen(function*() {
      const net = yield* Network
      const stack = yield* AccountStack
      const owner = yield* newSession()
      const eoa = { kind: "eoa" as const, key: owner.key }
      const A = owner.account.address as Address
      const dm = net.delegation.DelegationManager
      /** A panic delegation for a fresh key, signed by the owner's device; its hash. */
      const signedPanicKey = (label: string) =>
        Effect.gen(function*() {
          const key = generatePrivateKey()
          const toSign = yield* owner.api.accounts.buildAccountDelegation({ payload: { kind: "panic", panicKey: privateKeyToAccount(key).address, label } })
          yield* owner.api.accounts.signAccountDelegation({ payload: { delegationHash: toSign.delegationHash, signature: yield* signLeg(owner.key, toSign.typedData) } })
          return { key, hash: toSign.delegationHash }
        })
      /** The panic key's own account redeeming its delegation for the freeze marker, around the service: refused by the chain. */
      const refusedOnChain = (key: `0x${string}`, wire: typeof PanicAccount.Type["delegation"]) =>
        Effect.gen(function*() {
          const delegation = { ...wire, caveats: wire.caveats.map((c) => ({ ...c })) } as unknown as Delegation
          const own = yield* stack.counterfactualAccount(privateKeyToAccount(key).address, 0n)
          yield* refusedOwnerOp({ account: own, device: eoaDevice(key), calls: [redeemCall(dm, delegation, [{ target: A, value: 0n, callData: "0x" }])] }, "CannotUseADisabledDelegation").pipe(
            Effect.provideService(LocalNetwork, testNetwork())
          )
        })
      const first = yield* signedPanicKey("Old phone")
      const install = yield* owner.api.accounts.buildRules({ payload: { intentType: "panic_install", delegationHash: first.hash } })
      assert.strictEqual((yield* run(owner.api, install, eoa)).outcome, "mined")
      const firstContact = yield* session(first.key)
      const [held] = yield* firstContact.api.panic.listPanicAccounts()
      assert.isTrue(held!.usable)

      // Rotation: one owner operation installs the new key and disables the old one's delegation.
      const second = yield* signedPanicKey("New phone")
      const unknown = yield* failure(owner.api.accounts.buildRules({ payload: { intentType: "panic_install", delegationHash: second.hash, replaces: `0x${"cd".repeat(32)}` } }))
      assert.deepStrictEqual([unknown.tag, unknown.details["field"]], ["BadRequest", "replaces"])
      const rotate = yield* owner.api.accounts.buildRules({ payload: { intentType: "panic_install", delegationHash: second.hash, replaces: first.hash } })
      assert.include(rotate.humanSummary, "replacing the panic key")
      assert.strictEqual((yield* run(owner.api, rotate, eoa)).outcome, "mined")
      const byHash = (keys: ReadonlyArray<{ readonly delegationHash: string; readonly enabledOnChain: boolean }>) =>
        Object.fromEntries(keys.map((k) => [k.delegationHash, k.enabledOnChain]))
      assert.deepStrictEqual(byHash((yield* owner.api.accounts.getRules({ query: {} })).panicKeys!), { [first.hash]: false, [second.hash]: true })
      assert.isFalse((yield* firstContact.api.panic.listPanicAccounts())[0]!.usable)
      assert.strictEqual((yield* failure(firstContact.api.panic.buildPanicFreeze({ payload: { delegationHash: first.hash } }))).tag, "Conflict")
      yield* refusedOnChain(first.key, held!.delegation)
      const again = yield* failure(owner.api.accounts.buildRules({ payload: { intentType: "panic_install", delegationHash: (yield* signedPanicKey("x")).hash, replaces: first.hash } }))
      assert.deepStrictEqual([again.tag, again.details["field"]], ["Conflict", "replaces"])

      // Removal: a rules_update the owner signs; the key is refused on chain afterwards.
      const secondContact = yield* session(second.key)
      const [secondHeld] = yield* secondContact.api.panic.listPanicAccounts()
      const remove = yield* owner.api.accounts.buildRules({ payload: { intentType: "rules_update", change: { kind: "panic_key_remove", delegationHash: second.hash } } })
      assert.strictEqual((yield* run(owner.api, remove, eoa)).outcome, "mined")
      assert.isFalse(byHash((yield* owner.api.accounts.getRules({ query: {} })).panicKeys!)[second.hash])
      yield* refusedOnChain(second.key, secondHeld!.delegation)
      const twice = yield* failure(owner.api.accounts.buildRules({ payload: { intentType: "rules_update", change: { kind: "panic_key_remove", delegationHash: second.hash } } }))
      assert.deepStrictEqual([twice.tag, twice.details["field"]], ["Conflict", "change.delegationHash"])
      assert.isFalse((yield* owner.api.accounts.getRules({ query: {} })).frozen)

      // On the owner's record: each as one entry with its intent.
      const actions = (yield* owner.api.activity.list({ query: { limit: 50 } })).items.map((e) => e.action)
      assert.strictEqual(actions.filter((a) => a === "panic_install").length, 2, JSON.stringify(actions))
      assert.strictEqual(actions.filter((a) => a === "rules_update").length, 1, JSON.stringify(actions))
    }))
})

