/**
 * A sponsored build's gas limits hold wherever a bundler puts the operation: bundled alone by a
 * stranger with every account and slot cold, and twelve in one `handleOps`. (In one CI run Alto's
 * bundle simulation found an enable "AA36 over paymasterVerificationGasLimit" with the estimate's
 * 21,219 gas and dropped it without a word to the relay; the builder now adds a margin to the
 * paymaster's validation gas as it does to the account's. These two shapes did not reproduce
 * that refusal without the margin: they pin what must hold, not the cause, which is not known.)
 */
import { assert, layer } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { type Address, createWalletClient, decodeEventLog, type Hex, http, parseEther } from "viem"
import { entryPoint07Abi, toPackedUserOperation } from "viem/account-abstraction"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { fromWire } from "../../src/builds/Wire.ts"
import { Chain, viemChainOf } from "../../src/chain/Chain.ts"
import { Network } from "../../src/chain/Network.ts"
import { newSession, signOp } from "../delegations/helpers.ts"
import { TestServerLive } from "../support/TestServer.ts"

/** `handleOps` of `ops` from a fresh EOA in one transaction: the EntryPoint's refusal if any, else each operation's success. */
const bundleThemselves = (ops: ReadonlyArray<ReturnType<typeof fromWire>>) =>
  Effect.gen(function*() {
    const net = yield* Network
    const chain = yield* Chain
    const bundler = privateKeyToAccount(generatePrivateKey())
    yield* Effect.promise(() =>
      chain.client.request({ method: "anvil_setBalance" as never, params: [bundler.address, `0x${parseEther("1").toString(16)}`] as never })
    )
    const args = [ops.map((op) => toPackedUserOperation(op as never)), bundler.address] as const
    // What the EntryPoint says before it is sent (a FailedOp names the limit that was too low).
    const refusal = yield* Effect.promise(() =>
      chain.client.simulateContract({ account: bundler, address: net.entryPoint, abi: entryPoint07Abi, functionName: "handleOps", args, gas: 15_000_000n })
        .then(() => undefined, (e: unknown) => String(e))
    )
    if (refusal !== undefined) return { refusal, executed: [] as Array<{ paymaster: Address; success: boolean }> }
    const wallet = createWalletClient({ chain: viemChainOf(net), transport: http(net.rpcUrl), account: bundler })
    const hash = yield* Effect.promise(() => wallet.writeContract({ address: net.entryPoint, abi: entryPoint07Abi, functionName: "handleOps", args, gas: 15_000_000n }))
    const receipt = yield* Effect.promise(() => chain.client.waitForTransactionReceipt({ hash: hash as Hex }))
    assert.strictEqual(receipt.status, "success")
    const executed = receipt.logs.flatMap((l) => {
      try {
        const e = decodeEventLog({ abi: entryPoint07Abi, topics: l.topics, data: l.data })
        return e.eventName === "UserOperationEvent" ? [{ paymaster: e.args.paymaster.toLowerCase() as Address, success: e.args.success }] : []
      } catch {
        return []
      }
    })
    return { refusal, executed }
  })

layer(TestServerLive(), { timeout: Duration.seconds(120), excludeTestServices: true })("sponsored gas limits", (it) => {
  it.effect("a sponsored build bundled alone by a stranger, everything cold: the paymaster's validation fits its limit", () =>
    Effect.gen(function*() {
      const owner = yield* newSession()
      const built = yield* owner.api.accounts.buildRules({ payload: { intentType: "account_freeze" } })
      assert.isTrue(built.gasless)
      const op = fromWire(yield* signOp(owner.key, built.userOp))
      assert.isDefined(op.paymaster)
      const { refusal, executed } = yield* bundleThemselves([op])
      assert.isUndefined(refusal)
      assert.deepStrictEqual(executed, [{ paymaster: op.paymaster!.toLowerCase() as Address, success: true }])
    }))

  it.effect("twelve sponsored enables in one bundle: each one's paymaster validation fits its limit, late in the bundle too", () =>
    Effect.gen(function*() {
      const net = yield* Network
      const ops = yield* Effect.forEach(Array.from({ length: 12 }, (_, i) => i), () =>
        Effect.gen(function*() {
          const owner = yield* newSession()
          const built = yield* owner.api.delegations.build({
            payload: {
              name: "bundle",
              kind: "agent",
              delegateeAddress: privateKeyToAccount(generatePrivateKey()).address,
              chainId: net.chainId,
              budgets: [{ token: { symbol: "USDC" }, amount: 1 }]
            }
          })
          return fromWire(yield* signOp(owner.key, built.enableUserOp))
        }), { concurrency: 4 })
      const { refusal, executed } = yield* bundleThemselves(ops)
      assert.isUndefined(refusal)
      assert.strictEqual(executed.length, 12)
      assert.isTrue(executed.every((e) => e.success))
    }))
})
