/**
 * One connection of the device, whole: the write path (ConnWriter, device-write.ts), the frame
 * parser and the event loop's reads (ConnReader, device-read.ts), and here the synchronous reads
 * on shm with their polling:
 *
 * - one synchronous read loop (`readLoop`) for both tiers, which differ only in how they wait:
 *   - the receive fast path (`pollFrames`): headers and payloads read with `readIntoSync` in a
 *     bounded spin, with a learned budget per wait (PollBudget, poll-budget.ts), instead of
 *     waiting for the event loop;
 *   - the blocking tier (`pumpSync`, for Request.waitSync): spin, then asleep on the doorbell;
 * - the record-less blocking receive (`nextHeaderSync`, `takeEagerSync`, `handleHeld`), which
 *   reads one header and its payload with the blocking tier's waits.
 *
 * Every header these read goes through ConnReader's `header()` (the device's checkFrame) too.
 */
import { performance } from 'perf_hooks'
import type { Socket } from '../index'
import { HEADER_BYTES, EAGER } from './device-wire'
import { PollBudget } from './poll-budget'
import { contended, spinEnded } from './contention'
import { type SyncOpts, SYNC_WRITE_BYTES, SYNC_BYTES_PER_MS } from './device-write'
import { ConnReader, St, type FrameHandler } from './device-read'

export type { FrameHandler } from './device-read'

/** readIntoSync of a payload right behind its header: up to 200 µs, spinning only (see device-write.ts, SYNC_WRITE). */
const SYNC_PAYLOAD = { spinUs: 1000, timeoutMs: 0.2 }
/**
 * How long, µs, a fast-path wait may keep reading frames that are there (not waiting for them:
 * that is the window's) before the rest is left to the event loop: a window of 64 messages of
 * 64 KiB is 4 MiB, ~0.7 ms of copying (a 50 µs bound halved osu_bw at 64 KiB).
 */
const MIN_BUSY_US = 1000

/**
 * The learned budget never falls below this (µs, or the cap when smaller). At 0 neither side of a
 * ping-pong spins, every reply comes through the doorbell, slower than the cap on a loaded host,
 * and the halving rule would keep it at 0 for good (measured: RTT/2 stuck at 140-190 µs instead
 * of 2-9 µs). A late peer costs at most this much CPU per wait.
 */
const SPIN_FLOOR_US = 30
/**
 * A wait's polling budget is at most this many windows: spun in synchronous slices of at most
 * one window each, with a turn of the event loop between slices (setImmediate).
 */
const POLL_SLICES = 25

/**
 * The blocking tier (pumpSync): once a frame's first bytes are read, the rest is waited for up to
 * this long, spinning up to FRAME_SPIN_US first (the peer writes a frame in one go; a peer that
 * stalls longer than this mid-frame leaves the rest to the event loop's path).
 */
const FRAME_REST_MS = 1000
const FRAME_SPIN_US = 1000
/** readIntoSync's bound for "only what is there already": the smallest wait it takes. */
const NO_WAIT_MS = 0.001

/** The answers of Conn.nextHeaderSync and takeEagerSync other than a length (>= 0). */
export const RECV_NONE = -2
export const RECV_UNAVAILABLE = -3
export const RECV_PARTIAL = -4


/** A connection to one peer (world rank `peer`). */
export class Conn extends ConnReader {

  /**
   * Options objects of the sync reads, reused (no allocation per call). Made with fractional
   * values so that V8 stores their fields as doubles from the start: made with integers, the
   * first fractional store changed their hidden class and threw away the optimized code of every
   * function that had seen them (a deopt, then a recompile, while the ranks spin).
   */
  private readonly spinOpts: SyncOpts
  private readonly blockOpts: SyncOpts
  /** SYNC_PAYLOAD with this connection's `yield`. */
  private readonly payloadOpts: SyncOpts

  /** The receive fast path's largest spin on this connection, µs (0: none). */
  readonly spinCapUs: number
  /** Every spin yields (the device's choice); else a spin yields while the CPUs look contended (contention.ts). */
  private readonly yieldSpin: boolean

  /**
   * `yieldSpin`: every synchronous wait on this connection spins with sched_yield() between its
   * polls (the device's choice when its host has fewer CPUs than ranks; docs/mpi.md, "Polling").
   */
  constructor (peer: number, handler: FrameHandler, spinCapUs = 0, yieldSpin = false) {
    super(peer, handler, yieldSpin)
    this.yieldSpin = yieldSpin
    this.spinCapUs = spinCapUs
    this.spinOpts = { spinUs: 0.5, timeoutMs: 0.5, yield: yieldSpin }
    this.blockOpts = { spinUs: 0.5, timeoutMs: 0.5, yield: yieldSpin }
    this.payloadOpts = { ...SYNC_PAYLOAD, yield: yieldSpin }
  }


