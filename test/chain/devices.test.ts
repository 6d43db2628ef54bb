/**
 * Devices of the owner's account on the run's local chain (src/chain/Devices.ts): what a
 * HybridDeleGator holds (one EOA owner, P-256 passkeys), the call data that changes it, a
 * software WebAuthn authenticator's signatures in the account's encoding (the kit's layout),
 * and the chain's own refusals: a removed key (AA24), the last signer, a key off the curve.
 * Every operation is the account's own, sent straight to the bundler, nothing through the service.
 */
import { assert, layer } from "@effect/vitest"
import { HybridDeleGator } from "@metamask/delegation-abis"
import { Implementation, toMetaMaskSmartAccount } from "@metamask/smart-accounts-kit"
import { SIGNATURE_ABI_PARAMS } from "@metamask/smart-accounts-kit/utils"
import { Duration, Effect } from "effect"
import {
  type Address,
  createPublicClient,
  decodeAbiParameters,
  encodeFunctionData,
  erc20Abi,
  type Hash,
  type Hex,
  hashTypedData,
  http,
  keccak256,
  pad,
  toHex,
  zeroAddress
} from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { AccountStack } from "../../src/chain/Accounts4337.ts"
import { BundlerRejected } from "../../src/chain/Bundler.ts"
import { Chain, viemChainOf } from "../../src/chain/Chain.ts"
import {
  addPasskeyCall,
  encodePasskeySignature,
  isOnP256,
  P256_N,
  parseDerSignature,
  parsePasskeyPublicKey,
  passkeyChallenge,
  passkeyStubSignature,
  readDevices,
  removeOwnerCall,
  removePasskeyCall,
  replaceOwnerCall,
  replaceSignersCall,
  verifyPasskeyAssertion
} from "../../src/chain/Devices.ts"
import { LocalNetwork } from "../../src/chain/LocalNetwork.ts"
import { testNetwork } from "../support/TestChain.ts"
import {
  chainLayers,
  type Device,
  eoaDevice,
  mintUsd,
  ownerOp,
  passkeyDevice,
  refusedOwnerOp,
  sendOwnerOp,
  sharedNetworkLayer,
  signDigest,
  usdBalance
} from "../support/OwnerOps.ts"
import { makeSoftwareAuthenticator, type SoftwareAuthenticator } from "../support/SoftwareAuthenticator.ts"

process.env.DO_NOT_TRACK = "1"

const ERC1271_MAGIC = "0x1626ba7e"
const randomAddress = () => privateKeyToAccount(generatePrivateKey()).address
const transfer = (token: Address, to: Address, units: bigint) => ({
  to: token,
  value: 0n,
  data: encodeFunctionData({ abi: erc20Abi, functionName: "transfer", args: [to, units] })
})

/** A fresh owner key and its (counterfactual) account. */
const newAccount = Effect.gen(function*() {
  const stack = yield* AccountStack
  const key = generatePrivateKey()
  const account = yield* stack.counterfactualAccount(privateKeyToAccount(key).address, 0n)
  return { key, owner: eoaDevice(key), account }
})

/** An operation the bundler refuses for its signature (ERC-7769 -32507, AA24). */
const rejectedSignature = (opts: Parameters<typeof sendOwnerOp>[0]) =>
  Effect.gen(function*() {
    const err = yield* sendOwnerOp(opts).pipe(Effect.flip)
    assert.instanceOf(err, BundlerRejected)
    assert.strictEqual((err as BundlerRejected).code, -32507)
    assert.include((err as BundlerRejected).message, "AA24")
  })

/** ERC-1271 on the account: what a delegation, a permit or a guardian approval signed by a device meets. */
const isValidSignature = (account: Address, hash: Hash, signature: Hex) =>
  Effect.gen(function*() {
    const chain = yield* Chain
    return yield* Effect.promise(() =>
      chain.client.readContract({ address: account, abi: HybridDeleGator, functionName: "isValidSignature", args: [hash, signature] })
    )
  })

/** The same passkey signing the wrong digest (the challenge of another operation). */
const signingAnotherDigest = (authenticator: SoftwareAuthenticator): Device =>
  passkeyDevice({ ...authenticator, sign: () => authenticator.sign(keccak256(toHex("another operation"))) })

