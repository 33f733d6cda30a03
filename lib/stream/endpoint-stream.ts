/**
 * L2, the stream core for handle-less endpoints (see EndpointStream). A socket on shm or verbs
 * has no kernel handle (`_handle` is null; docs/design.md, "The stream core"); its Duplex hooks
 * (`_read`, `_writeGeneric`, `_final`, `_destroy`, ref/unref, the byte counters) call one EndpointStream,
 * which moves bytes between the endpoint (lib/contract.ts StreamEndpoint) and the
 * socket's stream: pending readInto requests first, then `onread`, then 'data'.
 *
 * Event-loop integration: the endpoint calls `onevent` from its uv_polls (doorbells, liveness);
 * the pump moves what can move and re-arms. A waiting endpoint with a polling window (`pollUs`,
 * handed to `ep.setPollUs`; on by default where the channel has `adaptivePolling`) is busy-polled
 * by its loop's progress engine before it sleeps (docs/polling.md); writeSync / readIntoSync
 * busy-poll for `spinUs` in the calling thread.
 */
import { native } from '../native'
import { StaleLoanError, errnoError, outOfRange, ERRNO } from '../errors'
import type { StreamEndpoint } from '../contract'
import { ReadIntoRequest, settleFull } from './readinto'
import type { OnreadSpec } from './onread'
import { debug } from '../debug'
import { configuredHelperNice } from '../config'

let helpersNiced = false
/**
 * Once per process, when its first busy-polling endpoint starts: the V8 platform's worker threads
 * (concurrent compilation, marking, sweeping) go to nice configuredHelperNice() (default 19; 0
 * leaves them alone), so that when every CPU is busy it is they that wait, not a main thread
 * that is polling for its peer's reply: their preemption of polling main threads was the cause
 * of most millisecond round trips measured (docs/polling.md, "Where a millisecond round trip
 * goes"). They still get every idle CPU. worker_threads and libuv's pool are not touched.
 */
function yieldHelperThreads (): void {
  if (helpersNiced) return
  helpersNiced = true
  const nice = configuredHelperNice()
  if (nice === 0 || native?.niceHelperThreads === undefined) return
  const n = native.niceHelperThreads(nice)
  debug('poll', 'V8 helper threads at nice %d: %d changed', nice, n)
}

const { ETIMEDOUT, ECONNRESET, EPIPE } = ERRNO

/** Largest Buffer one 'data' event carries. */
const READ_CHUNK_BYTES = 64 * 1024

/** The endpoint state bits (csrc/stream_state.h, exported by the addon). */
const S = native?.streamState ?? { EOF: 1, RESET: 2, GONE: 4, CLOSED: 8, READABLE: 16 }

/** The socket the stream core drives: Node's Duplex and net.Socket names. */
export interface StreamSocket {
  readonly destroyed: boolean
  readonly readableLength: number
  push (chunk: Uint8Array | null): boolean
  read (n: number): unknown
  destroy (err?: Error): unknown
  /** net.Socket's idle-timer refresh. */
  _unrefTimer (): void
}

/** The socket's read-side state the stream core consults on every pump (read live). */
export interface StreamState {
  /** Pending readInto requests, in call order. */
  readQueue: ReadIntoRequest[] | null
  /** The onread option: reads go to its buffer, no 'data'. */
  onread: OnreadSpec | null
}

/**
 * Open endpoint streams of this process. When the process exits normally the kernel would send
 * a FIN on its TCP sockets (a RST where data was left unread); a handle-less endpoint has no
 * kernel to do that, so at 'exit' every open one publishes the same: EOF, or a reset if unread
 * bytes are left. A process killed by a signal leaves no flag: its peer sees the liveness
 * channel close without EOF, i.e. ECONNRESET.
 */
const live = new Set<EndpointStream>()
let exitHookInstalled = false
function trackLive (c: EndpointStream): void {
  live.add(c)
  if (!exitHookInstalled) {
    exitHookInstalled = true
    process.once('exit', () => { for (const conn of live) conn.close(false) })
  }
}

