/**
 * JSON-RPC on the real path (issue 24). The wait: the kit's own client over `POST /wallet`
 * (`erc7715ProviderActions`, a viem http transport) asks for a permission, or a revoke, and the
 * owner does not answer within `PERMISSIONS_APPROVAL_WAIT`: the call answers -32002 ("resource
 * unavailable", EIP-1474) naming the approval, which stays open; nothing is granted or revoked on
 * chain until the owner signs. Answered later, the grant is listed (and redeemable: the chain
 * moves the tokens), and the revoke holds on chain. The revocation types: revocationGrant.test.ts.
 */
import { assert, layer } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { type Address, type Hex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { Network } from "../../src/chain/Network.ts"
import { newSession } from "../delegations/helpers.ts"
import { mint } from "../support/TestChain.ts"
import { TestServerLive } from "../support/TestServer.ts"
import { accepted, eoaAgent, erc20Transfer, refusedOnChain, tokenBalance } from "./agent.ts"
import { kitOverWallet, nextPending, signApproval } from "./wallet.ts"

const USD = (n: number) => BigInt(Math.round(n * 1_000_000))
const WAIT_MS = 2_000

/** The JSON-RPC error a viem call failed with: its code, and its data (`approvalId`, `status`). */
const rpcErrorOf = (e: unknown) => {
  let cause = e as { code?: number; data?: unknown; message?: string; details?: string; cause?: unknown } | undefined
  const seen: Array<{ code?: number; data?: unknown; message?: string; details?: string }> = []
  while (cause !== undefined && cause !== null) {
    seen.push(cause)
    cause = cause.cause as typeof cause
  }
  const coded = seen.find((c) => c.code === -32002) ?? seen.find((c) => typeof c.code === "number")
  const data = seen.map((c) => c.data).find((d) => typeof d === "object" && d !== null) as { approvalId?: string; status?: string } | undefined
  return { code: coded?.code, data, text: seen.map((c) => `${c.message ?? ""} ${c.details ?? ""}`).join(" | ") }
}

layer(TestServerLive({ config: { PERMISSIONS_APPROVAL_WAIT: `${WAIT_MS} millis` } }), { timeout: Duration.seconds(120), excludeTestServices: true })(
  "JSON-RPC on the real path",
  (it) => {
    it.effect("a request and a revoke not answered within the wait answer -32002 naming the open approval; answered later, they hold on chain", () =>
      Effect.gen(function*() {
        const net = yield* Network
        const usdc = net.tokens.usd.address
        const owner = yield* newSession()
        const kit = yield* kitOverWallet(owner)
        const agent = yield* eoaAgent(generatePrivateKey())
        const alice = privateKeyToAccount(generatePrivateKey()).address.toLowerCase() as Address
        yield* mint("usd", owner.account.address as Hex, 10)

        const started = Date.now()
        const timedOut = yield* Effect.flip(Effect.tryPromise(() =>
          kit.requestExecutionPermissions([{
            chainId: net.chainId,
            to: agent.address,
            expiry: Math.floor(Date.now() / 1000) + 86_400,
            permission: { type: "erc20-token-allowance", isAdjustmentAllowed: false, data: { tokenAddress: usdc, allowanceAmount: USD(4) } }
          }])
        ))
        assert.isAtLeast(Date.now() - started, WAIT_MS - 100, "it waited for the owner")
        const error = rpcErrorOf(timedOut)
        assert.strictEqual(error.code, -32002, error.text)
        assert.include(error.text, "The owner has not answered yet")
        // The approval it names is still open, and nothing is granted.
        const pending = yield* nextPending(owner)
        assert.strictEqual(error.data?.approvalId, pending.id, error.text)
        assert.strictEqual(error.data?.status, "pending")
        assert.lengthOf(yield* Effect.promise(() => kit.getGrantedExecutionPermissions()), 0)

        // The owner answers later: granted, listed through the kit, and the chain honours it.
        const approved = yield* owner.api.permissions.approve({ params: { approvalId: pending.id }, payload: { signatures: yield* signApproval(owner, pending) } })
        assert.strictEqual(approved.status, "granted")
        const listed = yield* Effect.promise(() => kit.getGrantedExecutionPermissions())
        assert.deepStrictEqual(listed.map((g) => g.context), [approved.permissions![0]!.context])
        const context = listed[0]!.context as Hex
        accepted(yield* Effect.promise(() => agent.redeem({ to: usdc, data: erc20Transfer(alice, USD(1)) }, context)))
        assert.strictEqual(yield* tokenBalance(usdc, alice), USD(1))

        // A revoke not answered in time: -32002 too, and the grant still redeems until the owner signs it.
        const revokeTimedOut = yield* Effect.flip(Effect.tryPromise(() =>
          kit.request({ method: "wallet_revokeExecutionPermission" as never, params: { permissionContext: context } as never })
        ))
        const revokeError = rpcErrorOf(revokeTimedOut)
        assert.strictEqual(revokeError.code, -32002, revokeError.text)
        const revoke = yield* nextPending(owner)
        assert.strictEqual(revoke.kind, "revoke")
        assert.strictEqual(revokeError.data?.approvalId, revoke.id)
        accepted(yield* Effect.promise(() => agent.redeem({ to: usdc, data: erc20Transfer(alice, USD(1)) }, context)))
        const revoked = yield* owner.api.permissions.approve({ params: { approvalId: revoke.id }, payload: { signatures: yield* signApproval(owner, revoke) } })
        assert.strictEqual(revoked.status, "revoked")
        const balances = Effect.all([tokenBalance(usdc, alice), tokenBalance(usdc, owner.account.address)])
        const before = yield* balances
        refusedOnChain(yield* Effect.promise(() => agent.redeem({ to: usdc, data: erc20Transfer(alice, USD(1)) }, context)),
          "CannotUseADisabledDelegation", before, yield* balances)
        assert.lengthOf(yield* Effect.promise(() => kit.getGrantedExecutionPermissions()), 0)
      }))
  }
)
