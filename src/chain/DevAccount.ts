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
 */
import { createPublicClient, type Address, type Hash, type Hex, http, type TransactionReceipt } from "viem"

/** What the node says when it refused to create the transaction because its nonce was taken. */
const NONCE_TAKEN = /replacement transaction underpriced|nonce too low|already known|nonce.*(taken|used)/i

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
    ...(tx.value === undefined ? {} : { value: `0x${tx.value.toString(16)}` })
  }
  for (let attempt = 1; ; attempt++) {
    let hash: Hash
    try {
      hash = await client.request({ method: "eth_sendTransaction", params: [params] } as never) as Hash
    } catch (e) {
      if (attempt >= 12 || !NONCE_TAKEN.test(String(e))) throw e
      await new Promise((r) => setTimeout(r, 20 + Math.random() * 30 * attempt))
      continue
    }
    return client.waitForTransactionReceipt({ hash, pollingInterval: options.pollingIntervalMs ?? 50 })
  }
}