/**
 * The one stream core of every handle-less endpoint (shm, verbs): what the socket's Duplex hooks
 * call, written once (libuv's uv__stream_open is the model: a transport sets up, the stream core
 * does reads, writes and shutdown). Reads go endpoint -> caller's array (readInto) or endpoint ->
 * one Buffer per chunk ('data'); writes go caller's bytes -> endpoint. Backpressure is the
 * endpoint's: when it takes no more, the write's callback waits for its writable event, so
 * `write()` returns false and 'drain' follows, as over TCP. Loans and synchronous I/O need a
 * endpoint with those members (StreamEndpoint's optional ones); the socket offers them only where
 * the channel's capabilities, derived from those members, say so.
 */
export class EndpointStream {
  readonly ep: StreamEndpoint
  private readonly owner: StreamSocket
  private readonly st: StreamState
  /** The stream asked for data (Node's _read) and push() has not said stop. */
  private reading = false
  /** The write in progress (the ring took only part of it): its chunks, where it stands, its callback. */
  private wBufs: Buffer[] | null = null
  private wIndex = 0
  private wOff = 0
  private wCb: ((err?: Error | null) => void) | null = null
  private eofPushed = false
  private closed = false
  private pumping = false
  /** A pump that reads was asked for while a write-only one ran (see write()): run it next tick. */
  private readsDeferred = false
  /** The transmit ring as one ArrayBuffer (made on the first allocShared). */
  private region: ArrayBuffer | null = null
  /** The outstanding zero-copy loan: where it sits in `region`, and its length. */
  private loan: { offset: number, length: number } | null = null
  /** Final counters, kept after close: [bytesWritten, bytesRead]. */
  private finalCounters: [number, number] = [0, 0]
  /**
   * Called once at close: the adopter unbinds the endpoint's event callback there. The native
   * endpoint holds that callback in a strong (global) reference, and the callback holds this
   * stream and its socket: left bound, every closed connection would stay reachable forever.
   */
  onClose: (() => void) | null = null
  /** The user's ref()/unref() (Node's handle ref state): true until unref(). */
  private userRef = true
  /** Whether the endpoint's watchers hold the event loop now (they start ref'd). */
  private held = true
  /** In Node's _read with nothing buffered: read one chunk, the one that read() call returns. */
  private syncRead = false
  /** A pump is queued for the next tick (see read()). */
  private tickQueued = false
  /** Bytes were delivered since the endpoint's last event (this loop turn, as libuv sees it). */
  private recentData = false
  /** EOF seen right after data: pushed a loop turn later, as libuv reports it (see pumpLoop). */
  private eofWait = false
  private readonly onTick = (): void => { this.tickQueued = false; this.pump() }
  private readonly onEofTurn = (): void => { this.eofWait = false; this.recentData = false; this.pump() }

  /**
   * Drives `ep` for `owner` (the socket), reading its readInto queue and onread spec from `st`.
   * `pollUs` > 0: the cap (µs) of the endpoint's adaptive busy-polling window (docs/polling.md).
   */
  constructor (ep: StreamEndpoint, owner: StreamSocket, st: StreamState, pollUs: number) {
    this.ep = ep
    this.owner = owner
    this.st = st
    if (pollUs > 0) { ep.setPollUs(pollUs); yieldHelperThreads() }
    trackLive(this)
    this.syncRef()
  }

  /**
   * Bytes handed to write() so far, as Node's handle counts them (at dispatch): what is in the
   * endpoint plus what of the write in progress is still waiting for room.
   */
  get bytesWritten (): number {
    return this.closed ? this.finalCounters[0] : this.ep.counters()[0] + this.unwritten()
  }

  /** Bytes taken from the endpoint, each counted as its chunk is handed to the stream. */
  get bytesRead (): number { return this.closed ? this.finalCounters[1] : this.ep.counters()[1] }

