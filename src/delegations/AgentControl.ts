/**
 * Who the agent is, for an approval rule (issue 41, docs/approvals.md "No approver the agent
 * controls"): every address through which a grant's delegate could approve its own actions.
 * Read from the chain where the delegate is a smart account (its `owner()`, a multisig's
 * `getSigners()`) and from this service's own records (a delegate that is an account here: its
 * signer and every account of that signer; a signer's managed wallet), plus the grant's named
 * redeemers (each redeems on the same budget). An approver is the agent's when it is one of these
 * addresses or an account whose `owner()` is one. Checked when a rule is built or changed
 * (Enable.ts) and when an approval is given (src/approvals); the ApprovalEnforcer refuses on
 * chain an approval by the redeemer, its owner, or an account of that owner, whatever the service did.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { Address } from "viem"
import { ServiceUnavailable } from "../api/Errors.ts"
import { type ChainReader, ownerOfAccount, signersOfAccount } from "../chain/Approvals.ts"
import { Chains } from "../chain/Chains.ts"

/** One address the agent controls, and why (for the refusal's message). */
export interface Controlled {
  readonly address: string
  readonly why: string
}

export interface AgentParties {
  readonly chainId: number
  readonly delegate: string
  /** The grant's named redeemers (RedeemerEnforcer): each redeems on the grant's budget too. */
  readonly redeemers?: ReadonlyArray<string>
}

const lower = (s: string) => s.toLowerCase()

export const makeAgentControl = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const chains = yield* Chains

  /** Accounts of this service at or signed by `addresses`, and managed wallets of or for them. */
  const kin = (addresses: ReadonlyArray<string>) =>
    Effect.all([
      sql<{ signer: string; address: string }>`
        SELECT DISTINCT signer_address AS signer, address FROM accounts
        WHERE signer_address IN ${sql.in(addresses as Array<string>)}
           OR signer_address IN (SELECT signer_address FROM accounts WHERE address IN ${sql.in(addresses as Array<string>)})`,
      sql<{ signer: string; address: string }>`
        SELECT signer_address AS signer, wallet_address AS address FROM managed_wallets
        WHERE signer_address IN ${sql.in(addresses as Array<string>)} OR wallet_address IN ${sql.in(addresses as Array<string>)}`
    ]).pipe(Effect.orDie)

  const readerOf = (chainId: number) =>
    Effect.map(chains.serving(chainId), (net) => ({ net, reader: net.chain as ChainReader }))

  const down = (chainId: number) => (e: { readonly message: string }) =>
    new ServiceUnavailable({ message: `Chain ${chainId} cannot be read to tell who controls the delegate: ${e.message}`, details: { chainId } })

  /** Every address the delegate controls (the delegate first). */
  const controlledBy = Effect.fn("AgentControl.controlledBy")(function*(parties: AgentParties) {
    const found = new Map<string, string>()
    const add = (address: string, why: string) => {
      const a = lower(address)
      if (!found.has(a)) found.set(a, why)
    }
    add(parties.delegate, "the delegate itself")
    for (const r of parties.redeemers ?? []) add(r, "a named redeemer of the grant (it redeems on the same budget)")
    const { reader } = yield* readerOf(parties.chainId)
    // On chain: the signers of each party that is a smart account (owner key, multisig signers).
    for (const party of [...found.keys()]) {
      const signers = yield* signersOfAccount(reader, party as Address).pipe(Effect.mapError(down(parties.chainId)))
      for (const s of signers) add(s, `a signer of ${party} on chain`)
    }
    // This service's records: the signer behind an account here, every account of that signer, its managed wallet.
    const rows = yield* kin([...found.keys()])
    for (const row of rows.flat()) {
      add(row.signer, "the agent's signer (the key it signs in with here)")
      add(row.address, `an account of the agent's signer ${row.signer}`)
    }
    return [...found.entries()].map(([address, why]) => ({ address, why }) satisfies Controlled)
  })

  /**
   * Which of `approvers` the agent controls: one of its addresses, or an account whose `owner()`
   * is one (another smart account of the agent's key), each with why.
   */
  const controlledApprovers = Effect.fn("AgentControl.controlledApprovers")(function*(
    parties: AgentParties,
    approvers: ReadonlyArray<string>
  ) {
    const controlled = yield* controlledBy(parties)
    const whyOf = new Map(controlled.map((c) => [c.address, c.why]))
    const { reader } = yield* readerOf(parties.chainId)
    const out: Array<{ readonly index: number; readonly address: string; readonly why: string }> = []
    for (const [index, approver] of approvers.entries()) {
      const a = lower(approver)
      const direct = whyOf.get(a)
      if (direct !== undefined) {
        out.push({ index, address: a, why: direct })
        continue
      }
      const owner = yield* ownerOfAccount(reader, a as Address).pipe(Effect.mapError(down(parties.chainId)))
      const via = owner === undefined ? undefined : whyOf.get(lower(owner))
      if (via !== undefined) out.push({ index, address: a, why: `an account owned by ${lower(owner!)} (${via})` })
    }
    return out
  })

  return { controlledBy, controlledApprovers }
})

export type AgentControl = Effect.Success<typeof makeAgentControl>
