/**
 * The run's deployer is shared by every test file and the faucet on one chain. Twelve sends at
 * once from it through `sendFromDevAccount` (the tests' only way to send as a dev account) must
 * all be created and mined, each with its own nonce: anvil refuses about half of such a burst
 * ("nonce too low"), which failed a test of another file at random before (a mint refused).
 */
import { Redacted } from "effect"
import { createPublicClient, http } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { assert, describe, it } from "vitest"
import { sendFromDevAccount } from "../../src/chain/DevAccount.ts"
import { testNetwork } from "../support/TestChain.ts"

describe("sends as the shared dev account", () => {
  it("twelve at once are all mined, each with its own nonce", { timeout: 60_000 }, async () => {
    const net = testNetwork()
    const from = privateKeyToAccount(Redacted.value(net.deployerKey)).address
    const to = Array.from({ length: 12 }, () => privateKeyToAccount(generatePrivateKey()).address)
    const receipts = await Promise.all(to.map((address, i) => sendFromDevAccount(net.rpcUrl, { from, to: address, value: BigInt(i + 1) })))
    assert.deepStrictEqual(receipts.map((r) => r.status), receipts.map(() => "success"))
    const client = createPublicClient({ transport: http(net.rpcUrl) })
    const nonces = await Promise.all(receipts.map((r) => client.getTransaction({ hash: r.transactionHash }).then((t) => t.nonce)))
    assert.strictEqual(new Set(nonces).size, 12)
    const balances = await Promise.all(to.map((address) => client.getBalance({ address })))
    assert.deepStrictEqual(balances, to.map((_, i) => BigInt(i + 1)))
  })
})
