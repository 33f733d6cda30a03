/**
 * The in-band protocol of one `fastsock rate` iteration between the measuring process (the hub)
 * and one peer, and the IPC messages that configure the peers. Per iteration, on each connection:
 *
 *   cold cache:  hub → 'B' (barrier); peer flushes its cache, writes its send buffers, → 'R';
 *                the hub does the same meanwhile and starts its timer once every 'R' arrived.
 *   peer sends:  hub → 'G' (go); the peer writes its `messages` messages.
 *   hub sends:   hub → `messages` messages; once the peer received them all, peer → 'A' (ack).
 *
 * So a peer receives, per iteration, [1 if cold] + [1 if it sends] + [messages × bytes if the hub
 * sends], and the hub receives [1 if cold] then [messages × bytes if the peer sends] + [1 if the
 * hub sends]: both sides count bytes and never parse them. Control bytes are sent only where the
 * stream in that direction is otherwise quiet, so they cannot be mistaken for data.
 */
import type { ChannelSpec } from '../harness/types'
import type { Direction, RatePattern } from './types'

export const BARRIER = Buffer.from('B')
export const READY = Buffer.from('R')
export const GO = Buffer.from('G')
export const ACK = Buffer.from('A')

/** What one peer does in each iteration of a cell (sent to it over IPC before the cell). */
export interface PeerCell {
  pattern: RatePattern
  direction: Direction
  bytes: number
  /** Messages per iteration and direction on this connection. */
  messages: number
  /** Messages per corked batch. */
  window: number
  coldCache: boolean
  /** Bytes of the buffer to touch between cold iterations. */
  cacheBytes: number
}

/** Who sends in a cell: the hub, the peers, or both. */
export function roles (direction: Direction): { hubSends: boolean, peerSends: boolean } {
  return { hubSends: direction !== 'fan-in', peerSends: direction !== 'fan-out' }
}

/** The direction a pattern runs in (`single-direction` takes its own). */
export function directionOf (pattern: RatePattern, single: Exclude<Direction, 'both'>): Direction {
  return pattern === 'single-direction' ? single : 'both'
}

/** Bytes the hub receives from one peer in the timed part of an iteration. */
export function hubExpects (cell: Pick<PeerCell, 'direction' | 'bytes' | 'messages'>): number {
  const { hubSends, peerSends } = roles(cell.direction)
  return (peerSends ? cell.messages * cell.bytes : 0) + (hubSends ? ACK.length : 0)
}

/**
 * Requests of the rate peer (the envelope of ../harness/peer-process.ts adds ids; replies
 * `{ id, ok, ... }`). `listen` with `serve: 'pingpong'` opens a listener whose connections echo
 * NetPIPE's ping-pong at the size `pingpong` last set (the RTT phase, rtt.ts); without it, the
 * listener's connections play the rate protocol above.
 */
export type RatePeerRequest =
  | { cmd: 'listen', channel: ChannelSpec, serve?: 'rate' | 'pingpong' }
  | { cmd: 'pingpong', bytes: number }
  | { cmd: 'cell', cell: PeerCell }
  | { cmd: 'cpu-mark' }
  | { cmd: 'cpu-read' }
  | { cmd: 'close' }

/** The reply to 'cpu-read': CPU time (user + sys, µs) and read/write system calls since 'cpu-mark'. */
export interface CpuReply { ok: true, cpuUs: number, syscalls: number | null }
