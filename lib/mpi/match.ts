/**
 * The matching engine (MPI's posted-receive and unexpected-message queues, as Open MPI's ob1 and
 * MPICH keep them): a message matches a receive when their context ids are equal, the receive's
 * source is the message's or ANY_SOURCE (-1), and its tag is the message's or ANY_TAG (-1).
 *
 * - Posted receives are matched in the order they were posted; unexpected messages in the order
 *   they arrived. Each connection delivers its messages in stream order, so between a pair on one
 *   communicator messages never overtake.
 * - A message is matched once its header is in (eager payloads stream into the receive's array;
 *   rendezvous RTS answer CTS). A message without a receive is queued unexpected: an eager one
 *   with its bytes (buffered, the one extra copy MPIs make), an RTS without payload.
 */
import type { Request } from './request'

/** A receive waiting for its message. `source`/`tag` may be ANY_SOURCE/ANY_TAG (-1). */
export interface PostedRecv {
  ctx: number
  source: number
  tag: number
  /** The receive's bytes (the caller's array). */
  bytes: Uint8Array
  req: Request
  /** World ranks whose loss fails this receive: its source's, or every rank of the communicator for ANY_SOURCE. */
  worldSource: number
  /** For ANY_SOURCE: the communicator's world ranks (loss of any fails it). */
  anyOf: readonly number[] | null
}

/** A message that arrived (or, for an RTS, was announced) before its receive was posted. */
export interface Unexpected {
  ctx: number
  source: number
  tag: number
  /** The message's size in bytes. */
  length: number
  /** The sender's world rank. */
  worldSource: number
  /** Eager: the buffered payload (complete). Null for an RTS (payload still at the sender). */
  data: Uint8Array | null
  /** RTS: the sender's request id (for CTS). */
  sreq: number
  /** A message from this process to itself: the send's request, completed when matched. */
  selfReq: Request | null
}

/** Does a receive's (source, tag) select a message's? */
export function matches (rSource: number, rTag: number, mSource: number, mTag: number): boolean {
  return (rSource === mSource || rSource === -1) && (rTag === mTag || rTag === -1)
}

/**
 * Does a receive on context `rCtx` select a message on `mCtx` (the rule above, context included)?
 * The record-less fast path of the blocking tier (Device.recvEagerSync) matches with it too.
 */
export function selects (rCtx: number, rSource: number, rTag: number, mCtx: number, mSource: number, mTag: number): boolean {
  return rCtx === mCtx && matches(rSource, rTag, mSource, mTag)
}

/** The two queues of one context id. */
class ContextQueues {
  posted: PostedRecv[] = []
  unexpected: Unexpected[] = []
}

/** A probe waiting for a matching message (MPI_Probe). */
export interface ProbeWaiter {
  ctx: number
  source: number
  tag: number
  resolve: (u: Unexpected) => void
  /** Fails the probe (a rank it waits on is lost). */
  reject: (err: Error) => void
  /** World ranks whose loss fails the probe. */
  ranks: number[]
}

/** The process's matching engine: queues per context id. */
export class Matcher {
  private readonly byCtx = new Map<number, ContextQueues>()
  /** Probes waiting for an unexpected message. */
  readonly probes: ProbeWaiter[] = []
  /** Posted receives in all contexts (onlyFrom in O(1)). */
  private postedCount = 0
  /** Posted receives by world source (-1: ANY_SOURCE). */
  private readonly postedFrom = new Map<number, number>()

  /** True when a receive is posted (any context). */
  get anyPosted (): boolean { return this.postedCount > 0 }

  private count (w: number, d: number): void {
    this.postedCount += d
    this.postedFrom.set(w, (this.postedFrom.get(w) ?? 0) + d)
  }

  private q (ctx: number): ContextQueues {
    let q = this.byCtx.get(ctx)
    if (q === undefined) { q = new ContextQueues(); this.byCtx.set(ctx, q) }
    return q
  }

  /** Removes and returns the first posted receive matching a message, or null. */
  takePosted (ctx: number, source: number, tag: number): PostedRecv | null {
    const q = this.byCtx.get(ctx)
    if (q === undefined) return null
    const posted = q.posted
    for (let i = 0; i < posted.length; i++) {
      const p = posted[i]
      if (matches(p.source, p.tag, source, tag)) {
        if (i === 0) posted.shift()
        else posted.splice(i, 1)
        this.count(p.worldSource, -1)
        return p
      }
    }
    return null
  }

  /** Removes and returns the earliest unexpected message a receive matches, or null. */
  takeUnexpected (ctx: number, source: number, tag: number): Unexpected | null {
    const i = this.findUnexpected(ctx, source, tag)
    if (i < 0) return null
    const un = this.byCtx.get(ctx)!.unexpected
    return i === 0 ? un.shift()! : un.splice(i, 1)[0]
  }

  /** The earliest unexpected message a receive matches (left queued), or null: MPI_Iprobe. */
  peekUnexpected (ctx: number, source: number, tag: number): Unexpected | null {
    const i = this.findUnexpected(ctx, source, tag)
    return i < 0 ? null : this.byCtx.get(ctx)!.unexpected[i]
  }

  private findUnexpected (ctx: number, source: number, tag: number): number {
    const q = this.byCtx.get(ctx)
    if (q === undefined) return -1
    const un = q.unexpected
    for (let i = 0; i < un.length; i++) if (matches(source, tag, un[i].source, un[i].tag)) return i
    return -1
  }

  /** Queues a receive that found no message. */
  post (p: PostedRecv): void { this.q(p.ctx).posted.push(p); this.count(p.worldSource, 1) }

  /** Removes a posted receive (cancelled or failed); true when it was queued. */
  unpost (p: PostedRecv): boolean {
    const q = this.byCtx.get(p.ctx)
    if (q === undefined) return false
    const i = q.posted.indexOf(p)
    if (i < 0) return false
    q.posted.splice(i, 1)
    this.count(p.worldSource, -1)
    return true
  }

  /** Queues an unexpected message (arrival order), waking matching probes. */
  addUnexpected (u: Unexpected): void {
    this.q(u.ctx).unexpected.push(u)
    if (this.probes.length === 0) return
    for (let i = 0; i < this.probes.length; i++) {
      const w = this.probes[i]
      if (w.ctx === u.ctx && matches(w.source, w.tag, u.source, u.tag)) {
        this.probes.splice(i--, 1)
        w.resolve(u)
      }
    }
  }

  /** True when every posted receive (all contexts) is for a message from world rank `w`. */
  onlyFrom (w: number): boolean {
    return this.postedCount === 0 || this.postedCount === (this.postedFrom.get(w) ?? 0)
  }

  /** Every posted receive (all contexts), for failing those a lost rank concerns. */
  allPosted (): PostedRecv[] {
    const out: PostedRecv[] = []
    for (const q of this.byCtx.values()) out.push(...q.posted)
    return out
  }

  /**
   * Drops the unexpected RTS of a lost sender (their payload can never come); with `all`, its
   * eager messages too (a sender lost for breaking the protocol: nothing it sent is trusted).
   */
  dropFrom (worldRank: number, all = false): void {
    for (const q of this.byCtx.values()) q.unexpected = q.unexpected.filter(u => !(u.worldSource === worldRank && (all || u.data === null) && u.selfReq === null))
  }
}