layer(chainLayers(sharedNetworkLayer(testNetwork())), { timeout: Duration.seconds(120), excludeTestServices: true })("devices", (it) => {
  it.effect("a passkey's public key: SEC1 or SPKI on the curve; anything else is refused with the field", () =>
    Effect.sync(() => {
      const a = makeSoftwareAuthenticator()
      for (const encoded of [a.sec1, a.spki]) {
        const parsed = parsePasskeyPublicKey(a.keyId, encoded)
        assert.deepStrictEqual(parsed, { _tag: "Ok", value: a.publicKey })
      }
      assert.isTrue(isOnP256(a.publicKey.x, a.publicKey.y))
      const offCurve = `0x04${a.publicKey.x.toString(16).padStart(64, "0")}${(a.publicKey.y + 1n).toString(16).padStart(64, "0")}` as Hex
      const refusal = (keyId: string, key: Hex) => {
        const r = parsePasskeyPublicKey(keyId, key)
        return r._tag === "Invalid" ? r.field : "accepted"
      }
      assert.strictEqual(refusal(a.keyId, offCurve), "publicKey")
      assert.strictEqual(refusal(a.keyId, `0x04${"00".repeat(64)}`), "publicKey") // the origin
      assert.strictEqual(refusal(a.keyId, `0x02${a.publicKey.x.toString(16).padStart(64, "0")}`), "publicKey") // compressed
      assert.strictEqual(refusal(a.keyId, a.sec1.slice(0, -2) as Hex), "publicKey")
      assert.strictEqual(refusal(a.keyId, "0xzz" as Hex), "publicKey")
      assert.strictEqual(refusal("", a.sec1), "keyId")
      assert.strictEqual(refusal("key\u0000id", a.sec1), "keyId")
      assert.strictEqual(refusal("x".repeat(513), a.sec1), "keyId")
      assert.isFalse(isOnP256((1n << 256n) - 1n, a.publicKey.y))
    }))

  it.effect("the passkey signature is the kit's encoding; bad assertions are refused before any bundler", () =>
    Effect.gen(function*() {
      const net = yield* LocalNetwork
      const stack = yield* AccountStack
      const a = makeSoftwareAuthenticator()
      // The kit's own WebAuthn signer, fed this authenticator's assertion (r ‖ s parsed from its DER).
      let last: { hash: Hash; assertion: ReturnType<SoftwareAuthenticator["assert"]> } | undefined
      const webAuthnAccount = {
        type: "webAuthn" as const,
        id: a.keyId,
        publicKey: a.sec1,
        sign: async ({ hash }: { hash: Hash }) => {
          const assertion = a.assert(hash)
          last = { hash, assertion }
          const rs = parseDerSignature(assertion.signature)!
          return {
            signature: `0x${rs.r.toString(16).padStart(64, "0")}${rs.s.toString(16).padStart(64, "0")}` as Hex,
            webauthn: { ...assertion, challengeIndex: 0, typeIndex: 0, userVerificationRequired: true },
            raw: {} as never
          }
        },
        signMessage: async () => { throw new Error("unused") },
        signTypedData: async (td: Parameters<typeof hashTypedData>[0]) => webAuthnAccount.sign({ hash: hashTypedData(td) })
      }
      const kitAccount = yield* Effect.promise(() =>
        toMetaMaskSmartAccount({
          client: createPublicClient({ chain: viemChainOf(net), transport: http(net.rpcUrl) }),
          implementation: Implementation.Hybrid,
          deployParams: [zeroAddress, [a.keyId], [a.publicKey.x], [a.publicKey.y]],
          deploySalt: pad("0x01", { size: 32 }),
          environment: net.delegation as never,
          signer: { webAuthnAccount: webAuthnAccount as never, keyId: a.keyId as Hex }
        })
      )
      const op = {
        sender: kitAccount.address,
        nonce: 5n,
        callData: stack.encodeExecute([{ to: randomAddress(), value: 1n }]),
        callGasLimit: 100_000n,
        verificationGasLimit: 400_000n,
        preVerificationGas: 60_000n,
        maxFeePerGas: 2_000_000_000n,
        maxPriorityFeePerGas: 1_000_000n
      }
      const kitSignature = yield* Effect.promise(() => kitAccount.signUserOperation({ ...op, signature: "0x" } as never))
      const ourHash = hashTypedData(stack.userOperationTypedData(op))
      assert.strictEqual(last?.hash, ourHash, "the kit and the service sign the same digest")
      const ours = encodePasskeySignature(a.keyId, ourHash, last!.assertion)
      assert.deepStrictEqual(ours, { _tag: "Ok", value: kitSignature })
      assert.isTrue(verifyPasskeyAssertion(a.publicKey, last!.assertion))

      // s is always taken in the lower half (the account refuses the upper one).
      const decoded = decodeAbiParameters(SIGNATURE_ABI_PARAMS, kitSignature)
      assert.isTrue((decoded[2] as bigint) <= P256_N / 2n)
      // The stub has the same layout (estimation), longer client data than a browser's.
      const stub = decodeAbiParameters(SIGNATURE_ABI_PARAMS, passkeyStubSignature(a.keyId))
      assert.strictEqual(stub[0], decoded[0])
      assert.isAbove(passkeyStubSignature(a.keyId).length, kitSignature.length)

      // Refused before any bundler, naming the field.
      const field = (r: ReturnType<typeof encodePasskeySignature>) => r._tag === "Invalid" ? r.field : "accepted"
      const other = keccak256(toHex("other"))
      assert.strictEqual(field(encodePasskeySignature(a.keyId, other, a.assert(ourHash))), "clientDataJSON")
      assert.strictEqual(field(encodePasskeySignature(a.keyId, ourHash, a.assert(ourHash, { userVerified: false }))), "authenticatorData")
      for (const der of ["0x3006020101020101ff", "0x30060201010201", "0x300702020001020101", "0x3006020100020101"] as const) {
        assert.strictEqual(field(encodePasskeySignature(a.keyId, ourHash, { ...a.assert(ourHash), signature: der as Hex })), "signature", der)
      }
      assert.deepStrictEqual(parseDerSignature("0x3006020101020101"), { r: 1n, s: 1n })
      // An r of 31 bytes (about one signature in 256) and a 33-byte s with its sign byte: both read right
      // (ox 0.8's parser, under viem's toWebAuthnAccount, misreads the first).
      const short = `0x3044021f${"7f".repeat(31)}0221${"00"}${"9a".repeat(32)}` as Hex
      assert.deepStrictEqual(parseDerSignature(short), { r: BigInt(`0x${"7f".repeat(31)}`), s: BigInt(`0x${"9a".repeat(32)}`) })
      assert.strictEqual(field(encodePasskeySignature(a.keyId, ourHash, { ...a.assert(ourHash), authenticatorData: "0x01" })), "authenticatorData")
      const typeless = a.assert(ourHash)
      assert.strictEqual(
        field(encodePasskeySignature(a.keyId, ourHash, { ...typeless, clientDataJSON: typeless.clientDataJSON.replace("webauthn.get", "webauthn.create") })),
        "clientDataJSON"
      )
      assert.isFalse(verifyPasskeyAssertion(makeSoftwareAuthenticator().publicKey, a.assert(ourHash)))
      assert.strictEqual(passkeyChallenge(ourHash).length, 43)
    }))

  it.effect("the owner adds a passkey; an operation signed only by the passkey executes; the chain lists it", () =>
    Effect.gen(function*() {
      const net = yield* LocalNetwork
      const { owner, account } = yield* newAccount
      const passkey = makeSoftwareAuthenticator()
      const recipient = randomAddress()
      yield* mintUsd(account.address, 10_000_000n)

      // The first owner operation deploys the account and adds the passkey.
      const added = yield* ownerOp({ account, device: owner, calls: [addPasskeyCall(account.address, passkey.publicKey)] })
      const devices = yield* readDevices(account.address)
      assert.isTrue(devices.deployed)
      assert.strictEqual(devices.owner?.address, privateKeyToAccount((owner as { key: Hex }).key).address)
      assert.strictEqual(devices.passkeys.length, 1)
      const [listed] = devices.passkeys
      assert.strictEqual(listed?.keyId, passkey.keyId)
      assert.strictEqual(listed?.x, passkey.publicKey.x)
      assert.strictEqual(listed?.y, passkey.publicKey.y)
      assert.strictEqual(listed?.added.transactionHash, added.transactionHash)
      assert.isAbove(Number(listed?.added.timestamp ?? 0n), 0)
      assert.strictEqual(devices.owner?.since?.blockNumber !== undefined, true)

      // Signed by the passkey alone: USDC moves.
      yield* ownerOp({ account, device: passkeyDevice(passkey), calls: [transfer(net.tokens.usd.address, recipient, 2_500_000n)] })
      assert.strictEqual(yield* usdBalance(recipient), 2_500_000n)
      assert.strictEqual(yield* usdBalance(account.address), 7_500_000n)
      // ... and the EOA still signs too (any one device signs).
      yield* ownerOp({ account, device: owner, calls: [transfer(net.tokens.usd.address, recipient, 500_000n)] })
      assert.strictEqual(yield* usdBalance(recipient), 3_000_000n)

      // A passkey signature over another digest, and an unknown passkey, are refused (AA24).
      yield* rejectedSignature({ account, device: signingAnotherDigest(passkey), calls: [transfer(net.tokens.usd.address, recipient, 1n)] })
      yield* rejectedSignature({ account, device: passkeyDevice(makeSoftwareAuthenticator()), calls: [transfer(net.tokens.usd.address, recipient, 1n)] })

      // ERC-1271 (delegations, permits, guardian approvals): the passkey's signature is the account's.
      const digest = keccak256(toHex("a delegation's EIP-712 digest"))
      assert.strictEqual(yield* isValidSignature(account.address, digest, passkey.sign(digest)), ERC1271_MAGIC)
      assert.notStrictEqual(yield* isValidSignature(account.address, digest, makeSoftwareAuthenticator().sign(digest)), ERC1271_MAGIC)
      assert.strictEqual(yield* isValidSignature(account.address, digest, yield* signDigest(owner, digest)), ERC1271_MAGIC)
    }))

  it.effect("a removed passkey is refused (AA24); the last signer cannot be removed; the chain refuses bad keys", () =>
    Effect.gen(function*() {
      const net = yield* LocalNetwork
      const { owner, account } = yield* newAccount
      const [first, second] = [makeSoftwareAuthenticator(), makeSoftwareAuthenticator()]
      const somewhere = randomAddress()
      const marker = [{ to: somewhere, value: 0n, data: "0x" as Hex }]
      yield* ownerOp({ account, device: owner, calls: [addPasskeyCall(account.address, first.publicKey), addPasskeyCall(account.address, second.publicKey)] })
      assert.deepStrictEqual((yield* readDevices(account.address)).passkeys.map((p) => p.keyId), [first.keyId, second.keyId])

      // The chain's own refusals of bad keys: off the curve, twice, unknown.
      const offCurve = { ...first.publicKey, keyId: "off-curve", y: first.publicKey.y + 1n }
      yield* refusedOwnerOp({ account, device: owner, calls: [addPasskeyCall(account.address, offCurve)] }, "KeyNotOnCurve")
      yield* refusedOwnerOp({ account, device: owner, calls: [addPasskeyCall(account.address, first.publicKey)] }, "KeyAlreadyExists")
      yield* refusedOwnerOp({ account, device: owner, calls: [removePasskeyCall(account.address, "never-added")] }, "KeyDoesNotExist")

      // The second passkey removes the first; the first is refused from then on.
      yield* ownerOp({ account, device: passkeyDevice(second), calls: [removePasskeyCall(account.address, first.keyId)] })
      yield* rejectedSignature({ account, device: passkeyDevice(first), calls: marker })
      assert.deepStrictEqual((yield* readDevices(account.address)).passkeys.map((p) => p.keyId), [second.keyId])

      // The passkey removes the EOA owner: the account is passkey-only, the EOA is refused.
      yield* ownerOp({ account, device: passkeyDevice(second), calls: [removeOwnerCall(account.address)] })
      assert.isNull((yield* readDevices(account.address)).owner)
      yield* rejectedSignature({ account, device: owner, calls: marker })

      // The last signer cannot go, whichever way it is asked.
      yield* refusedOwnerOp({ account, device: passkeyDevice(second), calls: [removePasskeyCall(account.address, second.keyId)] }, "CannotRemoveLastSigner")
      yield* refusedOwnerOp({ account, device: passkeyDevice(second), calls: [replaceSignersCall(account.address, null, [])] }, "SignersCannotBeEmpty")
      const { owner: soleOwner, account: eoaOnly } = yield* newAccount
      yield* ownerOp({ account: eoaOnly, device: soleOwner, calls: marker })
      yield* refusedOwnerOp({ account: eoaOnly, device: soleOwner, calls: [removeOwnerCall(eoaOnly.address)] }, "CannotRemoveLastSigner")

      // Still usable by its one remaining device.
      yield* mintUsd(account.address, 1_000_000n)
      yield* ownerOp({ account, device: passkeyDevice(second), calls: [transfer(net.tokens.usd.address, somewhere, 1_000_000n)] })
      assert.strictEqual(yield* usdBalance(somewhere), 1_000_000n)
    }))

  it.effect("a second EOA only replaces the owner key: it signs, the old key is refused", () =>
    Effect.gen(function*() {
      const { key, owner, account } = yield* newAccount
      const secondKey = generatePrivateKey()
      const second = privateKeyToAccount(secondKey).address
      const marker = [{ to: randomAddress(), value: 0n, data: "0x" as Hex }]
      yield* ownerOp({ account, device: owner, calls: marker })
      const replaced = yield* ownerOp({ account, device: owner, calls: [replaceOwnerCall(account.address, second)] })
      const devices = yield* readDevices(account.address)
      assert.strictEqual(devices.owner?.address, second)
      assert.strictEqual(devices.owner?.since?.transactionHash, replaced.transactionHash)
      yield* ownerOp({ account, device: eoaDevice(secondKey), calls: marker })
      yield* rejectedSignature({ account, device: eoaDevice(key), calls: marker })
      // A delegation the old key signed no longer verifies (ERC-1271 asks the current signers).
      const digest = keccak256(toHex("a grant signed before the change"))
      assert.notStrictEqual(yield* isValidSignature(account.address, digest, yield* signDigest(eoaDevice(key), digest)), ERC1271_MAGIC)
      // An account not yet deployed lists no devices from the chain (its owner is its deploy parameter).
      const fresh = yield* newAccount
      assert.deepStrictEqual(yield* readDevices(fresh.account.address), { deployed: false, owner: null, passkeys: [], unresolvedKeyIdHashes: [] })
    }))
})
