/**
 * L2, the stream core for handle-less endpoints (see EndpointStream). A socket on shm or verbs
 * has no kernel handle (`_handle` is null, NET-COMPAT.md); its Duplex hooks (`_read`,
 * `_writeGeneric`, `_final`, `_destroy`, ref/unref, the byte counters) call one EndpointStream,
 * which moves bytes between the endpoint (lib/transports/contract.ts StreamEndpoint) and the
 * socket's stream: pending readInto requests first, then `onread`, then 'data'.
 *
 * Event-loop integration: the endpoint calls `onevent` from its uv_polls (doorbells, liveness);
 * the pump moves what can move and re-arms. A waiting endpoint with a polling window (`pollUs`,
 * handed to `ep.setPollUs`; on by default where the channel has `adaptivePolling`) is busy-polled
 * by its loop's progress engine before it sleeps (docs/polling.md); writeSync / readIntoSync
 * busy-poll for `spinUs` in the calling thread.
 */
import { native, ShmEndpointNative, isShmEndpoint } from '../native'
import { ShmOnlyError, StaleLoanError, errnoError, outOfRange } from '../errors'
import type { StreamEndpoint } from '../transports/contract'
import { ReadIntoRequest, settleFull } from './readinto'
import type { OnreadSpec } from './onread'

const ETIMEDOUT = -110
const ECONNRESET = -104
const EPIPE = -32

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

interface PendingWrite { bufs: Buffer[], i: number, off: number, cb: (err?: Error | null) => void }

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
 * shared ring (`isShmEndpoint`); the socket offers them only where the channel's capabilities say so.
 */
export class EndpointStream {
  readonly ep: StreamEndpoint
  private readonly owner: StreamSocket
  private readonly st: StreamState
  /** The stream asked for data (Node's _read) and push() has not said stop. */
  private reading = false
  private pending: PendingWrite | null = null
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

  /**
   * Drives `ep` for `owner` (the socket), reading its readInto queue and onread spec from `st`.
   * `pollUs` > 0: the cap (µs) of the endpoint's adaptive busy-polling window (docs/polling.md).
   */
  constructor (ep: StreamEndpoint, owner: StreamSocket, st: StreamState, pollUs: number) {
    this.ep = ep
    this.owner = owner
    this.st = st
    if (pollUs > 0) ep.setPollUs(pollUs)
    trackLive(this)
  }

  get bytesWritten (): number { return this.closed ? this.finalCounters[0] : this.ep.counters()[0] }
  get bytesRead (): number { return this.closed ? this.finalCounters[1] : this.ep.counters()[1] }

  /** Node's _read. */
  read (): void {
    this.reading = true
    this.pump()
  }

  /** onread's callback returned false, or the socket paused: stop reading the ring. */
  stopReading (): void {
    this.reading = false
  }

  /** Node's _writeGeneric for chunks (strings already encoded by the caller). */
  write (bufs: Buffer[], cb: (err?: Error | null) => void): void {
    if (this.closed) return cb(errnoError(EPIPE, 'write'))
    this.pending = { bufs, i: 0, off: 0, cb }
    this.owner._unrefTimer()
    // Called from Node's Writable (_write/_writev, inside its clearBuffer): move the bytes now but
    // run no reader code here. A 'data' handler emitted from here that writes again (a corked
    // window, say) has those writes buffered by clearBuffer, which drops them (resetBuffer) once
    // _writev returns: they never reach the ring and the peer waits for them forever. What is
    // in the ring is read on the endpoint's next event: its read side stays armed.
    this.pump(false)
  }

  /** Node's _final: a FIN once every write is in the ring. */
  final (cb: (err?: Error | null) => void): void {
    if (!this.closed) this.ep.shutdown()
    cb()
  }

  /**
   * Tears down: a RST when `reset` or when bytes were left unread, else a FIN (the peer still
   * reads what is in the ring).
   */
  close (reset: boolean): void {
    if (this.closed) return
    live.delete(this)
    this.finalCounters = this.ep.counters()
    this.closed = true
    this.ep.close(reset) // a RST also when bytes were left unread (decided natively)
    const onClose = this.onClose
    this.onClose = null
    if (onClose) onClose()
    if (this.pending) {
      const p = this.pending
      this.pending = null
      p.cb(errnoError(EPIPE, 'write'))
    }
  }

  /** The endpoint's protocol counters (an endpoint with `stats()`: verbs), or null. */
  stats (): Record<string, number | string | boolean> | null {
    const ep = this.ep as StreamEndpoint & { stats?: () => Record<string, number | string | boolean> }
    return typeof ep.stats === 'function' ? ep.stats() : null
  }

  ref (): void { if (!this.closed) this.ep.ref() }
  unref (): void { if (!this.closed) this.ep.unref() }

  /** Called by the endpoint's doorbell and liveness watchers, and after any state change. */
  onevent (): void {
    this.pump()
  }

  /**
   * Moves everything that can move now, then arms the doorbells it needs. Re-entrancy safe.
   * `reads` false: the pending write only (no reader code runs; see write()).
   */
  pump (reads = true): void {
    if (this.closed) return
    if (this.pumping) {
      // A running full pump goes round again and sees this; a write-only one defers it.
      if (reads) this.readsDeferred = true
      return
    }
    this.pumping = true
    try {
      this.pumpLoop(reads)
    } finally {
      this.pumping = false
    }
    if (reads) {
      this.readsDeferred = false
    } else if (this.readsDeferred) {
      this.readsDeferred = false
      process.nextTick(() => this.pump())
    }
  }

