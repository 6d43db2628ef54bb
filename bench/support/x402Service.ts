/**
 * An x402 world through the service, for the bench and the demo: a local network, the service as
 * its own process on an embedded PostgreSQL (follower on), a facilitator and a resource server
 * on loopback (the x402 packages), an owner (1,000 USDC) whose grant through the service names an
 * EOA agent (500 USDC, 5 per action, the facilitator a named redeemer), and the agent's session.
 */
import { Effect, Exit, Redacted, Scope } from "effect"
import type { Address, Hex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { make as startLocalNetwork, toJson } from "../../src/chain/LocalNetwork.ts"
import { makeClient } from "../../src/client/Client.ts"
import { signIn } from "../../src/client/signIn.ts"
import { startFacilitator } from "../../src/payments/x402/world/FacilitatorService.ts"
import { localParties } from "../../src/payments/x402/world/LocalParties.ts"
import { startResourceServer } from "../../src/payments/x402/world/ResourceServer.ts"
import { freePort, serviceEnv, startPostgres, startProcess } from "./processes.ts"

export const startServiceWorld = async () => {
  const scope = Effect.runSync(Scope.make())
  const network = await Effect.runPromise(startLocalNetwork().pipe(Scope.provide(scope)))
  const keys = { ...network, deployer: privateKeyToAccount(Redacted.value(network.deployerKey)).address }
  const parties = localParties(keys)
  const usdc = network.tokens.usd
  const pg = await startPostgres()
  const port = await freePort()
  const baseUrl = `http://127.0.0.1:${port}`
  const service = await startProcess(
    "src/main.ts",
    serviceEnv({ databaseUrl: pg.url, port, networks: toJson(network) }, { LOG_LEVEL: "Warn", FOLLOWER_INTERVAL: "300 millis" }),
    `${baseUrl}/health/ready`
  )

  const facilitator = await startFacilitator({ network: keys, key: await parties.fundedKey(), pollingIntervalMs: 20 })
  const merchant = privateKeyToAccount(generatePrivateKey()).address
  const resource = await startResourceServer({
    facilitatorUrl: facilitator.url,
    chainId: network.chainId,
    asset: { address: usdc.address, decimals: usdc.decimals, symbol: usdc.symbol },
    payTo: merchant,
    price: 10_000n,
    meteredMax: 1_000_000n,
    unitPrice: 50_000n
  })

  // The owner's grant to the agent's key, through the service; the facilitator named as a redeemer.
  const ownerKey = generatePrivateKey()
  const agent = privateKeyToAccount(generatePrivateKey())
  const { grantId, payer, agentToken } = await Effect.runPromise(Effect.gen(function*() {
    const owner = privateKeyToAccount(ownerKey)
    const session = yield* signIn(baseUrl, owner)
    const api = yield* makeClient({ baseUrl, token: session.token })
    const account = session.accounts[0]!
    yield* Effect.promise(() => parties.mint("usd", account.address as Address, 1_000))
    const build = yield* api.delegations.build({
      payload: {
        name: "bench agent",
        kind: "agent",
        delegateeAddress: agent.address,
        chainId: network.chainId,
        budgets: [{ token: { symbol: "USDC" }, amount: 500 }],
        perActionMax: { token: { symbol: "USDC" }, amount: 5 },
        maxActions: 1_000,
        redeemers: { mode: "named", addresses: [facilitator.address] }
      }
    })
    const leg = build.delegations[0]!
    const sign = (typedData: unknown) => Effect.promise(() => owner.signTypedData(typedData as never))
    const legSignature = yield* sign({ ...leg.typedData, message: { ...leg.typedData.message, salt: BigInt(leg.typedData.message.salt) } })
    const created = yield* api.delegations.create({
      payload: {
        userOp: { ...build.enableUserOp, signature: (yield* sign(build.typedData)) as Hex },
        userOpHash: build.userOpHash,
        intentType: "delegation_enable",
        delegationSignatures: [{ permissionId: leg.permissionId, signature: legSignature }]
      }
    })
    if (created.status !== "active") throw new Error(`the grant is ${created.status}`)
    const agentSession = yield* signIn(baseUrl, agent)
    return { grantId: created.id, payer: account.address as Address, agentToken: agentSession.token }
  }))

  return {
    network,
    usdc,
    baseUrl,
    facilitator,
    resource,
    merchant,
    agent,
    agentToken,
    grantId,
    payer,
    ownerKey,
    close: async () => {
      await resource.close()
      await facilitator.close()
      await service.stop()
      await pg.stop()
      await Effect.runPromise(Scope.close(scope, Exit.void))
    }
  }
}