  /**
   * Node's _read. As libuv's uv_read_start: reading starts and holds the loop. Bytes already in
   * the endpoint are read now only when the stream has nothing buffered, and then one chunk (the
   * one the stream's read() call returns at once): a read-ahead would hand the stream a chunk
   * that is counted in bytesRead before an earlier one was emitted as 'data'. Otherwise the next
   * tick reads, and pushes then go straight to 'data' listeners.
   */
  read (): void {
    this.reading = true
    if (this.owner.readableLength > 0) {
      if (!this.tickQueued) {
        this.tickQueued = true
        process.nextTick(this.onTick)
      }
      this.syncRef()
      return
    }
    this.syncRead = true
    try {
      this.pump()
    } finally {
      this.syncRead = false
    }
  }

  /** onread's callback returned false, or the socket paused: stop reading the ring. */
  stopReading (): void {
    this.reading = false
    this.syncRef()
  }

  /**
   * Node's _writeGeneric for chunks (strings already encoded by the caller). As libuv's
   * uv_try_write: what fits goes into the endpoint now, in this call (also when called from a
   * callback the pump is running: a write then destroy() in a 'data' listener reaches the
   * peer), and the callback runs at once when everything fit; the rest waits for room.
   */
  write (bufs: Buffer[], cb: (err?: Error | null) => void): void {
    if (this.closed) return cb(errnoError(EPIPE, 'write'))
    this.wBufs = bufs
    this.wIndex = 0
    this.wOff = 0
    this.wCb = cb
    this.owner._unrefTimer()
    this.moveWrite()
    // The rest waits for room: a write-only pump (the running pump, when nested, does). Called
    // from Node's Writable (_write/_writev, inside its clearBuffer), no reader code may run here:
    // a 'data' handler emitted from here that writes again (a corked window, say) has those
    // writes buffered by clearBuffer, which drops them (resetBuffer) once _writev returns. What
    // is in the ring is read on the endpoint's next event: its read side stays armed.
    if (this.wBufs !== null) this.pump(false)
  }

  /** Node's _final: a FIN once every write is in the ring. */
  final (cb: (err?: Error | null) => void): void {
    if (!this.closed) this.ep.shutdown()
    cb()
  }

  /**
   * Tears down: a RST when `reset` or when bytes were left unread, else a FIN (the peer still
   * reads what is in the ring, every byte written before, then EOF).
   */
  close (reset: boolean): void {
    if (this.closed) return
    live.delete(this)
    this.finalCounters = this.ep.counters()
    this.finalCounters[0] += this.unwritten()
    this.closed = true
    this.ep.close(reset) // a RST also when bytes were left unread (decided natively)
    const onClose = this.onClose
    this.onClose = null
    if (onClose) onClose()
    if (this.wBufs !== null) this.finishWrite(errnoError(EPIPE, 'write'))
  }

  /** The endpoint's protocol counters (an endpoint with `stats()`), or null. */
  stats (): Record<string, number | string | boolean> | null {
    return this.ep.stats?.() ?? null
  }

  /** Node's socket.ref(): the endpoint holds the loop again whenever it is active (syncRef). */
  ref (): void {
    this.userRef = true
    this.syncRef()
  }

  /** Node's socket.unref(): only a write waiting for room holds the loop (as a libuv write request does). */
  unref (): void {
    this.userRef = false
    this.syncRef()
  }

  /**
   * Makes the endpoint's watchers hold the event loop exactly while a TCP handle would: while
   * it reads (Node's _read asked, push() did not say stop, no EOF yet; or readInto requests
   * wait) and the user did not unref() it, or while a write waits for room (libuv's write
   * requests keep the loop alive whatever the handle's ref). The native call happens only on
   * a change.
   */
  private syncRef (): void {
    if (this.closed) return
    const q = this.st.readQueue
    const want = this.wBufs !== null ||
      (this.userRef && !this.eofPushed && (this.reading || (q !== null && q.length > 0)))
    if (want === this.held) return
    this.held = want
    if (want) this.ep.ref()
    else this.ep.unref()
  }

