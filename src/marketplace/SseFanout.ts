/**
 * Node-level SSE fan-out for the stats stream: a subscriber is the node
 * `ServerResponse` itself, and the hub's poller writes each change's shared
 * bytes to every response in one synchronous loop (no fiber resumed, no Effect
 * stream pulled per subscriber).
 *
 * Backpressure: when `write` returns false the socket's buffer is over its high
 * water mark; the subscriber is marked behind and, until the response emits
 * `drain`, its changes are kept in a map of at most one frame per wallet (newest
 * wins). On `drain` they are written as one chunk. So a reader that never reads
 * costs at most the socket's buffer (high water mark plus one write) and the
 * map, bounded by the wallets it follows; when it resumes it gets current values.
 */
import { Effect } from "effect"
import { HttpServerRequest } from "effect/http"
import { NodeHttpServerRequest } from "@effect/platform-node"

/** A changed stat as it goes on the wire: `data: …\n\n`, encoded once. */
export interface Frame {
  /** The wallet, lowercase. */
  readonly key: string
  readonly bytes: Uint8Array
}

/** What the fan-out needs of a node `ServerResponse` (HTTP/1.1, or the HTTP/2 compatibility API). */
export interface SseResponse {
  writeHead(status: number, headers: Record<string, string>): unknown
  write(chunk: Uint8Array): boolean
  end(): unknown
  on(event: "drain" | "close", listener: () => void): unknown
  off(event: "drain" | "close", listener: () => void): unknown
  readonly destroyed: boolean
  readonly writableEnded: boolean
}

export const sseHeaders: Readonly<Record<string, string>> = {
  "content-type": "text/event-stream",
  "cache-control": "no-cache, no-transform",
  "x-accel-buffering": "no"
}

const heartbeatBytes = new TextEncoder().encode(": heartbeat\n\n")

/** Several frames as one chunk (one write); a single frame is its own shared bytes. */
export const joinFrames = (frames: Iterable<Frame>): Uint8Array => {
  const parts: Array<Uint8Array> = []
  for (const f of frames) parts.push(f.bytes)
  return parts.length === 1 ? parts[0]! : Buffer.concat(parts)
}

/** One SSE client of the hub, written to directly from the poller. */
export class SseSubscriber<F> {
  /** `write` returned false: the socket's buffer is full until `drain`. */
  private behind = false
  /** Something was written since the last heartbeat tick (no heartbeat needed then). */
  private active = false
  /** While behind: at most one frame per wallet, the newest. */
  private readonly pending = new Map<string, Frame>()

  constructor(readonly filter: F, private readonly res: SseResponse) {
    res.on("drain", this.onDrain)
  }

  /** Writes the head and the first bytes (`: connected`, `retry`, the snapshot). */
  start(first: Uint8Array): void {
    this.res.writeHead(200, { ...sseHeaders })
    this.write(first)
  }

  /** This poll's changes for this subscriber, and their bytes already joined. */
  send(frames: ReadonlyArray<Frame>, joined: Uint8Array): void {
    this.active = true
    if (this.behind) {
      for (const f of frames) this.pending.set(f.key, f)
      return
    }
    this.write(joined)
  }

  /** The shared heartbeat tick: a comment, unless something was written meanwhile or it is behind. */
  beat(): void {
    if (this.active || this.behind) {
      this.active = false
      return
    }
    this.write(heartbeatBytes)
  }

  /** The hub is going away: end the response (the client sees the end of the stream). */
  end(): void {
    this.detach()
    if (!this.res.writableEnded && !this.res.destroyed) this.res.end()
  }

  /** Forgets pending frames and listeners (on close). */
  detach(): void {
    this.pending.clear()
    this.res.off("drain", this.onDrain)
  }

  /** Stats held back for a slow reader (tests, benchmarks). */
  get pendingCount(): number {
    return this.pending.size
  }

  get isBehind(): boolean {
    return this.behind
  }

  private write(bytes: Uint8Array): void {
    if (this.res.destroyed || this.res.writableEnded) return
    if (!this.res.write(bytes)) this.behind = true
  }

  private readonly onDrain = (): void => {
    this.behind = false
    if (this.pending.size === 0) return
    const bytes = joinFrames(this.pending.values())
    this.pending.clear()
    this.write(bytes)
  }
}

/** The node response behind the current request; a defect on a server that is not node's. */
export const nodeResponse: Effect.Effect<SseResponse, never, HttpServerRequest.HttpServerRequest> = Effect.gen(
  function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const res = NodeHttpServerRequest.toServerResponse(request) as SseResponse | undefined
    if (res === undefined || typeof res.write !== "function") {
      return yield* Effect.die(new Error("the stats stream needs the node HTTP server"))
    }
    return res
  }
)
