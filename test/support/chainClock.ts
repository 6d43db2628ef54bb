/**
 * The run's shared chains keep a fresh head, as a real chain does: anvil mines only on demand, so
 * on a quiet moment of the run its latest block can be seconds old, and whatever is simulated at
 * "latest" (the bundler's simulation, a hook's eth_call) reads that old time — a grant starting
 * "now" then reads as not started (`transfer-not-started`, seen in a quiet fresh-clone run). An
 * empty block is mined when the head is two seconds old or more; checked every half second.
 */
import { createPublicClient, http } from "viem"

export const keepHeadsFresh = (rpcUrls: ReadonlyArray<string>): (() => void) => {
  const clients = rpcUrls.map((url) => createPublicClient({ transport: http(url) }))
  let busy = false
  const timer = setInterval(() => {
    if (busy) return
    busy = true
    Promise.all(clients.map(async (client) => {
      const head = await client.getBlock({ blockTag: "latest" })
      if (Date.now() / 1000 - Number(head.timestamp) >= 2) await client.request({ method: "evm_mine" as never, params: [] as never })
    })).catch(() => {}).finally(() => {
      busy = false
    })
  }, 500)
  timer.unref()
  return () => clearInterval(timer)
}