  /** Bytes of the write in progress not in the endpoint yet. */
  private unwritten (): number {
    const bufs = this.wBufs
    if (bufs === null) return 0
    let n = -this.wOff
    for (let i = this.wIndex; i < bufs.length; i++) n += bufs[i].length
    return n
  }

  /** Ends the write in progress: its callback, with `err` or none. */
  private finishWrite (err: Error | null): void {
    const cb = this.wCb!
    this.wBufs = null
    this.wCb = null
    if (err) cb(err)
    else cb()
  }

  /**
   * Moves the write in progress into the endpoint as far as it fits, and ends it (calls back)
   * when every byte is in, or when a loan cannot be published. True when anything moved.
   */
  private moveWrite (): boolean {
    const bufs = this.wBufs!
    let progress = false
    const ep = this.ep
    if (this.loan === null && ep.writev !== undefined && bufs.length - this.wIndex > 1) {
      // A corked batch in one endpoint call (shm: one native commit); then step over the views it took.
      const n = ep.writev(bufs, this.wIndex, this.wOff)
      let i = this.wIndex
      let off = this.wOff + n
      while (i < bufs.length && off >= bufs[i].length) off -= bufs[i++].length
      this.wIndex = i
      this.wOff = off
      if (i < bufs.length) return n > 0
      progress = true
    }
    while (this.wIndex < bufs.length) {
      const b = bufs[this.wIndex]
      if (this.loan !== null && b.buffer === this.region && this.wOff === 0) {
        const err = this.commitLoan(b)
        if (err) {
          this.finishWrite(err)
          return true
        }
        this.wIndex++
        progress = true
        continue
      }
      const n = this.wOff < b.length ? this.ep.write(this.wOff === 0 ? b : b.subarray(this.wOff)) : 0
      this.wOff += n
      if (this.wOff >= b.length) {
        this.wIndex++
        this.wOff = 0
        progress = true
        continue
      }
      return progress || n > 0
    }
    this.owner._unrefTimer()
    this.finishWrite(null)
    return true
  }

  /** Called by the endpoint's doorbell and liveness watchers, and after any state change. */
  onevent (): void {
    this.recentData = false // a new loop turn's event
    this.pump(true, true)
  }

  /**
   * Moves everything that can move now, then arms the doorbells it needs. Re-entrancy safe.
   * `reads` false: the pending write only (no reader code runs; see write()). `turn`: called
   * for the endpoint's own event, i.e. in its turn among the loop's ready connections.
   */
  pump (reads = true, turn = false): void {
    if (this.closed) return
    if (this.pumping) {
      // A running full pump goes round again and sees this; a write-only one defers it.
      if (reads) this.readsDeferred = true
      return
    }
    this.pumping = true
    try {
      this.pumpLoop(reads, turn)
    } finally {
      this.pumping = false
    }
    if (reads) {
      this.readsDeferred = false
    } else if (this.readsDeferred) {
      this.readsDeferred = false
      process.nextTick(() => this.pump())
    }
    this.syncRef()
  }

