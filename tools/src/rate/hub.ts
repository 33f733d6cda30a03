/**
 * The measuring process's side of a `fastsock rate` cell (msgrate's kernels, with this process as
 * the rank that talks to every peer): runs iterations of a pattern over one connection per peer
 * and returns the timed time. Per iteration (protocol.ts):
 *
 * - cold cache: barrier ('B' to every peer; this process flushes its cache and writes its send
 *   buffers meanwhile; every peer answers 'R' once it did the same). Not timed.
 * - single-direction fan-out: one window to every peer, then wait for every ack.
 * - single-direction fan-in: 'G' to every peer, then wait for every peer's window.
 * - pair-based: with one peer after the other, 'G' and a window out, its window and ack back
 *   (each process exchanges with exactly one partner at a time).
 * - all-start: 'G' and a window to every peer at once, then wait for everything (one waitall).
 * - bidirectional: all-start with a long run of windows in both directions, backpressure honoured.
 */
import { CacheFlusher } from './cache'
import { BARRIER, GO, hubExpects, roles, type PeerCell } from './protocol'
import { ByteCounter, Payload, sendMessages } from './window'
import type * as net from 'net'

/** One connection to one peer, with its byte counter. */
export interface HubConn {
  socket: net.Socket
  counter: ByteCounter
}

/** Wraps a connected socket for the hub (the counter listens from now on). */
export function hubConn (socket: net.Socket): HubConn {
  return { socket, counter: new ByteCounter(socket) }
}

export class Hub {
  private readonly payload = new Payload()
  private readonly flusher = new CacheFlusher(0)
  private cell: PeerCell | null = null

  /** Prepares the send buffers (and the flush buffer of a cold cell) for `cell`. */
  prepare (cell: PeerCell): void {
    this.cell = cell
    this.payload.resize(cell.window, cell.bytes)
    this.payload.touch()
    this.flusher.resize(cell.coldCache ? cell.cacheBytes : 0)
  }

  /**
   * Runs `iterations` iterations of the prepared cell over `conns` (pair-based when `pairwise`);
   * resolves with the timed ns (barriers and cache flushes excluded) and, of those, the ns this
   * process spent posting its sends (cork, writes, uncork: the synchronous part; the rest is
   * waiting for the peers). Rejects when a connection fails or no iteration completes for `stallMs`.
   */
  async run (conns: HubConn[], iterations: number, pairwise: boolean, stallMs: number): Promise<{ timedNs: number, postNs: number }> {
    const cell = this.cell
    if (cell === null) throw new Error('Hub.run before prepare')
    let done = 0
    let seen = -1
    const watchdog = setInterval(() => {
      if (done === seen) {
        const err = new Error(`${cell.pattern} ${cell.direction} ${cell.bytes} B stalled for ${stallMs} ms after ${done} iterations`)
        for (const c of conns) c.counter.abort(err)
      }
      seen = done
    }, stallMs)
    try {
      let timedNs = 0
      let postNs = 0
      const expect = hubExpects(cell)
      for (; done < iterations; done++) {
        if (cell.coldCache) await this.barrier(conns)
        const t0 = process.hrtime.bigint()
        if (pairwise) {
          for (const c of conns) {
            const p0 = process.hrtime.bigint()
            const sent = this.send(c, cell)
            postNs += Number(process.hrtime.bigint() - p0)
            await Promise.all([sent, c.counter.expect(expect)])
          }
        } else {
          const work: Array<Promise<void>> = []
          for (const c of conns) work.push(this.send(c, cell))
          postNs += Number(process.hrtime.bigint() - t0)
          for (const c of conns) work.push(c.counter.expect(expect))
          await Promise.all(work)
        }
        timedNs += Number(process.hrtime.bigint() - t0)
      }
      return { timedNs, postNs }
    } finally {
      clearInterval(watchdog)
    }
  }

  /** msgrate's cache invalidation on every process, then the send buffers written; untimed. */
  private async barrier (conns: HubConn[]): Promise<void> {
    for (const c of conns) c.socket.write(BARRIER)
    this.flusher.flush()
    this.payload.touch()
    await Promise.all(conns.map(async (c) => await c.counter.expect(1)))
  }

  /** This process's sends of one iteration to one peer. */
  private async send (c: HubConn, cell: PeerCell): Promise<void> {
    const { hubSends, peerSends } = roles(cell.direction)
    if (!hubSends) {
      c.socket.write(GO)
      return
    }
    await sendMessages(c.socket, this.payload, cell.messages, peerSends ? GO : null)
  }
}
