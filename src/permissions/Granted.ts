/**
 * What this deployment can hold and what a signer has granted, in the standard's shapes:
 * `wallet_getSupportedExecutionPermissions` per served chain (each chain's own enforcers, through
 * the Chains registry), `wallet_getGrantedExecutionPermissions` (the signer's live grants on every
 * chain and account), and the standard response of one enabled grant (its permission context from
 * the stored, signed leg; `dependencies` from the chain). docs/permissions.md.
 */
import { Effect } from "effect"
import type { Address, Hex } from "viem"
import { Accounts } from "../accounts/Accounts.ts"
import type { Account } from "../accounts/Domain.ts"
import type { ServiceUnavailable, UpstreamTimeout, UpstreamUnavailable } from "../api/Errors.ts"
import { ServiceUnavailable as Unavailable } from "../api/Errors.ts"
import { mapUpstream } from "../builds/Wire.ts"
import { type ChainNetwork, Chains } from "../chain/Chains.ts"
import { DelegationRepo, type DelegationRow } from "../delegations/DelegationRepo.ts"
import { standingGrant } from "../delegations/Grant.ts"
import { makeUsage } from "../delegations/Usage.ts"
import { isNative } from "../tokens/Native.ts"
import { visibleStatus } from "../delegations/Policy.ts"
import { TokenRegistry } from "../tokens/TokenRegistry.ts"
import type { MappedRequest } from "./Erc7715.ts"
import { grantedRequest, type MappedResponse, permissionResponse } from "./Response.ts"
import { type SupportedPermissions, supportedPermissions } from "./Supported.ts"

type Upstream = ServiceUnavailable | UpstreamUnavailable | UpstreamTimeout

export const makeGranted = Effect.gen(function*() {
  const chains = yield* Chains
  const accounts = yield* Accounts
  const tokens = yield* TokenRegistry
  const delegationRepo = yield* DelegationRepo
  // A basket's spent and left (USD) beside its standard response: the same reconciliation as the grant's own reads.
  const usage = yield* makeUsage((address: string) => tokens.all.find((t) => t.address.toLowerCase() === address.toLowerCase())?.decimals ?? 18)

  /** Per type, the served chains whose enforcers hold it exactly (computed once: the registry is fixed). */
  const supportedNow: SupportedPermissions = supportedPermissions(
    chains.all.map((c) => ({ chainId: c.chainId, delegation: c.network.delegation }))
  )
  const supported = Effect.sync(() => supportedNow).pipe(Effect.withSpan("Permissions.supported"))

  /** The factory call that deploys `account` while it is counterfactual; `undefined` once it has code. */
  const deploymentOf = (net: ChainNetwork, account: Pick<Account, "address" | "index" | "signerAddress">) =>
    Effect.gen(function*() {
      if (yield* mapUpstream(net.chain.isDeployed(account.address as Address))) return undefined
      const counterfactual = yield* net.accounts.counterfactualAccount(account.signerAddress as Address, BigInt(account.index)).pipe(
        Effect.mapError((e) => new Unavailable({ message: `The account's factory call could not be computed: ${e.message}`, details: { chainId: net.chainId } }))
      )
      return { factory: counterfactual.factory, factoryData: counterfactual.factoryData }
    })

  /**
   * The standard response of an enabled grant: `granted` with the account, the permission context
   * (the signed leg with the caveat args every redemption uses), the DelegationManager and the
   * account's deployment while it has none. `undefined` when a context cannot carry the grant
   * (its redemptions need args per redemption: 2+ tokens or recipients).
   */
  const responseFor = (
    row: DelegationRow,
    granted: MappedRequest,
    account: Pick<Account, "address" | "index" | "signerAddress">
  ): Effect.Effect<MappedResponse | undefined, Upstream> =>
    Effect.gen(function*() {
      const net = yield* chains.serving(row.chain_id)
      const leg = row.legs[0]
      if (leg === undefined || leg.scope === undefined || row.legs.length !== 1) return undefined
      const standing = standingGrant(net.network.delegation, leg.delegation, leg.scope)
      if (standing === undefined) return undefined
      const deployment = yield* deploymentOf(net, account)
      return permissionResponse({ ...granted, from: account.address.toLowerCase() as Hex }, {
        signedGrant: standing,
        delegationManager: net.network.delegation.DelegationManager.toLowerCase() as Hex,
        account: account.address as Hex,
        ...(deployment === undefined ? {} : { deployment })
      })
    })

  /**
   * The signer's grants that can still be redeemed (active or frozen: not revoked, not expired), on
   * every served chain and account, newest first, in the standard's shape. A grant the standard
   * cannot state exactly (several budgets, a smaller per-action maximum or count) is left out: it
   * is never listed as holding less than the chain holds (the service's own reads list it).
   */
  const granted = Effect.fn("Permissions.granted")(function*(signer: { readonly address: string }) {
    const owner = signer.address.toLowerCase()
    const now = new Date()
    // The grants first, in one statement, then only the accounts that hold one: the read follows
    // the grants, not the number of the signer's accounts (issue 46: one statement per account before).
    const liveRows = (yield* delegationRepo.listOwnedBySigner(owner)).filter((row) => {
      if (chains.find(row.chain_id) === undefined) return false
      const status = visibleStatus(row.status, row.policy_set.expiresAt, row.frozen, now)
      return status === "active" || status === "frozen"
    })
    const holders = yield* accounts.listIn(signer.address as Address, [...new Set(liveRows.map((row) => row.account_id))])
    const byId = new Map(holders.filter((a) => chains.find(a.chainId) !== undefined).map((a) => [a.id, a]))
    const live = liveRows
      .flatMap((row) => {
        const account = byId.get(row.account_id)
        return account === undefined ? [] : [{ row, account }]
      })
      .sort((a, b) => b.row.created_at.getTime() - a.row.created_at.getTime() || (a.row.id < b.row.id ? -1 : 1))
    const responses = yield* Effect.forEach(live, ({ row, account }) =>
      Effect.gen(function*() {
        const token = row.policy_set.budgets[0]?.token.address
        const decimals = token === undefined ? 18 : isNative(token) ? 18 : tokens.byAddress(row.chain_id, token)?.decimals ?? row.legs[0]?.token.decimals ?? 18
        const request = grantedRequest(row.policy_set, { delegatee: row.delegatee_address, chainId: row.chain_id, decimals })
        const response = request === undefined ? undefined : yield* responseFor(row, request, account)
        if (response === undefined || row.policy_set.basket === undefined) return response
        const basketToDate = yield* usage.basketToDate(row, now)
        return basketToDate === undefined ? response : { ...response, basketToDate }
      }), { concurrency: 4 })
    return responses.filter((r): r is MappedResponse => r !== undefined)
  })

  return { supported, granted, responseFor }
})

export type Granted = Effect.Success<typeof makeGranted>
