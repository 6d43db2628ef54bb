/**
 * New blocks pushed by the node instead of polled: `eth_subscribe("newHeads")` over the
 * chain's WebSocket endpoint (`wsUrl`; anvil, geth, reth, erigon and the hosted RPCs serve
 * it). A subscription is only a wake-up: whoever listens still reads what the blocks hold
 * over the ordinary RPC, and keeps polling while the subscription is down.
 */
import { Data, Effect } from "effect"
import type { Hash } from "viem"
import { getWebSocketRpcClient } from "viem/utils"

/** The subscription could not be made, or its socket failed or closed. */
export class HeadsLost extends Data.TaggedError("HeadsLost")<{
  readonly message: string
  readonly cause?: unknown
}> {}

interface HeadMessage {
  readonly error?: { readonly message?: string }
  readonly method?: string
  readonly params?: { readonly result?: { readonly number?: unknown; readonly hash?: unknown } }
}

/** A new head as pushed: its number and hash. */
export interface Head {
  readonly number: bigint
  readonly hash: Hash
}

/**
 * Subscribes to new heads at `wsUrl` and calls `onHead` with each new head, until
 * the socket fails (`HeadsLost`; the caller decides when to subscribe again) or the fiber is
 * interrupted (the socket is closed). viem's own reconnection is off: a lost subscription is
 * said, not silently re-made.
 */
export const followHeads = (wsUrl: string, onHead: (head: Head) => void): Effect.Effect<never, HeadsLost> =>
  Effect.scoped(Effect.gen(function*() {
    const client = yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: () => getWebSocketRpcClient(wsUrl, { reconnect: false }),
        catch: (cause) => new HeadsLost({ message: `cannot open ${wsUrl}`, cause })
      }),
      (c) => Effect.sync(() => c.close())
    )
    return yield* Effect.callback<never, HeadsLost>((resume) => {
      let over = false
      const lost = (error: HeadsLost) => {
        if (over) return
        over = true
        resume(Effect.fail(error))
      }
      client.request({
        body: { method: "eth_subscribe", params: ["newHeads"] },
        onError: (cause) => lost(new HeadsLost({ message: `the subscription at ${wsUrl} was lost`, cause })),
        onResponse: (response) => {
          const r = response as unknown as HeadMessage
          if (r.error !== undefined && r.error !== null) {
            return lost(new HeadsLost({ message: `eth_subscribe newHeads refused: ${r.error.message ?? "unknown error"}` }))
          }
          if (r.method !== "eth_subscription") return
          const n = r.params?.result?.number
          const hash = r.params?.result?.hash
          if (typeof n === "string" && /^0x[0-9a-f]+$/i.test(n) && typeof hash === "string" && /^0x[0-9a-f]{64}$/i.test(hash)) {
            onHead({ number: BigInt(n), hash: hash as Hash })
          }
        }
      })
    })
  }))
