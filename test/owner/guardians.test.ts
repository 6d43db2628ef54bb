/**
 * The guardian lane through the service, on a local network of this file's own (its clock is
 * moved past the recovery delay; builds are valid 4 hours). The owner installs three guardians
 * (2 of 3); each guardian signs in with its own key and sees only the accounts it guards; two
 * sign approvals of the owner's new key and relay them from their own accounts; after the delay
 * a third executes it. The recovery watcher is off here: the owner's log has each step at once
 * because the relay's settlement records it. Then the new key signs in to the account and the
 * old one is refused. A guardian of another account sees nothing of this one and can do nothing
 * to it; a guardian cannot read, send from or revoke the account's grants.
 */
import { assert, layer } from "@effect/vitest"
import { Duration, Effect, Layer } from "effect"
import { type Address, type Hex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { make as makeLocalNetwork, LocalNetworks } from "../../src/chain/LocalNetwork.ts"
import { approveCall } from "../../src/chain/Recovery.ts"
import { Chains } from "../../src/chain/Chains.ts"
import { AuditLive } from "../../src/audit/Recorder.ts"
import { EntryNotifierLive } from "../../src/notifications/EntryNotifier.ts"
import { OwnerRepo } from "../../src/owner/OwnerRepo.ts"
import { readCursor, watchFromCursor } from "../../src/owner/RecoveryWatcher.ts"
import { signIn } from "../../src/client/signIn.ts"
import { TestServer, TestServerLive } from "../support/TestServer.ts"
import { enabled, failure, newSession, type Session, session, signLeg } from "../delegations/helpers.ts"
import { increaseTime, run, sendTx } from "./helpers.ts"

process.env.DO_NOT_TRACK = "1"

const DELAY = 3_600
const addressOf = (key: Hex) => privateKeyToAccount(key).address

const OwnNetworkServer = Layer.unwrap(
  Effect.map(makeLocalNetwork({}), (network) =>
    TestServerLive({ chain: { networks: [network] }, config: { BUILD_TTL: "4 hours", RECOVERY_WATCH_INTERVAL: "0 seconds" } }))
)

/** The owner signs the account's delegation to the Recovery contract and installs `guardians` with `threshold`. */
const installGuardians = (owner: Session, guardians: ReadonlyArray<Hex>, threshold: number) =>
  Effect.gen(function*() {
    const toSign = yield* owner.api.accounts.buildAccountDelegation({ payload: {} })
    yield* owner.api.accounts.signAccountDelegation({ payload: { delegationHash: toSign.delegationHash, signature: yield* signLeg(owner.key, toSign.typedData) } })
    const install = yield* owner.api.accounts.buildRules({
      payload: { intentType: "guardian_add", guardians: guardians.map((g) => ({ address: addressOf(g) })), threshold, delaySeconds: DELAY }
    })
    assert.strictEqual((yield* run(owner.api, install, { kind: "eoa", key: owner.key })).outcome, "mined")
  })

/** The guardian's approval of `newOwner`, signed with its key (`eth_signTypedData_v4` of the typed data served). */
const signApproval = (guardian: Session, A: Address, newOwner: Address, by: Hex = guardian.key) =>
  Effect.gen(function*() {
    const toSign = yield* guardian.api.guardian.buildRecoveryApproval({ payload: { account: A, newOwner } })
    const { EIP712Domain: _, ...types } = toSign.typedData.types
    const signature = yield* Effect.promise(() =>
      privateKeyToAccount(by).signTypedData({
        domain: toSign.typedData.domain,
        types,
        primaryType: "RecoveryApproval",
        message: { ...toSign.typedData.message, nonce: BigInt(toSign.typedData.message.nonce), xs: [], ys: [] }
      } as never)
    )
    return { toSign, signature }
  })

const ownerSteps = (owner: Session) =>
  owner.api.activity.list({ query: { limit: 50 } }).pipe(Effect.map((l) => l.items.filter((e) => e.action.startsWith("recovery_"))))

layer(OwnNetworkServer, { timeout: Duration.seconds(240), excludeTestServices: true })("the guardian lane", (it) => {
  it.effect("2 of 3 guardians recover the account through the service; others see and do nothing", () =>
    Effect.gen(function*() {
      const [net] = yield* LocalNetworks
      const R = net!.recovery.address
      const owner = yield* newSession()
      const A = owner.account.address as Address
      const [k1, k2, k3, k4] = Array.from({ length: 4 }, () => generatePrivateKey())
      yield* installGuardians(owner, [k1!, k2!, k3!], 2)
      const agent = yield* newSession()
      const grant = yield* enabled(owner, agent, { budget: 20, perAction: 10, maxActions: 5 })
      // Another account with its own guardian (k4).
      const other = yield* newSession()
      yield* installGuardians(other, [k4!], 1)

      const [g1, g2, g3, g4] = yield* Effect.all([session(k1!), session(k2!), session(k3!), session(k4!)])
      const [seen, ...more] = yield* g1!.api.guardian.listGuardedAccounts()
      assert.strictEqual(more.length, 0)
      assert.deepStrictEqual(
        [seen!.account, seen!.chainId, seen!.threshold, seen!.guardians, seen!.delaySeconds, seen!.started],
        [A.toLowerCase(), net!.chainId, 2, 3, DELAY, null]
      )
      assert.deepStrictEqual((yield* g4!.api.guardian.listGuardedAccounts()).map((a) => a.account), [other.account.address.toLowerCase()])
      assert.deepStrictEqual(yield* owner.api.guardian.listGuardedAccounts(), [])

      // A guardian of another account: the same 404 as for an account nobody guards; its own transaction is refused on chain.
      const newKey = generatePrivateKey()
      const N = addressOf(newKey)
      const foreign = yield* failure(g4!.api.guardian.buildRecoveryApproval({ payload: { account: A, newOwner: N } }))
      assert.deepStrictEqual([foreign.tag, foreign.details["field"]], ["NotFound", "account"])
      const nobody = yield* failure(g1!.api.guardian.buildRecoveryApproval({ payload: { account: agent.account.address, newOwner: N } }))
      assert.deepStrictEqual([nobody.tag, nobody.message], [foreign.tag, foreign.message])
      assert.strictEqual((yield* failure(g4!.api.guardian.buildGuardianRecovery({ payload: { account: A, action: "execute" } }))).tag, "NotFound")
      assert.strictEqual(yield* sendTx(k4!, approveCall(R, A, { owner: N, passkeys: [] }, [{ guardian: addressOf(k4!), signature: "0x" }])), "reverted")

      // A guardian has no reach into the account's grants or its own operations.
      assert.strictEqual((yield* failure(g1!.api.accounts.getRules({ query: { accountId: owner.account.id } }))).tag, "NotFound")
      assert.strictEqual((yield* failure(g1!.api.accounts.buildRules({ payload: { intentType: "send", accountId: owner.account.id, to: N, token: "ETH", amount: 1 } }))).tag, "NotFound")
      assert.strictEqual((yield* failure(g1!.api.delegations.get({ params: { delegationId: grant.created.id } }))).tag, "NotFound")
      assert.strictEqual((yield* failure(g1!.api.delegations.revoke({ params: { delegationId: grant.created.id } }))).tag, "NotFound")
      assert.deepStrictEqual((yield* g1!.api.delegations.list({ query: {} })).filter((d) => d.id === grant.created.id), [])

      // Bad input: a key that cannot sign, a signature by another key; nothing is built.
      const self = yield* failure(g1!.api.guardian.buildRecoveryApproval({ payload: { account: A, newOwner: A } }))
      assert.deepStrictEqual([self.tag, self.details["field"]], ["BadRequest", "newOwner"])
      const { signature: forged } = yield* signApproval(g1!, A, N, k2!)
      const wrong = yield* failure(g1!.api.guardian.buildGuardianRecovery({ payload: { account: A, action: "approve", newOwner: N, approvalSignature: forged } }))
      assert.deepStrictEqual([wrong.tag, wrong.details["field"]], ["BadRequest", "approvalSignature"])
      assert.strictEqual((yield* failure(g1!.api.guardian.buildGuardianRecovery({ payload: { account: A, action: "execute" } }))).tag, "Conflict")

      // The first approval: the guardian's own account's operation, sponsored, not risk-reducing; on the owner's log at once.
      const first = yield* signApproval(g1!, A, N)
      assert.deepStrictEqual([first.toSign.approvals, first.toSign.threshold], [0, 2])
      const approve1 = yield* g1!.api.guardian.buildGuardianRecovery({ payload: { account: A, action: "approve", newOwner: N, approvalSignature: first.signature } })
      assert.strictEqual(approve1.userOp.sender.toLowerCase(), g1!.account.address.toLowerCase())
      assert.deepStrictEqual([approve1.intentType, approve1.riskReducing, approve1.gasless], ["rules_update", false, true])
      assert.isTrue(approve1.simulation!.willSucceed, JSON.stringify(approve1.simulation))
      assert.strictEqual((yield* run(g1!.api, approve1, { kind: "eoa", key: k1! })).outcome, "mined")
      assert.deepStrictEqual((yield* ownerSteps(owner)).map((e) => [e.action, e.actor]), [["recovery_approved", addressOf(k1!).toLowerCase()]])
      assert.strictEqual((yield* failure(g1!.api.guardian.buildRecoveryApproval({ payload: { account: A, newOwner: N } }))).tag, "Conflict")

      // The second reaches the threshold and starts the delay; the owner is told at once.
      const second = yield* signApproval(g2!, A, N)
      assert.strictEqual(second.toSign.approvals, 1)
      const approve2 = yield* g2!.api.guardian.buildGuardianRecovery({ payload: { account: A, action: "approve", newOwner: N, approvalSignature: second.signature } })
      assert.strictEqual((yield* run(g2!.api, approve2, { kind: "eoa", key: k2! })).outcome, "mined")
      assert.sameMembers((yield* ownerSteps(owner)).map((e) => e.action), ["recovery_approved", "recovery_approved", "recovery_started"])
      const notes = yield* owner.api.notifications.list({ query: { unreadOnly: false } })
      assert.isTrue(notes.some((n) => n.title === "Recovery started"), JSON.stringify(notes.map((n) => n.title)))
      const [pending] = yield* g3!.api.guardian.listGuardedAccounts()
      assert.deepStrictEqual(
        [pending!.started!.newOwner, pending!.started!.approvals, pending!.started!.approvedByYou, pending!.started!.executable],
        [N.toLowerCase(), 2, false, false]
      )
      assert.isTrue((yield* g1!.api.guardian.listGuardedAccounts())[0]!.started!.approvedByYou)

      // Before the delay: refused (the chain refuses it too: test/owner/recovery.test.ts); after it, a third guardian executes.
      const early = yield* failure(g3!.api.guardian.buildGuardianRecovery({ payload: { account: A, action: "execute" } }))
      assert.deepStrictEqual([early.tag, early.details["field"]], ["Conflict", "action"])
      yield* increaseTime(DELAY + 1)
      assert.isTrue((yield* g3!.api.guardian.listGuardedAccounts())[0]!.started!.executable)
      const execute = yield* g3!.api.guardian.buildGuardianRecovery({ payload: { account: A, action: "execute" } })
      assert.isTrue(execute.simulation!.willSucceed, JSON.stringify(execute.simulation))
      assert.strictEqual((yield* run(g3!.api, execute, { kind: "eoa", key: k3! })).outcome, "mined")

      // The account is the new key's at once: it signs in to it; the old key is refused.
      const { baseUrl } = yield* TestServer
      const refused = yield* failure(signIn(baseUrl, privateKeyToAccount(owner.key)))
      assert.strictEqual(refused.tag, "Unauthorized")
      const next = yield* session(newKey)
      assert.strictEqual(next.account.id, owner.account.id)
      assert.deepStrictEqual((yield* next.api.accounts.listDevices({ query: { accountId: owner.account.id } })).map((d) => d.address), [N.toLowerCase()])
      const steps = (yield* ownerSteps(next)).map((e) => e.action)
      assert.sameMembers(steps, ["recovery_approved", "recovery_approved", "recovery_started", "recovery_executed"])
      assert.isNull((yield* g1!.api.guardian.listGuardedAccounts())[0]!.started)
    }))

  it.effect("the recovery watcher resumes from its stored position after a restart: nothing missed, nothing twice", () =>
    Effect.gen(function*() {
      const [net] = yield* LocalNetworks
      const R = net!.recovery.address
      const chain = (yield* Chains).primary
      const owner = yield* newSession()
      const A = owner.account.address as Address
      const [k1, k2] = [generatePrivateKey(), generatePrivateKey()]
      yield* installGuardians(owner, [k1, k2], 2)
      // Each pass below is what a process does when it starts: nothing of the last one is in memory.
      const pass = watchFromCursor(chain).pipe(Effect.provide(Layer.mergeAll(AuditLive.pipe(Layer.provide(EntryNotifierLive)), OwnerRepo.layer)))
      const signers = { owner: addressOf(generatePrivateKey()), passkeys: [] }
      const own = (k: Hex) => [{ guardian: addressOf(k), signature: "0x" as Hex }]

      // Around the service (the watcher's only source here): the first approval, read by a first process.
      assert.strictEqual(yield* sendTx(k1, approveCall(R, A, signers, own(k1))), "success")
      const firstNext = yield* pass
      assert.strictEqual(yield* readCursor(chain.chainId), firstNext)
      assert.deepStrictEqual((yield* ownerSteps(owner)).map((e) => e.action), ["recovery_approved"])

      // While no process runs, the second approval starts the recovery; the next process finds both events.
      assert.strictEqual(yield* sendTx(k2, approveCall(R, A, signers, own(k2))), "success")
      assert.strictEqual(yield* readCursor(chain.chainId), firstNext)
      const [a, b] = yield* Effect.all([pass, pass], { concurrency: 2 })
      assert.isAbove(Number(a), Number(firstNext))
      assert.strictEqual(yield* readCursor(chain.chainId), a > b! ? a : b)
      yield* pass
      assert.sameMembers((yield* ownerSteps(owner)).map((e) => e.action), ["recovery_approved", "recovery_approved", "recovery_started"])
    }))
})

