/**
 * Guardians and recovery through the service, on a local network of this file's own (its
 * clock is moved past the recovery delay; builds are valid 4 hours so that the paymaster's
 * signatures outlive the jump). The owner signs the account's delegation to the Recovery
 * contract, installs guardians (signed by a passkey), and cancels a started recovery through
 * the service; guardians act with their own transactions, around the service. The chain
 * refuses a recovery before its delay and after a cancel; two recoveries racing to start,
 * and the owner's cancel racing the guardians' execution, each end with exactly one winner.
 */
import { assert, layer } from "@effect/vitest"
import type { Delegation } from "@metamask/smart-accounts-kit"
import { Duration, Effect, Layer } from "effect"
import type { Address, Hash, Hex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { CallReverted, Chain } from "../../src/chain/Chain.ts"
import { LocalNetworks, make as makeLocalNetwork } from "../../src/chain/LocalNetwork.ts"
import {
  approvalTypedData,
  approveCall,
  executeRecoveryCall,
  readRecovery,
  recoveryEvents,
  recoveryIdOf,
  type RecoverySigners
} from "../../src/chain/Recovery.ts"
import type { Call } from "../../src/chain/Accounts4337.ts"
import { makeSoftwareAuthenticator } from "../support/SoftwareAuthenticator.ts"
import { TestServerLive } from "../support/TestServer.ts"
import { failure, newSession, signLeg } from "../delegations/helpers.ts"
import { increaseTime, relayOp, run, sendTx, signed } from "./helpers.ts"

process.env.DO_NOT_TRACK = "1"

const DELAY = 3_600
const addressOf = (key: Hex) => privateKeyToAccount(key).address

const OwnNetworkServer = Layer.unwrap(
  Effect.map(makeLocalNetwork({}), (network) =>
    TestServerLive({ chain: { networks: [network] }, config: { BUILD_TTL: "4 hours" } }))
)


/** The contract refuses `call` from `key`: its simulation names `reason`, and the transaction, sent anyway, is mined reverted. */
const refused = (key: Hex, call: Call, reason: string) =>
  Effect.gen(function*() {
    const chain = yield* Chain
    const simulated = yield* chain.call({ to: call.to, data: call.data ?? "0x", from: addressOf(key) }).pipe(Effect.flip)
    assert.instanceOf(simulated, CallReverted)
    assert.include((simulated as CallReverted).reason ?? "", reason)
    assert.strictEqual(yield* sendTx(key, call), "reverted")
  })


layer(OwnNetworkServer, { timeout: Duration.seconds(240), excludeTestServices: true })("guardians and recovery through the service", (it) => {
  it.effect("guardians installed by the owner; the chain refuses early and cancelled recoveries; races end with one winner", () =>
    Effect.gen(function*() {
      const [net] = yield* LocalNetworks
      const R = net!.recovery.address
      const owner = yield* newSession()
      const A = owner.account.address as Address
      const eoa = { kind: "eoa" as const, key: owner.key }
      const passkey = makeSoftwareAuthenticator()
      const device = { kind: "passkey" as const, authenticator: passkey }
      const addPasskey = yield* owner.api.accounts.buildRules({
        payload: { intentType: "device_add", device: { kind: "passkey", keyId: passkey.keyId, publicKey: passkey.sec1, label: "Phone" } }
      })
      assert.strictEqual((yield* run(owner.api, addPasskey, eoa)).outcome, "mined")

      // Guardians need the signed delegation to the Recovery contract first.
      const [g1, g2, g3, relayer, stranger] = Array.from({ length: 5 }, () => generatePrivateKey())
      const guardians = { intentType: "guardian_add" as const, threshold: 2, delaySeconds: DELAY, signWith: { keyId: passkey.keyId } }
      const payload = { ...guardians, guardians: [{ address: addressOf(g1!), label: "Carol" }, { address: addressOf(g2!), label: "Dan" }, { address: addressOf(g3!) }] }
      const unsigned = yield* failure(owner.api.accounts.buildRules({ payload }))
      assert.strictEqual(unsigned.tag, "Conflict")
      assert.strictEqual(unsigned.details["reason"], "recovery_delegation_unsigned")
      const toSign = yield* owner.api.accounts.buildAccountDelegation({ payload: {} })
      assert.strictEqual(toSign.delegation.delegate, R.toLowerCase())
      const byStranger = yield* failure(owner.api.accounts.signAccountDelegation({
        payload: { delegationHash: toSign.delegationHash, signature: yield* signLeg(stranger!, toSign.typedData) }
      }))
      assert.strictEqual(byStranger.details["field"], "signature")
      // Signed by the passkey (any device), over the digest.
      const assertion = passkey.assert(toSign.signingDigest as Hash)
      const afterSign = yield* owner.api.accounts.signAccountDelegation({
        payload: { delegationHash: toSign.delegationHash, webauthn: { keyId: passkey.keyId, ...assertion } }
      })
      assert.isTrue(afterSign.recovery!.delegation!.signatureValid)

      const install = yield* owner.api.accounts.buildRules({ payload })
      assert.strictEqual((yield* run(owner.api, install, device)).outcome, "mined")
      const rules = yield* owner.api.accounts.getRules({ query: {} })
      assert.deepStrictEqual(rules.recovery!.guardians.map((g) => g.label), ["Carol", "Dan", null])
      assert.deepStrictEqual([rules.recovery!.threshold, rules.recovery!.delaySeconds], [2, DELAY])
      assert.isNotNull(rules.recovery!.delegation!.installedAt)
      const wire = rules.recovery!.delegation!.delegation
      const delegation = { ...wire, caveats: wire.caveats.map((c) => ({ ...c })) } as unknown as Delegation

      // Two recoveries race to start: each has one approval; the second approvals go at once.
      const p1: RecoverySigners = { owner: addressOf(generatePrivateKey()), passkeys: [] }
      const p2: RecoverySigners = { owner: addressOf(generatePrivateKey()), passkeys: [] }
      const own = (g: Hex) => [{ guardian: addressOf(g), signature: "0x" as Hex }]
      // Nothing started and no approval standing: a cancel would stop nothing, so it is no free (sponsored) operation but a 409.
      const cancelRequest = { intentType: "rules_update" as const, change: { kind: "recovery_cancel" as const }, signWith: { keyId: passkey.keyId } }
      const nothing = yield* failure(owner.api.accounts.buildRules({ payload: cancelRequest }))
      assert.deepStrictEqual([nothing.tag, nothing.details["field"]], ["Conflict", "change.kind"])
      assert.strictEqual(yield* sendTx(g1!, approveCall(R, A, p1, own(g1!))), "success")
      // One approval stands (not started): voiding it reduces a risk now, so the cancel is risk-reducing.
      const voiding = yield* owner.api.accounts.buildRules({ payload: cancelRequest })
      assert.isTrue(voiding.riskReducing)
      assert.include(voiding.humanSummary, "Void the 1 recovery approval(s)")
      assert.strictEqual(yield* sendTx(g2!, approveCall(R, A, p2, own(g2!))), "success")
      const raced = yield* Effect.all([sendTx(g2!, approveCall(R, A, p1, own(g2!))), sendTx(g1!, approveCall(R, A, p2, own(g1!)))], { concurrency: 2 })
      assert.deepStrictEqual([...raced].sort(), ["reverted", "success"])
      const started = (yield* readRecovery(R, A)).started!
      const winner = raced[0] === "success" ? p1 : p2
      const nonce = BigInt(rules.recovery!.nonce)
      assert.strictEqual(started.recoveryId, recoveryIdOf(A, nonce, winner))
      assert.strictEqual((yield* owner.api.accounts.getRules({ query: {} })).recovery!.started!.approvals, 2)

      // Before its delay the chain refuses it.
      yield* refused(stranger!, executeRecoveryCall(R, A, winner, delegation), "Recovery:delay-not-elapsed")

      // The owner cancels through the service (risk-reducing, signed by the passkey); the chain refuses the recovery after it.
      const cancel = yield* owner.api.accounts.buildRules({ payload: { intentType: "rules_update", change: { kind: "recovery_cancel" }, signWith: { keyId: passkey.keyId } } })
      assert.isTrue(cancel.riskReducing)
      assert.strictEqual((yield* run(owner.api, cancel, device)).outcome, "mined")
      assert.isNull((yield* owner.api.accounts.getRules({ query: {} })).recovery!.started)
      yield* increaseTime(DELAY + 1)
      yield* refused(stranger!, executeRecoveryCall(R, A, winner, delegation), "Recovery:not-started")

      // A guardian removed (every approval so far is void again); two of the two left must approve.
      const remove = yield* owner.api.accounts.buildRules({ payload: { intentType: "guardian_remove", guardians: [addressOf(g2!)], threshold: 2 } })
      assert.strictEqual((yield* run(owner.api, remove, eoa)).outcome, "mined")
      assert.deepStrictEqual((yield* owner.api.accounts.getRules({ query: {} })).recovery!.guardians.map((g) => g.address), [addressOf(g1!), addressOf(g3!)].map((a) => a.toLowerCase()))
      yield* refused(g2!, approveCall(R, A, p1, own(g2!)), "Recovery:not-guardian")

      // Started again (signatures a relayer submits, at the new nonce); after the delay the owner's
      // cancel and a guardian's execution race: exactly one of them takes effect.
      const again = (yield* readRecovery(R, A)).nonce
      const digest = approvalTypedData({ chainId: net!.chainId, recovery: R }, A, again, p1)
      const sig = (k: Hex) => Effect.promise(() => privateKeyToAccount(k).signTypedData(digest as never))
      assert.strictEqual(yield* sendTx(relayer!, approveCall(R, A, p1, [{ guardian: addressOf(g1!), signature: yield* sig(g1!) }, { guardian: addressOf(g3!), signature: yield* sig(g3!) }])), "success")
      const recoveryId = recoveryIdOf(A, again, p1)
      yield* increaseTime(DELAY + 1)
      const lateCancel = yield* owner.api.accounts.buildRules({ payload: { intentType: "rules_update", change: { kind: "recovery_cancel" }, signWith: { keyId: passkey.keyId } } })
      const cancelOp = yield* signed(lateCancel, device)
      const [cancelled, executed] = yield* Effect.all([
        relayOp(owner.api, cancelOp).pipe(Effect.map((r) => r.outcome === "mined"), Effect.orElseSucceed(() => false)),
        sendTx(g2!, executeRecoveryCall(R, A, p1, delegation)).pipe(Effect.map((s) => s === "success"))
      ], { concurrency: 2 })
      assert.notStrictEqual(cancelled, executed, `cancelled ${cancelled}, executed ${executed}`)
      const events = (yield* recoveryEvents(R, A))
        .filter((e) => (e.eventName === "RecoveryCancelled" || e.eventName === "RecoveryExecuted") && (e.args as { recoveryId?: Hash }).recoveryId === recoveryId)
      assert.strictEqual(events.length, 1)

      const devices = (yield* owner.api.accounts.listDevices({ query: {} })).map((d) => d.address ?? d.keyId)
      assert.deepStrictEqual(devices, executed ? [p1.owner!.toLowerCase()] : [owner.account.signerAddress.toLowerCase(), passkey.keyId])
      if (executed) {
        // The lost devices are gone: the passkey's signature is refused, and the recovery delegation it signed no longer verifies.
        const after = yield* owner.api.accounts.getRules({ query: {} })
        assert.isFalse(after.recovery!.delegation!.signatureValid)
      }
    }))
})
