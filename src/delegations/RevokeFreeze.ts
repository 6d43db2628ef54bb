/**
 * Revoke and freeze plans: the revoke build (from the chain's state of each leg:
 * FreezeState.ts), `retire` (an executed revoke disables legs and, once every leg is
 * disabled, revokes the delegation: the relay's on-executed hook, registered by
 * Actions.ts), and the account freeze plan (which legs the freeze disables and the
 * unfreeze re-enables). Rules: docs/delegations.md, docs/relay.md ("Freeze"). SQL: DelegationRepo.ts.
 */
import { requesterWords } from "../domain/OutsideText.ts"
import { Effect } from "effect"
import type { Hex } from "viem"
import { Accounts } from "../accounts/Accounts.ts"
import { AccountRules } from "../owner/Rules.ts"
import { BadRequest } from "../api/Errors.ts"
import { OperationBuilder } from "../builds/OperationBuilder.ts"
import { Chains } from "../chain/Chains.ts"
import { disabledPermissionIds } from "./Caveats.ts"
import { DelegationRepo } from "./DelegationRepo.ts"
import { freezeCalls, legStates, revokeCallDataOf } from "./FreezeState.ts"
import { lower, type Reads, type Signer } from "./Reads.ts"

export const makeRevokeFreeze = (reads: Reads) => Effect.gen(function*() {
  const repo = yield* DelegationRepo
  const accounts = yield* Accounts
  const builder = yield* OperationBuilder
  const chains = yield* Chains
  const rules = yield* AccountRules
  const { findOwn } = reads

  const revoke = Effect.fn("Delegations.revoke")(function*(signer: Signer, id: string) {
    const row = yield* findOwn(signer, id)
    if (row.status === "revoked") return yield* new BadRequest({ message: "This delegation is already revoked" })
    const account = yield* accounts.findById(signer.address, row.account_id)
    const { chain, accounts: stack, network } = yield* chains.serving(row.chain_id)
    const dm = network.delegation.DelegationManager
    const built = yield* builder.build({
      account,
      intentType: "delegation_revoke",
      // From the chain's state of each leg (frozen or not, settled or not): never AlreadyEnabled / AlreadyDisabled.
      callData: revokeCallDataOf(stack, dm, yield* legStates(chain, dm, row.legs)),
      humanSummary: `Revoke delegation ${row.permission_id} for good: the delegate ${row.delegatee_address} can no longer act for this account.` +
        requesterWords("Named by the requester", row.name),
      // Free only while it takes a power away now: an expired grant redeems nothing (the chain's
      // TimestampEnforcer), so its revoke is an ordinary operation, counted and quota-bound (issue 41).
      riskReducing: Date.parse(row.policy_set.expiresAt) > Date.now(),
      metadata: { delegationId: id }
    })
    return built.build
  })

  /**
   * An executed revoke: the permission ids come from the operation's own call data; only
   * legs whose delegator is the operation's sender can have been disabled by it. A
   * delegation is revoked once every leg is disabled.
   */
  const retire = (chainId: number, callData: Hex, sender: string, txHash: string) =>
    Effect.gen(function*() {
      const net = chains.find(chainId)
      if (net === undefined) return
      const ids = disabledPermissionIds(net.accounts, net.network.delegation.DelegationManager, callData).map(lower)
      if (ids.length === 0) return
      const legs = yield* repo.disableLegs(ids, lower(sender), txHash)
      const touched = [...new Set(legs)]
      if (touched.length === 0) return
      const revoked = yield* repo.revokeFullyDisabled(touched, txHash)
      if (revoked.length > 0) {
        yield* repo.releaseForDelegations(revoked)
      }
    })

  /**
   * Account freeze on chain: the freeze operation disables every live leg of the account's
   * active delegations, the unfreeze re-enables the same set (revoked ones are not active,
   * so they stay disabled). The delegations keep their status; they read `frozen`.
   */
  const registerFreezePlan = rules.registerFreezePlan("delegations", (account) =>
    Effect.gen(function*() {
      // Every leg that can be live on chain: active delegations, and pending ones (an enable
      // mined but not yet settled is live); revoked legs are left alone. Which of them to
      // disable (freeze) or re-enable (unfreeze) is read from the chain now (FreezeState.ts).
      const rows = yield* repo.legsOfLiveDelegations(account.id)
      const live = yield* repo.enabledLegIds(account.id)
      const liveIds = new Set(live.map(lower))
      const legs = rows.flat().filter((l) => liveIds.has(lower(l.permissionId)))
      const { chain, network } = yield* chains.serving(account.chainId)
      const dm = network.delegation.DelegationManager
      const states = yield* legStates(chain, dm, legs)
      const calls = freezeCalls(dm, states)
      return {
        ...calls,
        description: legs.length === 0 ? "" : `${rows.length} live delegation(s) (${legs.length} on-chain permission(s))`
      }
    }))

  return { revoke, retire, registerFreezePlan }
})

export type RevokeFreeze = Effect.Success<ReturnType<typeof makeRevokeFreeze>>
