/**
 * Reading delegations: the lanes a signer may see a delegation through (the owner's, the
 * delegatee's), the response shape (`spentToDate` reconciled with the chain: Usage.ts), and
 * the list, detail and policy-snapshot reads. The other parts of the service (Enable.ts,
 * Actions.ts, RevokeFreeze.ts) find rows through these. SQL: DelegationRepo.ts.
 */
import { Effect } from "effect"
import { Accounts } from "../accounts/Accounts.ts"
import type { BadRequest, NotFound as NotFoundError } from "../api/Errors.ts"
import { NotFound } from "../api/Errors.ts"
import type { CurrentSigner } from "../auth/Middleware.ts"
import { Chains } from "../chain/Chains.ts"
import { TokenRegistry } from "../tokens/TokenRegistry.ts"
import { DelegationRepo, type DelegationRow } from "./DelegationRepo.ts"
import type { BasketSpent, Delegation, DelegationStatus, PolicySet, RedemptionRecord } from "./Domain.ts"
import { isNative, nativeToken } from "../tokens/Native.ts"
import { fromUnits, visibleStatus } from "./Policy.ts"
import { RedemptionRepo } from "../follower/RedemptionRepo.ts"
import { makeUsage } from "./Usage.ts"

export type Signer = CurrentSigner["Service"]

export const lower = <S extends string>(s: S) => s.toLowerCase() as S

const noAddress = <T extends { readonly token: { readonly symbol: string; readonly chainId: number } }>(x: T) => ({
  ...x,
  token: { symbol: x.token.symbol, chainId: x.token.chainId }
})
/** Delegation list and detail responses carry token refs without addresses (the contract's TokenRef note). */
const policyForDetail = (p: PolicySet): PolicySet => ({
  ...p,
  budgets: p.budgets.map(noAddress),
  perActionMax: noAddress(p.perActionMax),
  ...(p.approval === undefined ? {} : { approval: { ...p.approval, thresholds: p.approval.thresholds.map(noAddress) } })
})

/** Pending and failed delegations never existed for readers. */
const visible = (id: string) => (row: DelegationRow | undefined) =>
  row === undefined || row.status === "pending" || row.status === "failed"
    ? Effect.fail(new NotFound({ message: `No delegation ${id}` }))
    : Effect.succeed(row)

