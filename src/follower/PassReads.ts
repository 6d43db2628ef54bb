/**
 * The chain reads of one follower pass, each made once and kept for the pass.
 *
 * A pass reads the chain first, with no transaction open (Follower.ts, "plan"), and then writes
 * what it read in one transaction that locks operations' rows and audit heads. The transaction
 * asks for the same reads again (the same functions run in both phases) and finds them here: a
 * node that hangs (viem's 10 s timeout, retried twice) holds no row and no head. A read the plan
 * did not make (a delegation or account that became known between the two phases) is made in
 * the transaction, as before; `late` counts them.
 */
import type { Hash, PublicClient, Transaction, TransactionReceipt } from "viem"

export interface PassReads {
  /** `read` once per key for the pass; a failed read is not kept (the next ask reads again). */
  memo<A>(key: string, read: () => Promise<A>): Promise<A>
  receipt(hash: Hash): Promise<TransactionReceipt>
  transaction(hash: Hash): Promise<Transaction>
  /** From now on every read not already kept counts as late (the transaction has begun). */
  seal(): void
  /** Reads made after `seal`. */
  late(): number
}

export const makePassReads = (client: PublicClient): PassReads => {
  const kept = new Map<string, Promise<unknown>>()
  let sealed = false
  let late = 0
  const memo = <A>(key: string, read: () => Promise<A>): Promise<A> => {
    const found = kept.get(key)
    if (found !== undefined) return found as Promise<A>
    if (sealed) late++
    const p = read()
    kept.set(key, p)
    p.catch(() => kept.delete(key))
    return p
  }
  return {
    memo,
    receipt: (hash) => memo(`receipt:${hash.toLowerCase()}`, () => client.getTransactionReceipt({ hash })),
    transaction: (hash) => memo(`tx:${hash.toLowerCase()}`, () => client.getTransaction({ hash })),
    seal: () => void (sealed = true),
    late: () => late
  }
}