  private pumpLoop (reads: boolean, turn: boolean): void {
    const ep = this.ep
    const owner = this.owner
    // In Node's _read with nothing buffered: one chunk (see read()).
    let chunksLeft = this.syncRead ? 1 : Infinity
    // Bytes read once a reader ran (a readInto settled, onread or 'data' was called), or in a
    // pump that is not the endpoint's own event, may have arrived after another connection of
    // the loop became ready: the endpoint says whether to leave them for the loop to hand over
    // in their turn (yieldRead; docs/polling.md, "Order across connections"). Once it did,
    // nothing more is read or armed for reading in this pump: its event comes. (Plain locals,
    // no closure over them: this loop runs for every message.)
    let ask = !turn
    for (;;) {
      if (this.closed || owner.destroyed) return
      let progress = false
      // 1. readInto requests, straight from the ring into the caller's arrays.
      const q = reads ? this.st.readQueue : null
      if (q !== null) settleFull(q)
      while (q !== null && q.length > 0 && owner.readableLength === 0) {
        if (ask && ep.yieldRead !== undefined) {
          if (ep.readable() === 0) break // nothing to read (the read below would say so)
          if (ep.yieldRead()) {
            reads = false
            break
          }
        }
        const r = q[0]
        const n = ep.readInto(r.bytes.subarray(r.filled))
        if (n === 0) break
        progress = this.recentData = true
        r.filled += n
        if (r.filled === r.bytes.length) {
          q.shift()
          r.settle(null)
          ask = true
        }
      }
      // 2a. onread: straight into the caller's buffer, as libuv does for Node's onread.
      const ob = reads ? this.st.onread : null
      while (reads && ob !== null && this.reading) {
        // An empty ring still takes the read below, as libuv's does: Node asks onread's buffer()
        // for every read, the one that finds EOF too (test-net-onread-static-buffer counts them).
        if (ask && ep.yieldRead !== undefined && ep.readable() > 0 && ep.yieldRead()) {
          reads = false
          break
        }
        const u8 = ob.current ?? (ob.current = ob.gen ? ob.gen() : ob.buffer!)
        const n = ep.readInto(u8)
        if (n === 0) break
        progress = this.recentData = true
        owner._unrefTimer()
        if (ob.gen) ob.current = null
        // Node calls it as the socket's method (stream[kBufferCb](nread, buf)): `this` is the socket.
        if (ob.callback.call(owner, n) === false) this.reading = false
        ask = true
        if (this.closed || owner.destroyed) return
      }
      // 2b. 'data' for the stream, one Buffer per chunk.
      while (reads && ob === null && this.reading && chunksLeft > 0 && !(q !== null && q.length > 0)) {
        if (ask && ep.yieldRead !== undefined) {
          if (ep.readable() === 0) break // nothing to read (the read below would say so)
          if (ep.yieldRead()) {
            reads = false
            break
          }
        }
        // A Buffer, or (verbs) a view into a rendezvous Buffer: push() makes a Buffer of a view
        // without copying (Readable's _uint8ArrayToBuffer).
        const buf = ep.read(READ_CHUNK_BYTES)
        if (buf === null) break
        progress = this.recentData = true
        chunksLeft--
        owner._unrefTimer()
        if (!owner.push(buf)) this.reading = false
        ask = true
        if (this.closed || owner.destroyed) return
      }
      // 3. The write in progress into the ring.
      if (this.wBufs !== null && this.moveWrite()) {
        if (this.closed || owner.destroyed) return
        progress = true
      }
      // Progress made: go round again; what follows runs once nothing moves.
      if (progress) continue
      // 4. End of stream and peer state, once the ring is drained.
      const queued = this.st.readQueue !== null && this.st.readQueue.length > 0
      const wantsData = reads && ((queued && owner.readableLength === 0) ||
        (this.reading && chunksLeft > 0 && (ob !== null || !queued)))
      const st = ep.state()
      if (reads && (st & S.READABLE) === 0 && (wantsData || (st & (S.RESET | S.GONE)) !== 0)) {
        if (st & S.RESET) return void owner.destroy(errnoError(ECONNRESET, 'read'))
        if (st & S.EOF) {
          if (!this.eofPushed && !this.eofWait) {
            if (this.recentData) {
              // libuv reports EOF a loop turn after a read that did not fill its buffer (http's
              // agent relies on it: a keep-alive socket is reused before the server's FIN is seen).
              this.eofWait = true
              setImmediate(this.onEofTurn)
            } else {
              this.eofPushed = true
              // As Node's onStreamRead does at EOF: read(0) lets 'end' fire on a paused stream.
              owner.push(null)
              owner.read(0)
              if (this.closed || owner.destroyed) return
            }
          }
        } else if (st & S.GONE) {
          return void owner.destroy(errnoError(ECONNRESET, 'read'))
        }
      }
      if (this.wBufs !== null && (st & S.GONE)) {
        this.finishWrite(errnoError(EPIPE, 'write'))
        return
      }
      // 5. Nothing moves: sleep on the doorbell, unless arming finds work after all (armRead
      // re-checks the ring after raising the flag, so bytes that landed since step 1/2 looked
      // are never stranded: the producer rings only for an armed consumer).
      let retry = false
      if (wantsData && !this.eofPushed && !this.eofWait && ((st & S.READABLE) !== 0 || !ep.armRead())) retry = true
      if (this.wBufs !== null && !ep.armWrite()) retry = true
      if (!retry) return
    }
  }

