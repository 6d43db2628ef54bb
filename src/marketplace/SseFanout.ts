/**
 * Node-level SSE fan-out for the stats stream: a subscriber is the node
 * `ServerResponse` itself, and the hub's poller writes each change's shared
 * bytes to every response in one synchronous loop (no fiber resumed, no Effect
 * stream pulled per subscriber).
 *
 * Backpressure: when `write` returns false the socket's buffer is over its high
 * water mark; the subscriber is marked behind and, until the socket drains
 * (`drain`), its changes are kept in a map of at most one frame per wallet (newest
 * wins). On `drain` they are written as one chunk. So a reader that never reads
 * costs what its socket had queued when it filled (nothing is added after) and
 * the map, bounded by the wallets it follows; when it resumes it gets current values.
 */
import { Effect } from "effect"
import { HttpServerRequest } from "effect/http"
import { NodeHttpServerRequest } from "@effect/platform-node"

const CRLF = Buffer.from("\r\n", "latin1")

/**
 * Bytes written to many sockets: the SSE text, and (built once, on first use) the
 * same bytes as one HTTP/1.1 chunk (size line, data, CRLF), so a chunked response
 * takes them in a single socket write.
 */
export class Wire {
  private chunked: Uint8Array | undefined
  constructor(readonly bytes: Uint8Array) {}
  get chunk(): Uint8Array {
    return this.chunked ??= Buffer.concat([Buffer.from(`${this.bytes.length.toString(16)}\r\n`, "latin1"), this.bytes, CRLF])
  }
}

/** A changed stat as it goes on the wire: `data: …\n\n`, encoded once. */
export interface Frame {
  /** The wallet, lowercase. */
  readonly key: string
  readonly wire: Wire
}

/** The socket under an HTTP/1.1 response, as far as the fan-out uses it. */
interface SseSocket {
  write(chunk: Uint8Array): boolean
  readonly writableLength: number
  on(event: "drain", listener: () => void): unknown
  once(event: "end", listener: () => void): unknown
  off(event: "drain" | "end", listener: () => void): unknown
  end(): unknown
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
  readonly writableLength: number
  /** Node: true once the head says `transfer-encoding: chunked` (HTTP/1.1 without a length). */
  readonly chunkedEncoding?: boolean
  readonly socket?: SseSocket | null
}

export const sseHeaders: Readonly<Record<string, string>> = {
  "content-type": "text/event-stream",
  "cache-control": "no-cache, no-transform",
  "x-accel-buffering": "no",
  "x-content-type-options": "nosniff"
}

const heartbeat = new Wire(new TextEncoder().encode(": heartbeat\n\n"))

/** Several frames as one write; a single frame is its own shared bytes. */
export const joinFrames = (frames: Iterable<Frame>): Wire => {
  const parts: Array<Uint8Array> = []
  let only: Wire | undefined
  for (const f of frames) {
    only = f.wire
    parts.push(f.wire.bytes)
  }
  return parts.length === 1 ? only! : new Wire(Buffer.concat(parts))
}

/**
 * One SSE client of the hub, written to directly from the poller. On HTTP/1.1 the
 * response's socket is written the pre-framed chunk (one `write`, no cork and
 * `nextTick` per response); otherwise the response's own `write`.
 */
export class SseSubscriber<F> {
  /** `write` returned false: the socket's buffer is full until `drain`. */
  private behind = false
  /** Something was written since the last heartbeat tick (no heartbeat needed then). */
  private active = false
  private gone = false
  /** While behind: at most one frame per wallet, the newest. */
  private pending: Map<string, Frame> | undefined
  private socket: SseSocket | undefined

  constructor(
    readonly filter: F,
    private readonly res: SseResponse,
    /** Called once, when the client is gone (response closed, or the client ended its side). */
    private readonly onGone: (s: SseSubscriber<F>) => void
  ) {}

  /** Writes the head and the first bytes (`: connected`, `retry`, the snapshot). */
  start(first: Uint8Array): void {
    const res = this.res
    // Listening first: if the head cannot be written, the response still closes and we leave.
    res.on("close", this.leave)
    res.writeHead(200, { ...sseHeaders })
    const socket = res.socket
    if (res.chunkedEncoding === true && socket !== undefined && socket !== null) {
      this.socket = socket
      socket.on("drain", this.onDrain)
      // The node server ends a connection whose client ended its side: nothing more reaches it.
      socket.once("end", this.leave)
    } else {
      res.on("drain", this.onDrain)
    }
    if (!res.write(first)) this.behind = true
  }

  /** This poll's changes for this subscriber, and their bytes already joined. */
  send(frames: ReadonlyArray<Frame>, joined: Wire): void {
    this.active = true
    if (this.behind) {
      const pending = this.pending ??= new Map()
      for (const f of frames) pending.set(f.key, f)
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
    this.write(heartbeat)
  }

  /**
   * The hub is going away: end the response (the client sees the end of the stream) and, on
   * HTTP/1.1, the connection after it, or the server's graceful close would wait for it to idle out.
   */
  end(): void {
    const res = this.res
    this.leave()
    if (res.writableEnded || res.destroyed) return
    res.end()
    this.socket?.end()
  }

  /** Stats held back for a slow reader (tests, benchmarks). */
  get pendingCount(): number {
    return this.pending?.size ?? 0
  }

  get isBehind(): boolean {
    return this.behind
  }

  /** Bytes written but not yet taken by the kernel. */
  get buffered(): number {
    return this.socket !== undefined ? this.socket.writableLength : this.res.writableLength
  }

  private write(wire: Wire): void {
    if (this.gone) return
    const ok = this.socket !== undefined ? this.socket.write(wire.chunk) : this.res.write(wire.bytes)
    if (!ok) this.behind = true
  }

  private readonly onDrain = (): void => {
    this.behind = false
    const pending = this.pending
    if (pending === undefined || pending.size === 0) return
    const wire = joinFrames(pending.values())
    pending.clear()
    this.write(wire)
  }

  private readonly leave = (): void => {
    if (this.gone) return
    this.gone = true
    this.pending = undefined
    this.res.off("close", this.leave)
    this.res.off("drain", this.onDrain)
    this.socket?.off("drain", this.onDrain)
    this.socket?.off("end", this.leave)
    this.onGone(this)
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
