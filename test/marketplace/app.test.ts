/**
 * The marketplace as the service runs it: the real app over its database, the
 * upstream a loopback server. The managed wallet survives in PostgreSQL and a
 * signer's jobs include those of its smart accounts.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { signIn } from "../../src/client/signIn.ts"
import { client, TestServer, TestServerLive } from "../support/TestServer.ts"
import { approve, fakeUpstream, wallet } from "./FakeUpstream.ts"

const jobOf = (id: number, client: string) => ({
  id: 900 + id,
  onChainJobId: id,
  chainId: 8453,
  phase: 0,
  description: "Summarise the filings",
  offeringName: "summary",
  providerName: "Agent 1",
  clientAddress: client,
  providerAddress: wallet(1),
  evaluatorAddress: wallet(0xe7a1),
  price: "12.5",
  createdAt: `2026-03-0${id}T00:00:00Z`,
  memos: []
})

describe("marketplace in the app", () => {
  it.live("managed connect is stored in PostgreSQL; jobs of the signer's smart accounts are the signer's", () =>
    Effect.gen(function*() {
      const fake = yield* fakeUpstream
      yield* Effect.gen(function*() {
        const { baseUrl } = yield* TestServer
        const session = yield* signIn(baseUrl, privateKeyToAccount(generatePrivateKey()))
        const api = yield* client(session.token)

        const start = yield* api.marketplace.managedConnect()
        assert.isFalse(start.alreadyConnected)
        approve(fake.state, start.requestId, wallet(0x3a3a))
        const status = yield* api.marketplace.managedConnectStatus({ query: { requestId: start.requestId } })
        assert.isTrue(status.connected)
        const sql = yield* SqlClient.SqlClient
        const rows = yield* sql<{ wallet_address: string }>`
          SELECT wallet_address FROM managed_wallets WHERE signer_address = ${session.signerAddress}`
        assert.deepStrictEqual(rows.map((r) => r.wallet_address), [wallet(0x3a3a)])
        const again = yield* api.marketplace.managedConnect()
        assert.isTrue(again.alreadyConnected)

        const account = session.accounts[0]!.address
        fake.state.jobs.push(jobOf(1, account), jobOf(2, wallet(0xbeef)))
        const jobs = yield* api.marketplace.listJobs()
        assert.deepStrictEqual(jobs.map((j) => j.jobId), ["1"])
      }).pipe(Effect.provide(Layer.fresh(TestServerLive({ config: { MARKETPLACE_API_URL: fake.url } }))))
    }))
})
