/**
 * The owner's wallet and a dApp talking to the permissions endpoints: the dApp (or the wallet
 * proxying it) as MetaMask's kit does (`erc7715ProviderActions` over a viem `http` transport to
 * `POST /wallet`), the owner signing what an approval asks (the enable operation and the
 * delegation, or the revoke operation) with its real key.
 */
import { erc7715ProviderActions } from "@metamask/smart-accounts-kit/actions"
import { Duration, Effect } from "effect"
import { createClient, http } from "viem"
import { privateKeyToAccount } from "viem/accounts"
import { signIn } from "../../src/client/signIn.ts"
import { Chains } from "../../src/chain/Chains.ts"
import type { ApprovalSignatures, PermissionApproval } from "../../src/permissions/Domain.ts"
import { type Session, signLeg, signOp } from "../delegations/helpers.ts"
import { TestServer } from "../support/TestServer.ts"

/** The signatures an approval asks of its owner, one entry per grant (or the one revoke). */
export const signApproval = (owner: Session, approval: PermissionApproval): Effect.Effect<ApprovalSignatures["signatures"], never, Chains> =>
  Effect.gen(function*() {
    if (approval.revoke !== undefined) {
      return [{ userOp: yield* signOp(owner.key, approval.revoke.build.userOp), userOpHash: approval.revoke.build.userOpHash }]
    }
    return yield* Effect.forEach(approval.grants ?? [], (g) =>
      Effect.gen(function*() {
        const delegationSignatures = yield* Effect.forEach(g.build.delegations, (leg) =>
          Effect.map(signLeg(owner.key, leg.typedData), (signature) => ({ permissionId: leg.permissionId, signature })))
        return { userOp: yield* signOp(owner.key, g.build.enableUserOp), userOpHash: g.build.userOpHash, delegationSignatures }
      }))
  }).pipe(Effect.orDie)

/** The owner's next pending approval, as its wallet would find it (polling). */
export const nextPending = (owner: Session) =>
  Effect.gen(function*() {
    for (let i = 0; i < 200; i++) {
      const [first] = yield* owner.api.permissions.approvals({ query: { status: "pending" } })
      if (first !== undefined) return first
      yield* Effect.sleep(Duration.millis(100))
    }
    return yield* Effect.die(new Error("no approval appeared"))
  })

/** The owner's wallet approving the next pending approval with its signatures. */
export const approveNext = (owner: Session) =>
  Effect.gen(function*() {
    const pending = yield* nextPending(owner)
    return yield* owner.api.permissions.approve({ params: { approvalId: pending.id }, payload: { signatures: yield* signApproval(owner, pending) } })
  })

/** A kit client whose requests go to `POST /wallet` on the owner's session (what a wallet proxying its dApp sends). */
export const kitOverWallet = (owner: Session) =>
  Effect.gen(function*() {
    const { baseUrl } = yield* TestServer
    const { token } = yield* signIn(baseUrl, privateKeyToAccount(owner.key))
    return createClient({
      transport: http(`${baseUrl}/wallet`, {
        fetchOptions: { headers: { authorization: `Bearer ${token}` } },
        retryCount: 0,
        // A request waits for the owner's approval.
        timeout: 90_000
      })
    }).extend(erc7715ProviderActions())
  })