export const makeReads = Effect.gen(function*() {
  const repo = yield* DelegationRepo
  const accounts = yield* Accounts
  const tokens = yield* TokenRegistry
  const chains = yield* Chains
  const redemptionRepo = yield* RedemptionRepo

  // A token's decimals by address; the same address is taken to be the same token on every chain
  // (the registry lists each chain's tokens; a clash would be a configuration error).
  const decimalsOf = (address: string) => tokens.all.find((t) => t.address === lower(address))?.decimals ?? 18
  const usageOf = yield* makeUsage(decimalsOf)

  const findOwn = (signer: Signer, id: string) => repo.findOwned(id, lower(signer.address)).pipe(Effect.flatMap(visible(id)))

  /**
   * The delegatee's lane (docs/delegations.md): a grant held by one of the signer's accounts. The holder reads
   * it (limits, what remains) and builds its own actions; it cannot revoke it and sees no other grant of the owner.
   */
  const findHeld = (signer: Signer, id: string) => repo.findHeld(id, lower(signer.address)).pipe(Effect.flatMap(visible(id)))

  /** The owner's grant, or one the signer holds; anyone else's is answered as if it did not exist. */
  const findUsable = (signer: Signer, id: string) => repo.findUsable(id, lower(signer.address)).pipe(Effect.flatMap(visible(id)))

  const toDelegation = (row: DelegationRow, spentToDate: Delegation["spentToDate"], now: Date, basketToDate?: BasketSpent): Delegation => {
    const status = visibleStatus(row.status, row.policy_set.expiresAt, row.frozen, now)
    return {
      id: row.id,
      permissionId: row.permission_id,
      name: row.name,
      kind: row.kind,
      icon: row.icon,
      delegateeAddress: row.delegatee_address,
      delegatorAddress: row.delegator_address,
      chain: chains.nameOf(row.chain_id),
      chainId: row.chain_id,
      status: status === "pending" || status === "failed" ? "revoked" : status,
      humanSummary: row.human_summary,
      policySet: policyForDetail(row.policy_set),
      spentToDate,
      ...(basketToDate === undefined ? {} : { basketToDate }),
      ...(row.mandate === null ? {} : { mandate: row.mandate })
    }
  }

  /** Each row with its `spentToDate`, reconciled with the enforcers' state on chain (Usage.ts). */
  const render = (rows: ReadonlyArray<DelegationRow>) => {
    const now = new Date()
    return Effect.all([
      usageOf.spentToDateAll(rows, now),
      Effect.forEach(rows, (r) => usageOf.basketToDate(r, now), { concurrency: 8 })
    ], { concurrency: 2 }).pipe(
      Effect.map(([spent, baskets]) => rows.map((r, i) => toDelegation(r, spent[i]!, now, baskets[i]))),
      Effect.orDie
    )
  }

  /**
   * The grants of the signer's accounts: the one `accountId` names, else the lowest visible
   * index on every served chain (or on `chainId`), newest first.
   */
  const list: (
    signer: Signer,
    query: {
      readonly status?: DelegationStatus
      readonly accountId?: string
      readonly chainId?: number
      readonly role?: "owner" | "delegatee"
    }
  ) => Effect.Effect<ReadonlyArray<Delegation>, NotFoundError | BadRequest> = Effect.fn("Delegations.list")(function*(signer, query) {
    const scoped = yield* accounts.resolveAll(signer.address, { accountId: query.accountId, chainId: query.chainId })
    const rows = query.role === "delegatee"
      ? (yield* Effect.forEach(scoped, (account) =>
        // Grants the account holds (any owner's) on its chain, and those held by the signer's own key
        // (an EOA delegate), never the holder's own grants to others.
        repo.listHeld([lower(account.address), lower(signer.address)], account.chainId))).flat()
      : yield* repo.listOwnedIn(scoped.map((a) => a.id), lower(signer.address))
    const sorted = [...rows].sort((a, b) => b.created_at.getTime() - a.created_at.getTime() || (a.id < b.id ? -1 : 1))
    const all = yield* render(sorted)
    return query.status === undefined ? all : all.filter((d) => d.status === query.status)
  })

  const get = Effect.fn("Delegations.get")(function*(signer: Signer, id: string) {
    const row = yield* findUsable(signer, id)
    return (yield* render([row]))[0]!
  })

  const snapshots = Effect.fn("Delegations.snapshots")(function*(signer: Signer, id: string) {
    yield* findOwn(signer, id)
    const rows = yield* repo.listSnapshots(id)
    return rows.map((r) => ({
      id: r.id,
      delegationId: r.delegation_id,
      permissionId: r.permission_id,
      policySet: r.policy_set,
      humanSummary: r.human_summary,
      capturedAt: r.captured_at.toISOString(),
      enableTxHash: r.enable_tx_hash
    }))
  })

  /** A grant's redemptions as the chain showed them (the follower's record), for its owner or its holder. */
  const redemptions = Effect.fn("Delegations.redemptions")(function*(signer: Signer, id: string) {
    yield* findUsable(signer, id)
    const rows = yield* redemptionRepo.listByDelegation(id)
    return rows.map((r): RedemptionRecord => ({
      ...(r.delegation_id === null ? {} : { delegationId: r.delegation_id }),
      permissionId: r.root_hash,
      txHash: r.tx_hash,
      blockNumber: r.block_number,
      redeemer: r.redeemer,
      via: r.via,
      chain: r.chain.map((l) => ({ permissionId: l.hash, delegator: l.delegator, delegate: l.delegate })),
      moved: r.moved.map((m) => {
        const token = isNative(m.token) ? nativeToken(r.chain_id) : tokens.byAddress(r.chain_id, m.token)
        return {
          token: m.token,
          ...(token === undefined ? {} : { symbol: token.symbol, amount: fromUnits(BigInt(m.units), token.decimals) }),
          units: m.units,
          recipient: m.to
        }
      }),
      ...(r.owner_entry_id === null ? {} : { ownerEntryId: r.owner_entry_id }),
      ...(r.delegate_entry_id === null ? {} : { delegateEntryId: r.delegate_entry_id })
    }))
  })

  return { decimalsOf, usageOf, findOwn, findHeld, findUsable, render, list, get, snapshots, redemptions }
})

export type Reads = Effect.Success<typeof makeReads>