  /** The wait whose next polling slice is queued (setImmediate), and its slice cap. */
  private contReq: { readonly done: boolean } | null = null
  private contCap = 0
  private readonly contRun = (): void => {
    const req = this.contReq
    this.contReq = null
    if (req !== null && !req.done && !this.lost) this.pollFrames(this.contCap, req, Infinity, true)
  }

  /** The fast path's learned polling budget per wait (poll-budget.ts). */
  private readonly budget = new PollBudget(SPIN_FLOOR_US)

  /** A chunk came through the event loop: a wait the polling missed ends here (learned). */
  protected override chunkArrived (): void {
    if (this.budget.missing) this.budget.arrived(performance.now())
  }

  /** The peer is lost: nothing more is read or written; a queued polling slice finds nothing to do. */
  override release (): void {
    super.release()
    this.contReq = null
  }

  /**
   * The receive fast path on shm: reads and handles frames synchronously until `req` is done
   * (null: until nothing more is there, for iprobe), spinning for frames in slices of at most
   * `capUs` (the window) with a turn of the event loop between slices (setImmediate; `cont`
   * marks such a continuation), up to a learned budget per wait of at most POLL_SLICES windows;
   * `limitUs` (a wait's timeout) bounds the spin and ends it after one slice. The budget is
   * learned with the rule of KVM's haltpoll governor (PollBudget, poll-budget.ts; the floor is
   * SPIN_FLOOR_US). Does nothing when the connection is mid-frame or a readInto is pending.
   */
  pollFrames (capUs: number, req: { readonly done: boolean } | null, limitUs = Infinity, cont = false): void {
    const socket = this.socket
    if (!this.ready || !this.syncIo || socket === null || this.parsing || this.readIntoPending > 0 ||
        this.st !== St.Header || this.hdrFill !== 0 || socket.readableLength > 0 || socket.destroyed) return
    if (req !== null && !cont && this.contReq !== null) {
      // A slice of an earlier wait on this connection missed on this tick and its next slice is
      // queued: that continuation polls for this (later) request instead, within the same
      // budget; spinning again now would block the loop once more per wait (Promise.all of a
      // window of waits).
      this.contReq = req
      return
    }
    let spin = 0
    let left = 0
    if (req !== null && !this.handler.othersBusy(this)) {
      // What is left of this wait's polling budget, and this slice of it (at most the window).
      left = this.budget.left(capUs * POLL_SLICES, performance.now(), cont)
      if (left <= 0 || capUs === 0) { if (capUs > 0) this.budget.miss(); return }
      spin = Math.min(left, capUs, limitUs) // limitUs: the wait's own timeout (learning is left alone)
    }
    const p = this.poll
    p.spin = spin
    p.left = left
    p.capUs = capUs
    p.limitUs = limitUs
    // The whole call is bounded by the window too (frames that keep coming for other requests
    // must not hold the event loop): past the deadline, the rest is the event loop's.
    p.deadline = req === null ? 0 : performance.now() + Math.max(spin, MIN_BUSY_US) / 1000
    this.readLoop(req, false)
  }

  /**
   * The blocking tier's read loop (Device.waitSync, for Request.waitSync): reads and handles
   * frames with readIntoSync until `req` is done or no frame comes within `waitMs` (spinning up
   * to `spinUs` of it, then asleep on the peer's doorbell: no CPU). Once a frame's first bytes
   * are in, it blocks for the rest of the frame (FRAME_REST_MS at most: a peer that stalls
   * longer leaves the rest to the event loop's path, as pollFrames does). Returns null when it
   * ran (done, nothing in time, or the end of the peer's stream: `atEof`), else why this
   * connection cannot be driven without the event loop now (nothing was read then).
   */
  pumpSync (req: { readonly done: boolean }, spinUs: number, waitMs: number): string | null {
    const socket = this.socket
    if (!this.ready || socket === null) return 'the connection is still being set up'
    if (!this.syncIo) return `its transport (${socket.transport ?? 'none'}) has no synchronous I/O (shm only)`
    if (socket.destroyed || this.atEof || this.lost) return null // the loss is the device's
    if (this.parsing || this.readIntoPending > 0 || this.st !== St.Header || this.hdrFill !== 0 || socket.readableLength > 0) {
      return 'bytes of its stream wait for the event loop'
    }
    this.contReq = null // a fast-path slice queued by an earlier wait finds nothing left to do
    this.block.spinUs = spinUs
    this.block.waitMs = waitMs
    return this.readLoop(req, true)
  }

