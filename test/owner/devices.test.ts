/**
 * Devices of the owner's account through the service (build → sign → relay), on the local
 * chain: a passkey added by the owner key signs the owner's operations (a USDC send), is
 * listed from the chain with its label, and once removed the chain refuses its signature
 * (its own operation straight to the bundler: AA24). An EOA device replaces the owner key:
 * the new key signs, the old one is refused by the chain. Bad input is a 400 naming the field,
 * and nothing is built or changed.
 */
import { assert, layer } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { Address, Hex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { AccountStack } from "../../src/chain/Accounts4337.ts"
import { BundlerRejected } from "../../src/chain/Bundler.ts"
import { eoaDevice, passkeyDevice, sendOwnerOp } from "../support/OwnerOps.ts"
import { makeSoftwareAuthenticator } from "../support/SoftwareAuthenticator.ts"
import { mint } from "../support/TestChain.ts"
import { TestServerLive } from "../support/TestServer.ts"
import { failure, newSession, session, usdcBalance } from "../delegations/helpers.ts"
import { run, signed } from "./helpers.ts"

process.env.DO_NOT_TRACK = "1"

const randomAddress = () => privateKeyToAccount(generatePrivateKey()).address.toLowerCase() as Address

layer(TestServerLive(), { timeout: Duration.seconds(120), excludeTestServices: true })("owner devices", (it) => {
  it.effect("a passkey added through the service signs a send; removed, the chain refuses its signature", () =>
    Effect.gen(function*() {
      const stack = yield* AccountStack
      const owner = yield* newSession()
      const account = owner.account
      const eoa = { kind: "eoa" as const, key: owner.key }
      const passkey = makeSoftwareAuthenticator()
      const recipient = randomAddress()
      yield* mint("usd", account.address as Address, 20)

      // Added by the owner key (the account is deployed by this very operation).
      const add = yield* owner.api.accounts.buildRules({
        payload: { intentType: "device_add", device: { kind: "passkey", keyId: passkey.keyId, publicKey: passkey.spki, label: "Alice's phone" } }
      })
      assert.strictEqual(add.intentType, "device_add")
      assert.isTrue(add.simulation!.willSucceed, JSON.stringify(add.simulation))
      assert.strictEqual((yield* run(owner.api, add, eoa)).outcome, "mined")

      // Listed from the chain, with its label and the transaction that added it.
      const devices = yield* owner.api.accounts.listDevices({ query: {} })
      assert.deepStrictEqual(devices.map((d) => [d.kind, d.label]), [["eoa", "Owner key"], ["passkey", "Alice's phone"]])
      assert.strictEqual(devices[1]!.keyId, passkey.keyId)
      assert.strictEqual(devices[1]!.publicKey, passkey.sec1)
      assert.strictEqual(devices[0]!.address, owner.account.signerAddress.toLowerCase())
      assert.match(devices[1]!.transactionHash ?? "", /^0x[0-9a-f]{64}$/)

      // The passkey alone signs a send (gas estimated for its verification).
      const send = yield* owner.api.accounts.buildRules({
        payload: { intentType: "send", to: recipient, token: "USDC", amount: 7.5, signWith: { keyId: passkey.keyId } }
      })
      assert.deepStrictEqual(send.signWith, { kind: "passkey", keyId: passkey.keyId })
      assert.strictEqual((yield* run(owner.api, send, { kind: "passkey", authenticator: passkey })).outcome, "mined")
      assert.strictEqual(yield* usdcBalance(recipient), 7_500_000n)

      // A passkey's assertion over another operation's digest: a 400 naming the field, never an AA24.
      const next = yield* owner.api.accounts.buildRules({
        payload: { intentType: "send", to: recipient, token: "USDC", amount: 1, signWith: { keyId: passkey.keyId } }
      })
      const forged = { ...(yield* signed(next, { kind: "passkey", authenticator: passkey })) }
      const other = passkey.assert(add.signingDigest as Hex)
      const wrong = yield* failure(owner.api.userops.submit({
        payload: { ...forged, webauthn: { keyId: passkey.keyId, ...other } }
      }))
      assert.strictEqual(wrong.tag, "BadRequest")
      assert.strictEqual(wrong.details["field"], "webauthn.clientDataJSON")

      // Removed by the owner key.
      const remove = yield* owner.api.accounts.buildRules({ payload: { intentType: "device_remove", device: { kind: "passkey", keyId: passkey.keyId } } })
      assert.include(remove.simulation!.warnings.join(" "), "stops signing")
      assert.strictEqual((yield* run(owner.api, remove, eoa)).outcome, "mined")
      assert.deepStrictEqual((yield* owner.api.accounts.listDevices({ query: {} })).map((d) => d.kind), ["eoa"])

      // The send built before the removal, signed by the removed passkey: the service refuses it ...
      const late = yield* failure(owner.api.userops.submit({ payload: yield* signed(next, { kind: "passkey", authenticator: passkey }) }))
      assert.strictEqual(late.tag, "BadRequest")
      assert.strictEqual(late.details["field"], "webauthn.keyId")
      // ... and so does the chain, the passkey's own operation straight to the bundler.
      const counterfactual = yield* stack.counterfactualAccount(owner.account.signerAddress as Address, 0n)
      const rejected = yield* sendOwnerOp({
        account: counterfactual,
        device: passkeyDevice(passkey),
        calls: [{ to: recipient, value: 0n, data: "0x" }]
      }).pipe(Effect.flip)
      assert.instanceOf(rejected, BundlerRejected)
      assert.include((rejected as BundlerRejected).message, "AA24")
      assert.strictEqual(yield* usdcBalance(recipient), 7_500_000n)
    }))

  it.effect("an EOA device replaces the owner key: the new key signs (and signs in to it), the old key's own operation is refused by the chain", () =>
    Effect.gen(function*() {
      const stack = yield* AccountStack
      const owner = yield* newSession()
      const newKey = generatePrivateKey()
      const newAddress = privateKeyToAccount(newKey).address.toLowerCase()
      const add = yield* owner.api.accounts.buildRules({
        // Upper-case hex: a valid address, not a valid EIP-55 checksum (viem refuses to encode it as given; the fuzzer's 500).
        payload: { intentType: "device_add", device: { kind: "eoa", address: `0x${newAddress.slice(2).toUpperCase()}`, label: "Hardware wallet" } }
      })
      assert.include(add.humanSummary ?? "", "Replace the owner key")
      assert.strictEqual((yield* run(owner.api, add, { kind: "eoa", key: owner.key })).outcome, "mined")
      // The account follows the new key's sign-in (test/owner/keys.test.ts); the old key's session no longer finds it.
      assert.strictEqual((yield* failure(owner.api.accounts.listDevices({ query: { accountId: owner.account.id } }))).tag, "NotFound")
      const next = yield* session(newKey)
      const devices = yield* next.api.accounts.listDevices({ query: { accountId: owner.account.id } })
      assert.deepStrictEqual(devices.map((d) => [d.address, d.label]), [[newAddress, "Hardware wallet"]])

      // The new key signs the owner's next operation.
      const recipient = randomAddress()
      yield* mint("usd", owner.account.address as Address, 3)
      const send = yield* next.api.accounts.buildRules({ payload: { intentType: "send", accountId: owner.account.id, to: recipient, token: "USDC", amount: 2 } })
      assert.strictEqual((yield* run(next.api, send, { kind: "eoa", key: newKey })).outcome, "mined")
      assert.strictEqual(yield* usdcBalance(recipient), 2_000_000n)

      // The old key, straight to the bundler: AA24.
      const counterfactual = yield* stack.counterfactualAccount(owner.account.signerAddress as Address, 0n)
      const rejected = yield* sendOwnerOp({ account: counterfactual, device: eoaDevice(owner.key), calls: [{ to: recipient, value: 0n, data: "0x" }] }).pipe(
        Effect.flip
      )
      assert.instanceOf(rejected, BundlerRejected)
      assert.include((rejected as BundlerRejected).message, "AA24")
    }))

  it.effect("bad input: a 400 naming the field, nothing built, nothing changed", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const owner = yield* newSession()
      const passkey = makeSoftwareAuthenticator()
      const before = yield* owner.api.accounts.getRules({ query: {} })
      const refused = (payload: Parameters<typeof owner.api.accounts.buildRules>[0]["payload"]) =>
        failure(owner.api.accounts.buildRules({ payload }))
      const cases: ReadonlyArray<[Parameters<typeof owner.api.accounts.buildRules>[0]["payload"], string]> = [
        // x + 1: not on P-256
        [{ intentType: "device_add", device: { kind: "passkey", keyId: passkey.keyId, publicKey: `0x04${(passkey.publicKey.x + 1n).toString(16).padStart(64, "0")}${passkey.publicKey.y.toString(16).padStart(64, "0")}`, label: "x" } }, "device.publicKey"],
        [{ intentType: "device_add", device: { kind: "passkey", keyId: passkey.keyId, publicKey: "0x04", label: "x" } }, "device.publicKey"],
        [{ intentType: "device_add", device: { kind: "eoa", address: owner.account.signerAddress, label: "me" } }, "device.address"],
        [{ intentType: "device_add", device: { kind: "eoa", address: owner.account.address, label: "itself" } }, "device.address"],
        [{ intentType: "device_remove", device: { kind: "eoa" } }, "device"],
        [{ intentType: "device_remove", device: { kind: "passkey", keyId: passkey.keyId } }, "device.keyId"],
        [{ intentType: "device_threshold", threshold: 2 }, "intentType"],
        [{ intentType: "swap" }, "intentType"],
        [{ intentType: "guardian_add", guardians: [{ address: randomAddress() }], threshold: 0 }, "threshold"],
        [{ intentType: "guardian_add", guardians: [{ address: randomAddress() }], threshold: 2 }, "threshold"],
        [{ intentType: "guardian_add", guardians: [{ address: owner.account.address }], threshold: 1 }, "guardians[0].address"],
        [{ intentType: "guardian_add", guardians: [{ address: randomAddress() }], threshold: 1, delaySeconds: 60 }, "delaySeconds"],
        [{ intentType: "guardian_remove", guardians: [randomAddress()], threshold: 0 }, "guardians[0]"],
        [{ intentType: "rules_update", change: { kind: "safe_address", address: owner.account.address } }, "change.address"],
        [{ intentType: "rules_update", change: { kind: "recovery_delay", delaySeconds: 31 * 86_400 } }, "change.delaySeconds"],
        [{ intentType: "send", to: randomAddress(), token: "DOGE", amount: 1 }, "token"],
        [{ intentType: "send", to: owner.account.address, token: "USDC", amount: 1 }, "to"],
        [{ intentType: "send", token: "USDC", amount: 1 }, "to"],
        [{ intentType: "send", to: randomAddress(), token: "USDC", amount: 0.0000001 }, "amount"],
        [{ intentType: "send", withdrawToSafety: true, to: randomAddress() }, "to"],
        [{ intentType: "send", to: randomAddress(), token: "USDC", amount: 1, signWith: { keyId: passkey.keyId } }, "signWith.keyId"]
      ]
      for (const [payload, field] of cases) {
        const e = yield* refused(payload)
        assert.strictEqual(e.tag, "BadRequest", `${JSON.stringify(payload)}: ${e.message}`)
        assert.strictEqual(e.details["field"], field, `${JSON.stringify(payload)}: ${e.message}`)
      }
      // A send above the balance is built, and the simulation says it fails and why.
      const tooMuch = yield* owner.api.accounts.buildRules({ payload: { intentType: "send", to: randomAddress(), token: "USDC", amount: 1_000 } })
      assert.isFalse(tooMuch.simulation!.willSucceed)
      assert.include(tooMuch.simulation!.warnings.join(" "), "fails")

      const builds = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM op_builds WHERE account_id = ${owner.account.id}`
      assert.strictEqual(builds[0]!.n, 1, "only the send above the balance was built")
      assert.deepStrictEqual(yield* owner.api.accounts.getRules({ query: {} }), before)
    }))
})
