/**
 * The local faucet: mints what it says (balance read on chain), two calls at once both land
 * (the node assigns the nonces), a refused request changes nothing, and no session no faucet.
 */
import { assert, layer } from "@effect/vitest"
import { Duration, Effect, Redacted } from "effect"
import { erc20Abi, parseUnits } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { Chain } from "../../src/chain/Chain.ts"
import { Network } from "../../src/chain/Network.ts"
import { signIn } from "../../src/client/signIn.ts"
import { TestServer, TestServerLive } from "../support/TestServer.ts"

const post = (url: string, token: string | undefined, body: unknown) =>
  Effect.promise(() =>
    fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", ...(token === undefined ? {} : { authorization: `Bearer ${token}` }) },
      body: JSON.stringify(body)
    }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }))
  )

layer(TestServerLive(), { timeout: Duration.seconds(120), excludeTestServices: true })("POST /dev/faucet", (it) => {
  it.effect("mints on chain; two at once both land; a refused request changes nothing; needs a session", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const net = yield* Network
      const chain = yield* Chain
      const session = yield* signIn(baseUrl, privateKeyToAccount(generatePrivateKey()))
      const address = session.accounts[0]!.address
      const balance = (token: `0x${string}`) =>
        Effect.promise(() => chain.client.readContract({ address: token, abi: erc20Abi, functionName: "balanceOf", args: [address as `0x${string}`] }))

      const [a, b] = yield* Effect.all([
        post(`${baseUrl}/dev/faucet`, session.token, { address, amount: 100 }),
        post(`${baseUrl}/dev/faucet`, session.token, { address, amount: 2.5 })
      ], { concurrency: 2 })
      assert.deepStrictEqual([a.status, b.status], [200, 200])
      assert.strictEqual(a.body.token, "USDC")
      assert.strictEqual(yield* balance(net.tokens.usd.address), parseUnits("102.5", 6))

      const usdt = yield* post(`${baseUrl}/dev/faucet`, session.token, { address, token: "USDT", amount: 7 })
      assert.strictEqual(usdt.status, 200)
      assert.strictEqual(yield* balance(net.tokens.usdt.address), parseUnits("7", 6))

      const tooMuch = yield* post(`${baseUrl}/dev/faucet`, session.token, { address, amount: 10_001 })
      assert.strictEqual(tooMuch.status, 400)
      assert.include(tooMuch.body.error.message, "amount")
      const tooFine = yield* post(`${baseUrl}/dev/faucet`, session.token, { address, amount: 0.0000001 })
      assert.strictEqual(tooFine.status, 400)
      assert.include(tooFine.body.error.message, "decimals")
      const unknownChain = yield* post(`${baseUrl}/dev/faucet`, session.token, { address, chainId: 999 })
      assert.strictEqual(unknownChain.status, 400)
      const anonymous = yield* post(`${baseUrl}/dev/faucet`, undefined, { address })
      assert.strictEqual(anonymous.status, 401)
      assert.strictEqual(yield* balance(net.tokens.usd.address), parseUnits("102.5", 6), "refused requests minted nothing")
    }), { timeout: 120_000 })

  it.effect("GET /dev/networks describes every served local network (addresses, never a key); needs a session", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const net = yield* Network
      const session = yield* signIn(baseUrl, privateKeyToAccount(generatePrivateKey()))
      const get = (token: string | undefined) =>
        Effect.promise(() =>
          fetch(`${baseUrl}/dev/networks`, { headers: token === undefined ? {} : { authorization: `Bearer ${token}` } })
            .then(async (r) => ({ status: r.status, text: await r.text() }))
        )
      const answer = yield* get(session.token)
      assert.strictEqual(answer.status, 200)
      const list = JSON.parse(answer.text) as Array<any>
      assert.deepStrictEqual(list.map((n) => n.chainId), [31337, 31338])
      const primary = list.find((n) => n.chainId === net.chainId)
      assert.strictEqual(primary.rpcUrl, net.rpcUrl)
      assert.strictEqual(primary.bundlerUrl, net.bundlerUrl)
      assert.strictEqual(primary.delegation.DelegationManager, net.delegation.DelegationManager)
      assert.strictEqual(primary.tokens.usd.address, net.tokens.usd.address)
      // Where agents are named (ERC-8004), on both chains.
      assert.strictEqual(primary.erc8004.identityRegistry, net.erc8004!.identityRegistry)
      assert.isTrue(list.every((n) => /^0x[0-9a-fA-F]{40}$/.test(n.erc8004?.reputationRegistry ?? "")))
      const devKey = net.devKey === undefined ? undefined : Redacted.value(net.devKey)
      assert.isDefined(devKey)
      assert.notInclude(answer.text.toLowerCase(), devKey!.slice(2).toLowerCase(), "the dev key never leaves the service")
      assert.strictEqual((yield* get(undefined)).status, 401)
    }), { timeout: 60_000 })
})
