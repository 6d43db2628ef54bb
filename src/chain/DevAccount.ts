/**
 * Transactions from one of anvil's unlocked dev accounts (a local network's deployer, the
 * tokens' minter), which the faucet, the x402 local parties and every test file share on one
 * chain.
 *
 * Each is a raw `eth_sendTransaction` without a nonce, so the node assigns it. Even so, anvil
 * gives senders at once the same nonce and refuses all but one ("nonce too low", "replacement
 * transaction underpriced"): ten at once from one account, about half are refused. A transaction
 * it refused was never created, so it is sent again after a short random wait. Waits for its
 * receipt (whatever its status: the caller decides what a revert means).
 *
 * Every send names the same fees. Left to the node, each send got fees from the base fee of the
 * moment, so a send given the same nonce with higher fees could replace a pending one, whose hash
 * is then never mined: most likely why twelve at once once waited for a receipt until the test
 * timed out (27 Nov; not proven, the run kept no log of it). With equal fees the node refuses
 * the second one instead (sent again, as above). And a transaction the node no longer knows
 * (replaced, dropped) is sent again rather than waited for: it can never be mined.
 */
import { createPublicClient, type Address, type Hash, type Hex, http, type TransactionReceipt } from "viem"

/** What the node says when it refused to create the transaction because its nonce was taken. */
const NONCE_TAKEN = /replacement transaction underpriced|nonce too low|already known|nonce.*(taken|used)/i

/** The fees of every dev-account send (a local chain's base fee stays far below). */
const MAX_FEE_PER_GAS = 100_000_000_000n
const MAX_PRIORITY_FEE_PER_GAS = 1_000_000_000n

export const sendFromDevAccount = async (
  rpcUrl: string,
  tx: { readonly from: Address; readonly to?: Address; readonly data?: Hex; readonly value?: bigint },
  options: { readonly pollingIntervalMs?: number } = {}
): Promise<TransactionReceipt> => {
  const client = createPublicClient({ transport: http(rpcUrl, { retryCount: 0 }) })
  const params = {
    from: tx.from,
    ...(tx.to === undefined ? {} : { to: tx.to }),
    ...(tx.data === undefined ? {} : { data: tx.data }),
    ...(tx.value === undefined ? {} : { value: `0x${tx.value.toString(16)}` }),
    maxFeePerGas: `0x${MAX_FEE_PER_GAS.toString(16)}`,
    maxPriorityFeePerGas: `0x${MAX_PRIORITY_FEE_PER_GAS.toString(16)}`
  }
  const pollingInterval = options.pollingIntervalMs ?? 50
  for (let attempt = 1; ; attempt++) {
    let hash: Hash
    try {
      hash = await client.request({ method: "eth_sendTransaction", params: [params] } as never) as Hash
    } catch (e) {
      if (attempt >= 12 || !NONCE_TAKEN.test(String(e))) throw e
      await new Promise((r) => setTimeout(r, 20 + Math.random() * 30 * attempt))
      continue
    }
    const receipt = await receiptUnlessGone(client, hash, pollingInterval)
    if (receipt !== undefined) return receipt
    if (attempt >= 12) throw new Error(`dev account transaction ${hash} was dropped by the node, 12 times`)
  }
}

/** The transaction's receipt, or undefined once the node no longer knows the transaction (checked every second). */
const receiptUnlessGone = async (client: ReturnType<typeof createPublicClient>, hash: Hash, pollingInterval: number) => {
  for (let polls = 1; ; polls++) {
    const receipt = await client.getTransactionReceipt({ hash }).catch(() => undefined)
    if (receipt !== undefined) return receipt
    if (polls % Math.max(1, Math.round(1000 / pollingInterval)) === 0) {
      const known = await client.getTransaction({ hash }).then(() => true, (e) => !/not (be )?found/i.test(String(e)))
      if (!known) return undefined
    }
    await new Promise((r) => setTimeout(r, pollingInterval))
  }
}