  /** The fast path's bounds for readLoop (set by pollFrames; one object per connection, reused). */
  private readonly poll = { spin: 0.5, left: 0.5, capUs: 0.5, limitUs: 0.5, deadline: 0.5 }
  /** The blocking tier's bounds for readLoop's first header (set by pumpSync). */
  private readonly block = { spinUs: 0.5, waitMs: 0.5 }

  /**
   * The one synchronous read loop, of both tiers: reads and handles frames (each header through
   * ConnReader's `header()`, the device's checkFrame) until `req` is done (null: until nothing
   * more is there). `blocking` picks how it waits:
   * - the receive fast path (pollFrames, `poll`): headers spun for in a slice of the learned
   *   budget, no longer than the window in all (MIN_BUSY_US); a header or payload that stops
   *   short, or an error, leaves the rest to the event loop's 'data'; it ends when this rank's
   *   own bytes wait in the event loop's path (the peer may wait for them);
   * - the blocking tier (pumpSync, `block`): the first header waited for up to `waitMs`
   *   (spinning `spinUs` of it, then asleep on the doorbell), a frame once begun up to
   *   FRAME_REST_MS; queued asynchronous writes make it return at once with why.
   * Returns pumpSync's answer (null: it ran; else why it could not).
   */
  private readLoop (req: { readonly done: boolean } | null, blocking: boolean): string | null {
    const socket = this.socket!
    const poll = this.poll
    // The fast path's spin and deadline in locals (read and written on every frame).
    let spin = poll.spin
    const deadline = poll.deadline
    this.parsing = true
    try {
      for (let first = true; ; first = false) {
        if (this.batchLen > 0) this.flush() // CTS (and the like) answered while reading go out before waiting
        let got: number
        if (blocking) {
          if (socket.writableLength > 0) return 'asynchronous writes are queued on it'
          got = this.readHeaderSync(first ? this.block.spinUs : 0, first ? this.block.waitMs : 0)
          if (got < 0) return 'synchronous I/O is unavailable on it now'
          if (got === 0) return null // nothing in time, the end of the stream (atEof), or the rest comes as 'data'
        } else {
          // A spin of `spin` µs (0: only what is there); nothing in time queues the wait's next
          // slice after a turn of the event loop, or, with the budget spent, marks the wait
          // missed (learned when its frame arrives as 'data').
          const t0 = spin > 0 ? performance.now() : 0
          try {
            const o = this.spinOpts
            o.spinUs = spin + 1000
            o.timeoutMs = Math.max(spin, 1) / 1000
            o.yield = this.yieldSpin || (spin > 0 && contended())
            got = syncRead(socket, this.hdr, o)
          } catch (err) {
            const e = err as { code?: string, bytesRead?: number }
            if (e.code !== 'ETIMEDOUT') return null
            got = e.bytesRead ?? 0
            if (got === 0 && spin > 0) spinEnded(t0, spin, performance.now())
            if (got === 0 && spin > 0 && !req!.done) {
              if (poll.limitUs === Infinity && poll.left > spin) {
                // The next slice after a turn of the event loop (timers, I/O, other sockets run).
                this.contReq = req
                this.contCap = poll.capUs
                setImmediate(this.contRun)
              } else {
                this.budget.miss()
              }
            }
          }
          if (got < HEADER_BYTES) { this.hdrFill = got; return null } // the rest comes as 'data'
          // Caught: the rest of this wait may spin only what is left of the window.
          if (spin > 0) spin = Math.max(0, (deadline - performance.now()) * 1000)
        }
        this.headerFromHdr()
        if (this.lost) return null
        if ((this.st as St) === St.Payload && !(blocking ? this.blockPayload() : this.pollPayload(socket))) return null
        if (req === null) continue
        if (req.done) return null
        if (!blocking && (socket.writableLength > 0 || (spin === 0 && performance.now() > deadline))) return null
      }
    } finally {
      this.parsing = false
    }
  }

