/**
 * Who follows the stats hub (`StatsHub.ts`): what a subscription filters and reads, the
 * frame a changed stat becomes (encoded once), and the in-process subscriber that tests and
 * benchmarks read through `take`. SSE subscribers are in `SseFanout.ts`.
 */
import type { Effect } from "effect"
import type { Address } from "../domain/Primitives.ts"
import type { AgentStat } from "./Domain.ts"
import { type Frame, Wire } from "./SseFanout.ts"

/** Which wallets a subscription follows: every leaderboard agent, or the named ones. */
export type WalletFilter = { readonly _tag: "All" } | { readonly _tag: "Wallets"; readonly wallets: ReadonlyArray<Address> }

/** A stat as it goes on the wire: encoded once, the same bytes written to every subscriber. */
export interface StatFrame extends Frame {
  readonly stat: AgentStat
}

/** One follower of the hub: an SSE response (`SseSubscriber`) or an in-process subscription. */
export interface Subscriber {
  readonly filter: WalletFilter
  /** This poll's changes it follows (at most one per wallet, in poll order) and their bytes joined. */
  send(frames: ReadonlyArray<StatFrame>, joined: Wire): void
  /** The shared heartbeat tick. */
  beat(): void
  /** The hub shuts down. */
  end(): void
}

/** What one read of a subscription yields: stats to send, and whether a heartbeat is due. */
export interface Batch {
  readonly stats: ReadonlyArray<AgentStat>
  readonly heartbeat: boolean
}

export interface Subscription {
  /** Waits until something is due, then drains it. */
  readonly take: Effect.Effect<Batch>
  /** Latest known stats for the followed wallets, at subscribe time. */
  readonly snapshot: ReadonlyArray<AgentStat>
}

/** SSE framing: `data:` events (no event name, as `HttpApiSchema.StreamSse({ data })` reads them). */
export const utf8 = new TextEncoder()
export const statFrame = (key: string, stat: AgentStat): StatFrame => ({
  key,
  stat,
  wire: new Wire(utf8.encode(`data: ${JSON.stringify(stat)}\n\n`))
})

/** An in-process subscriber: at most one pending frame per wallet (newest wins), woken on news. */
export class LocalSubscriber implements Subscriber {
  readonly pending = new Map<string, StatFrame>()
  heartbeat = false
  wake: (() => void) | undefined = undefined
  constructor(readonly filter: WalletFilter) {}
  get due(): boolean {
    return this.pending.size > 0 || this.heartbeat
  }
  send(frames: ReadonlyArray<StatFrame>): void {
    for (const f of frames) this.pending.set(f.key, f)
    this.wakeUp()
  }
  beat(): void {
    this.heartbeat = true
    this.wakeUp()
  }
  end(): void {}
  drain(): Batch {
    const batch = { stats: [...this.pending.values()].map((f) => f.stat), heartbeat: this.heartbeat }
    this.pending.clear()
    this.heartbeat = false
    return batch
  }
  private wakeUp(): void {
    const w = this.wake
    if (w !== undefined) {
      this.wake = undefined
      w()
    }
  }
}