  private pumpLoop (reads: boolean): void {
    const ep = this.ep
    const owner = this.owner
    for (;;) {
      if (this.closed || owner.destroyed) return
      let progress = false
      // 1. readInto requests, straight from the ring into the caller's arrays.
      const q = reads ? this.st.readQueue : null
      if (q !== null) settleFull(q)
      while (q !== null && q.length > 0 && owner.readableLength === 0) {
        const r = q[0]
        const n = ep.readInto(r.bytes.subarray(r.filled))
        if (n === 0) break
        progress = true
        r.filled += n
        if (r.filled === r.bytes.length) {
          q.shift()
          r.settle(null)
        }
      }
      // 2a. onread: straight into the caller's buffer, as libuv does for Node's onread.
      const ob = reads ? this.st.onread : null
      while (ob !== null && this.reading) {
        const u8 = ob.current ?? (ob.current = ob.gen ? ob.gen() : ob.buffer!)
        const n = ep.readInto(u8)
        if (n === 0) break
        progress = true
        owner._unrefTimer()
        if (ob.gen) ob.current = null
        if (ob.callback(n) === false) this.reading = false
        if (this.closed || owner.destroyed) return
      }
      // 2b. 'data' for the stream, one Buffer per chunk.
      while (reads && ob === null && this.reading && !(q !== null && q.length > 0)) {
        // A Buffer, or (verbs) a view into a rendezvous Buffer: push() makes a Buffer of a view
        // without copying (Readable's _uint8ArrayToBuffer).
        const buf = ep.read(READ_CHUNK_BYTES)
        if (buf === null) break
        progress = true
        owner._unrefTimer()
        if (!owner.push(buf)) this.reading = false
        if (this.closed || owner.destroyed) return
      }
      // 3. Pending write into the ring.
      if (this.pending) {
        const p = this.pending
        while (p.i < p.bufs.length) {
          const b = p.bufs[p.i]
          if (this.loan !== null && b.buffer === this.region && p.off === 0) {
            const err = this.commitLoan(b)
            if (err) {
              this.pending = null
              p.cb(err)
              return
            }
            p.i++
            progress = true
            continue
          }
          const n = p.off < b.length ? ep.write(p.off === 0 ? b : b.subarray(p.off)) : 0
          p.off += n
          if (p.off >= b.length) { p.i++; p.off = 0; progress = true; continue }
          if (n > 0) progress = true
          break
        }
        if (p.i >= p.bufs.length) {
          this.pending = null
          owner._unrefTimer()
          p.cb()
          if (this.closed || owner.destroyed) return
          continue
        }
      }
      // Progress made: go round again; what follows runs once nothing moves.
      if (progress) continue
      // 4. End of stream and peer state, once the ring is drained.
      const queued = this.st.readQueue !== null && this.st.readQueue.length > 0
      const wantsData = reads && ((queued && owner.readableLength === 0) || (this.reading && (ob !== null || !queued)))
      const st = ep.state()
      if (reads && (st & S.READABLE) === 0 && (wantsData || (st & (S.RESET | S.GONE)) !== 0)) {
        if (st & S.RESET) return void owner.destroy(errnoError(ECONNRESET, 'read'))
        if (st & S.EOF) {
          if (!this.eofPushed) {
            this.eofPushed = true
            // As Node's onStreamRead does at EOF: read(0) lets 'end' fire on a paused stream.
            owner.push(null)
            owner.read(0)
            if (this.closed || owner.destroyed) return
          }
        } else if (st & S.GONE) {
          return void owner.destroy(errnoError(ECONNRESET, 'read'))
        }
      }
      if (this.pending && (st & S.GONE)) {
        const p = this.pending
        this.pending = null
        p.cb(errnoError(EPIPE, 'write'))
        return
      }
      // 5. Nothing moves: sleep on the doorbell, unless arming finds work after all (armRead
      // re-checks the ring after raising the flag, so bytes that landed since step 1/2 looked
      // are never stranded: the producer rings only for an armed consumer).
      let retry = false
      if (wantsData && !this.eofPushed && ((st & S.READABLE) !== 0 || !ep.armRead())) retry = true
      if (this.pending && !ep.armWrite()) retry = true
      if (!retry) return
    }
  }

  /** The endpoint as a shared ring; callers check the channel's capabilities first (socket.ts does). */
  private ring (): ShmEndpointNative {
    if (!isShmEndpoint(this.ep)) throw new ShmOnlyError('this needs a shared ring (the shm rung)')
    return this.ep
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
    if (this.pending !== null || ep.writable() < n) return null
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
  writeSync (view: ArrayBufferView, spinUs: number, timeoutMs: number): number {
    if (this.closed) throw errnoError(EPIPE, 'write')
    try {
      return this.ring().writeSync(view, spinUs, timeoutMs)
    } catch (err) {
      throw syncError(err)
    }
  }

  /** readIntoSync: fill `view` from the ring (fewer bytes only at EOF). */
  readIntoSync (view: ArrayBufferView, spinUs: number, timeoutMs: number): number {
    if (this.closed) throw errnoError(ECONNRESET, 'read')
    try {
      return this.ring().readIntoSync(view, spinUs, timeoutMs)
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

