/**
 * New blocks pushed by the node instead of polled: `eth_subscribe("newHeads")` over the
 * chain's WebSocket endpoint (`wsUrl`; anvil, geth, reth, erigon and the hosted RPCs serve
 * it). A subscription is only a wake-up: whoever listens still reads what the blocks hold
 * over the ordinary RPC, and keeps polling while the subscription is down.
 *
 * One socket per subscription, of its own (`ws`): viem's socket clients are shared per URL
 * within a process, so one closing would end another's subscription.
 */
import { Data, Effect } from "effect"
import type { Hash } from "viem"
import WebSocket from "ws"

/** The subscription could not be made, or its socket failed, closed or stopped answering. */
export class HeadsLost extends Data.TaggedError("HeadsLost")<{
  readonly message: string
  readonly cause?: unknown
}> {}

/** A new head as pushed: its number and hash. */
export interface Head {
  readonly number: bigint
  readonly hash: Hash
}

interface Message {
  readonly id?: unknown
  readonly result?: unknown
  readonly error?: { readonly message?: string } | null
  readonly method?: string
  readonly params?: { readonly result?: { readonly number?: unknown; readonly hash?: unknown } }
}

/** A socket that has not answered a ping by the next one (30 s) is taken as lost. */
const HEARTBEAT_MS = 30_000

/**
 * Subscribes to new heads at `wsUrl`: `onSubscribed` once the node has accepted (blocks made
 * before that moment are not pushed: read them then), then `onHead` with each new head, until
 * the socket fails (`HeadsLost`; the caller decides when to subscribe again) or the fiber is
 * interrupted (the socket is closed).
 */
export const followHeads = (
  wsUrl: string,
  onHead: (head: Head) => void,
  onSubscribed: () => void = () => undefined
): Effect.Effect<never, HeadsLost> =>
  Effect.callback<never, HeadsLost>((resume) => {
    let over = false
    let answered = true
    const socket = new WebSocket(wsUrl)
    const heartbeat = setInterval(() => {
      if (!answered) return lost(new HeadsLost({ message: `the socket at ${wsUrl} stopped answering` }))
      answered = false
      socket.ping()
    }, HEARTBEAT_MS)
    const close = () => {
      over = true
      clearInterval(heartbeat)
      socket.removeAllListeners()
      socket.on("error", () => undefined)
      socket.terminate()
    }
    const lost = (error: HeadsLost) => {
      if (over) return
      close()
      resume(Effect.fail(error))
    }
    socket.on("pong", () => {
      answered = true
    })
    socket.on("open", () => socket.send(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_subscribe", params: ["newHeads"] })))
    socket.on("error", (cause) => lost(new HeadsLost({ message: `cannot reach ${wsUrl}: ${cause.message}`, cause })))
    socket.on("close", () => lost(new HeadsLost({ message: `the subscription at ${wsUrl} was lost (socket closed)` })))
    socket.on("message", (data) => {
      answered = true
      let m: Message
      try {
        m = JSON.parse(String(data)) as Message
      } catch (cause) {
        return lost(new HeadsLost({ message: `${wsUrl} sent something that is not JSON`, cause }))
      }
      if (m.id === 1) {
        if (m.error !== undefined && m.error !== null) {
          return lost(new HeadsLost({ message: `eth_subscribe newHeads refused: ${m.error.message ?? "unknown error"}` }))
        }
        if (typeof m.result === "string") onSubscribed()
        return
      }
      if (m.method !== "eth_subscription") return
      const n = m.params?.result?.number
      const hash = m.params?.result?.hash
      if (typeof n === "string" && /^0x[0-9a-f]+$/i.test(n) && typeof hash === "string" && /^0x[0-9a-f]{64}$/i.test(hash)) {
        onHead({ number: BigInt(n), hash: hash as Hash })
      }
    })
    return Effect.sync(close)
  })