  /**
   * The fast path's payload read, right behind its header: a small one spinning only
   * (SYNC_PAYLOAD), a large one bounded by progress (streamRead), not at all while this rank's
   * own bytes wait in the event loop's path (the peer may be waiting for them before it writes
   * more). False when it stopped short (the rest comes as 'data').
   */
  private pollPayload (socket: Socket): boolean {
    const target = this.target!
    let p: number
    try {
      if (target.length <= SYNC_WRITE_BYTES) p = syncRead(socket, target, this.payloadOpts)
      else {
        const o = this.bigOpts
        o.timeoutMs = socket.writableLength > 0 ? NO_WAIT_MS : SYNC_PAYLOAD.timeoutMs
        p = streamRead(socket, target, o)
      }
    } catch (err) {
      const e = err as { code?: string, bytesRead?: number }
      if (e.code === 'ETIMEDOUT') p = e.bytesRead ?? 0
      else { this.filled = 0; return false }
    }
    this.filled = p
    if (p < target.length) return false
    this.st = St.Header
    this.handler.onPayload(this)
    return true
  }

  /**
   * Comm.recvSync's record-less fast path (Device.recvEagerSync), first half: reads the next
   * header of this connection synchronously, as pumpSync does (spinning up to `spinUs`, then
   * asleep on the peer's doorbell, `waitMs` in all) and has the device check it. HEADER_BYTES:
   * the frame is held, its fields in `kind`, `ctx`, `source`, `tag`, `length`; the device matches
   * it (match.ts) and then takes its payload (takeEagerSync) or hands it on (handleHeld).
   * RECV_NONE: no frame within `waitMs`, the end of the stream (`atEof`), or a bad header (the
   * peer is lost). RECV_UNAVAILABLE: the connection cannot be read synchronously now (nothing read).
   */
  nextHeaderSync (spinUs: number, waitMs: number): number {
    const socket = this.socket
    if (!this.ready || !this.syncIo || socket === null || socket.destroyed || this.atEof || this.lost || this.parsing ||
        this.readIntoPending > 0 || this.st !== St.Header || this.hdrFill !== 0 || socket.readableLength > 0) return RECV_UNAVAILABLE
    if (this.batchLen > 0) this.flush()
    // A peer may wait for this rank's queued bytes before it sends: only the event loop writes them.
    if (socket.writableLength > 0) return RECV_UNAVAILABLE
    this.contReq = null // a fast-path slice queued by an earlier wait finds nothing left to do
    this.parsing = true
    try {
      const got = this.readHeaderSync(spinUs, waitMs)
      if (got < 0) return RECV_UNAVAILABLE
      if (got === 0) return RECV_NONE
      const h = this.hdr32
      const kind = h[0]
      const ctx = h[1]
      const source = h[2] | 0
      const tag = h[3] | 0
      const length = h[4] + h[5] * 0x100000000
      const bad = this.handler.checkFrame(this, kind, ctx, source, tag, length, h[6], h[7])
      if (bad !== null) { this.refuse(bad); return RECV_NONE }
      this.kind = kind
      this.ctx = ctx
      this.source = source
      this.tag = tag
      this.length = length
      return HEADER_BYTES
    } finally {
      this.parsing = false
    }
  }

  /** The held frame (nextHeaderSync) is not the caller's: the device handles it as the parser would. */
  handleHeld (): void {
    this.parsing = true
    try {
      this.headerFromHdr()
      if (!this.lost && (this.st as St) === St.Payload) this.blockPayload()
    } finally {
      this.parsing = false
    }
  }

  /**
   * The held frame is an EAGER message the caller's receive matched, of at most `max` bytes
   * (bytes.length): its payload goes straight into `bytes`, with no Request, posted receive or
   * unexpected record; returns its length. RECV_PARTIAL: the payload stopped short (a peer
   * stalled past FRAME_REST_MS, or its stream ended); `target`, `filled` and the parser's state
   * are set for the rest, and the caller gives the frame its `sink` (a posted receive).
   */
  takeEagerSync (bytes: Uint8Array, max: number): number {
    const length = this.length
    if (length === 0) return 0
    const target = length === max ? bytes : bytes.subarray(0, length)
    const o = this.blockOpts
    o.spinUs = FRAME_SPIN_US
    o.timeoutMs = FRAME_REST_MS + length / SYNC_BYTES_PER_MS
    this.parsing = true
    try {
      const p = Math.max(0, this.blockRead(target, o, length))
      if (p === length) return length
      this.target = target
      this.filled = p
      this.st = St.Payload
      return RECV_PARTIAL
    } finally {
      this.parsing = false
    }
  }