  /**
   * The endpoint's optional members for loans and synchronous I/O. The socket calls those only
   * where the channel's capabilities (derived from these members) say so: a missing one here is
   * a bug of the caller.
   */
  private ring (): Required<StreamEndpoint> {
    return this.ep as Required<StreamEndpoint>
  }

  /**
   * A view of `n` free bytes at the ring's head, for the caller to fill and then `write()`
   * without a copy (the iceoryx "loan"). Null when the ring has fewer than `n` free bytes now
   * (wait for 'drain' and ask again) or a write is still queued. One loan at a time; write it
   * before anything else.
   */
  allocShared (n: number): Uint8Array | null {
    const ep = this.ring()
    if (this.closed) throw errnoError(EPIPE, 'write')
    if (this.region === null) this.region = ep.txRegion()
    const size = this.region.byteLength / 2
    if (!Number.isInteger(n) || n <= 0 || n > size) {
      throw outOfRange(`allocShared: byteLength must be an integer in [1, ${size}] (the ring size), got ${n}`)
    }
    if (this.loan !== null) throw new StaleLoanError('allocShared: the previous loan was not written yet')
    if (this.wBufs !== null || ep.writable() < n) return null
    const offset = ep.txHeadOffset()
    this.loan = { offset, length: n }
    return new Uint8Array(this.region, offset, n)
  }

  /** Publishes a loaned buffer in place, or reports why it cannot be. */
  private commitLoan (b: Buffer): Error | null {
    const loan = this.loan!
    this.loan = null
    const ep = this.ring()
    if (b.byteOffset !== loan.offset || b.length > loan.length || ep.txHeadOffset() !== loan.offset) {
      return new StaleLoanError('write of an allocShared view that is not the current loan (another write came first, or it was resized)')
    }
    ep.commit(b.length)
    return null
  }

  /** writeSync: every byte into the ring, busy-polling then sleeping in this thread. */
  writeSync (view: ArrayBufferView, spinUs: number, timeoutMs: number, yieldSpin: boolean): number {
    if (this.closed) throw errnoError(EPIPE, 'write')
    try {
      // (no fourth argument unless set: one napi_typeof fewer per call)
      return yieldSpin ? this.ring().writeSync(view, spinUs, timeoutMs, true) : this.ring().writeSync(view, spinUs, timeoutMs)
    } catch (err) {
      throw syncError(err)
    }
  }

  /** readIntoSync: fill `view` from the ring (fewer bytes only at EOF). */
  readIntoSync (view: ArrayBufferView, spinUs: number, timeoutMs: number, yieldSpin: boolean): number {
    if (this.closed) throw errnoError(ECONNRESET, 'read')
    try {
      return yieldSpin ? this.ring().readIntoSync(view, spinUs, timeoutMs, true) : this.ring().readIntoSync(view, spinUs, timeoutMs)
    } catch (err) {
      throw syncError(err)
    }
  }
}

/** The native sync calls' errors in Node's shape (code, errno, syscall), counts kept. */
function syncError (err: unknown): Error {
  const e = err as Error & { code?: string, bytesRead?: number, bytesWritten?: number }
  if (e.code !== 'ECONNRESET' && e.code !== 'ETIMEDOUT') return e
  const out = errnoError(e.code === 'ECONNRESET' ? ECONNRESET : ETIMEDOUT, 'read')
  return Object.assign(out, { bytesRead: e.bytesRead, bytesWritten: e.bytesWritten })
}