  /**
   * The blocking tier's header read: the first bytes are waited for up to `waitMs` (spinning up
   * to `spinUs` of it, then asleep on the peer's doorbell), the rest of a header once begun up to
   * FRAME_REST_MS (FRAME_SPIN_US spinning). HEADER_BYTES when a whole header is in `hdr`; 0 when
   * nothing came in time, at the end of the stream (`atEof`), or when the header stopped short
   * (its bytes kept in `hdr`, hdrFill: the rest comes as 'data'); -1 when sync I/O is unavailable.
   */
  private readHeaderSync (spinUs: number, waitMs: number): number {
    const o = this.blockOpts
    const hdr = this.hdr
    o.spinUs = spinUs
    o.timeoutMs = Math.max(waitMs, NO_WAIT_MS)
    // Only a wait that is all spin can tell it was preempted (a sleep on the doorbell may end late
    // anyway): the clock is read for those alone, not on every blocking receive.
    const allSpin = spinUs > 0 && waitMs * 1000 <= spinUs
    const t0 = allSpin ? performance.now() : 0
    o.yield = this.yieldSpin || (spinUs > 0 && contended())
    let got = this.blockRead(hdr, o, HEADER_BYTES)
    if (got === 0 && allSpin) spinEnded(t0, waitMs * 1000, performance.now())
    if (got <= 0 || got === HEADER_BYTES) return got
    if (this.atEof) return 0
    o.spinUs = FRAME_SPIN_US
    o.timeoutMs = FRAME_REST_MS
    got += Math.max(0, this.blockRead(hdr.subarray(got), o))
    if (got < HEADER_BYTES) { this.hdrFill = got; return 0 }
    return got
  }

  /**
   * The blocking tier's payload read, right behind its header: FRAME_REST_MS at most, plus the
   * bytes' time. False when it stopped short (the rest comes as 'data').
   */
  private blockPayload (): boolean {
    const target = this.target!
    const o = this.blockOpts
    o.spinUs = FRAME_SPIN_US
    o.timeoutMs = FRAME_REST_MS + target.length / SYNC_BYTES_PER_MS
    const p = Math.max(0, this.blockRead(target, o))
    if (p < target.length) { this.filled = p; return false }
    this.st = St.Header
    this.handler.onPayload(this)
    return true
  }

  /**
   * readIntoSync for the blocking tier: the bytes read (fewer than `view` at the end of the
   * stream, which sets `atEof`, or on a timeout), or -1 when sync I/O is unavailable now.
   */
  private blockRead (view: Uint8Array, o: SyncOpts, len = view.length): number {
    try {
      const n = syncRead(this.socket!, view, o)
      if (n < len) this.atEof = true
      return n
    } catch (err) {
      const e = err as { code?: string, bytesRead?: number }
      if (e.code === 'ETIMEDOUT') return e.bytesRead ?? 0
      if (e.code === 'ERR_FASTSOCK_SYNC_UNAVAILABLE') return -1
      this.atEof = true // ECONNRESET, EPIPE: the peer is gone
      return 0
    }
  }
}

/**
 * syncRead of a large payload bounded by progress: each readIntoSync waits at most `opts`'
 * bound for more bytes; the loop goes on while every call moves some (the peer is writing) and
 * returns the count read once a call moved none (ETIMEDOUT is not thrown: the count says it).
 */
function streamRead (socket: Socket, view: Uint8Array, opts: SyncOpts): number {
  let done = 0
  for (;;) {
    try {
      return done + syncRead(socket, done === 0 ? view : view.subarray(done), opts)
    } catch (err) {
      const e = err as { code?: string, bytesRead?: number }
      if (e.code !== 'ETIMEDOUT') { if (done > 0) return done; throw err }
      const r = e.bytesRead ?? 0
      if (r === 0) return done
      done += r
    }
  }
}

/**
 * socket.readIntoSync without capturing stacks: its timeouts are expected (a spin slice that
 * caught nothing) and their Error's stack, captured twice (native, then Node's shape), cost
 * ~9 % of a receiving rank's CPU in a profile of the 8 B message rate.
 */
function syncRead (socket: Socket, view: Uint8Array, opts: SyncOpts): number {
  const limit = Error.stackTraceLimit
  Error.stackTraceLimit = 0
  try {
    return socket.readIntoSync(view, opts)
  } finally {
    Error.stackTraceLimit = limit
  }
}
