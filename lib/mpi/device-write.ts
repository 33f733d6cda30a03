/**
 * The write path of one connection of the device (the base of Conn, device-conn.ts, which adds
 * the reading): a header and its eager payload go out as one write. On shm with nothing queued,
 * the write is `writeSync` from a preallocated staging buffer (no allocation, no callback),
 * bounded by a short timeout; what it could not place is written asynchronously. Elsewhere,
 * `cork`, the writes, `uncork` (one writev). Frames written before the handshake is done are
 * queued and flushed by Conn.attach.
 */
import type { Socket } from '../index'
import { HEADER_BYTES, EAGER, putHeader } from './device-wire'
import { peerLost } from './errors'

/** What the device does for the write path (FrameHandler, device-conn.ts, extends it). */
export interface WriteHandler {
  /** The asynchronous write of a send (`req`, as given to ConnWriter.send) finished; `err` when it failed. */
  onWritten (req: unknown, err: Error | null): void
  /** This connection queued an asynchronous write (the fast path must not spin while any is pending). */
  asyncWriter (conn: ConnWriter): void
  /** This connection started a batch of eager frames (flush it on this tick: ConnWriter.flush). */
  batched (conn: ConnWriter): void
}

/** Bytes a staging buffer holds: header + small payload go out in one writeSync. */
const STAGE_BYTES = 64 * 1024 + 32
const SMALL_FRAME = 4096 + 64 // frames up to this many bytes (a collective's 4 KiB + descriptor + header) go through a view of `stage` made once per length
/**
 * Eager payloads up to this size are batched per tick (sendEager); larger ones are written at
 * once, where the copy into the stage would cost more than the native call it saves (measured:
 * batching 64 KiB messages cut osu_bw at 64 KiB from ~2 GB/s to ~0.45 GB/s on the loaded VM).
 */
const BATCH_MAX_PAYLOAD = 4096
/**
 * Per-tick batching of small frames, off unless FASTSOCK_MPI_BATCH=1: measured on the 2-vCPU VM
 * (medians of 3-4 interleaved 10000-iteration runs of bench/mpi-pingpong.js, load 1.6-2.6) it
 * halved the sender's cost per isend (0.45-0.55 -> 0.27-0.33 µs) but added 0.6-0.9 µs to the
 * 8 B ping-pong (2.0-2.2 -> 2.8-3.1 µs RTT/2) and did not raise the 8 B window rate (0.65-0.69
 * M msg/s without, 0.57-0.64 with): the receiver, not the sender, bounds that rate.
 */
const BATCH = process.env.FASTSOCK_MPI_BATCH === '1'
/**
 * writeSync bounds: give up after 50 µs (then asynchronous). The spin budget is set beyond the
 * deadline on purpose: the native wait checks the deadline while spinning, but once its spin
 * budget is spent it sleeps on the doorbell for whole milliseconds (poll(2)'s unit).
 */
const SYNC_WRITE = { spinUs: 1000, timeoutMs: 0.05 }
/** The options of one synchronous read or write (the socket's sync pair). */
export interface SyncOpts { spinUs: number, timeoutMs: number, yield: boolean }
/**
 * A synchronous write or payload read larger than this gets, beyond those bounds, the time its
 * bytes take at SYNC_BYTES_PER_MS (2 GB/s, a third of the ring's copy rate): a 1 MiB rendezvous
 * payload (0.2 + 0.52 ms) streams through the ring while the peer copies it out, instead of
 * timing out half-way into the event loop's path.
 */
export const SYNC_WRITE_BYTES = 64 * 1024
export const SYNC_BYTES_PER_MS = 2e6

/** The staging buffer of a connection that has not written yet (ConnWriter.stage). */
const NO_STAGE = new Uint8Array(0)
const NO_STAGE32 = new Uint32Array(0)
const NO_STAGE_DV = new DataView(new ArrayBuffer(0))

/** The write side of a connection to one peer (world rank `peer`). */
export class ConnWriter {
  readonly peer: number
  socket: Socket | null = null
  /** Frames may flow (handshake done). */
  ready = false
  /** The shm rung: synchronous I/O works. */
  syncIo = false
  /** Frames written before `ready`, in order. */
  protected queued: Array<{ head: Buffer, payload: Uint8Array | null, cb: ((err?: Error | null) => void) | null }> = []
  /** Rendezvous sends waiting for CTS / receives waiting for DATA, by request id. */
  readonly sends = new Map<number, unknown>()
  readonly recvs = new Map<number, unknown>()
  /**
   * The staging buffer of sync sends (header + small payload) and its views. Made at the first
   * staged write (a connection that only receives, or a peer lost before this rank wrote to it,
   * never holds its 64 KiB), released when the peer is lost.
   */
  private stage = NO_STAGE
  private stage32 = NO_STAGE32
  private stageDv = NO_STAGE_DV
  /** Bytes of eager frames batched in `stage` on this tick (sendEager, flush). */
  batchLen = 0
  /** A small frame was written on this tick (the next one is batched; flush clears it). */
  private tickWrote = false
  /** Views of the first n bytes of `stage`, made once per length (a frame's length alternates between calls: barrier, allreduce...). */
  private stageViews: Uint8Array[] = []
  /**
   * Options objects of the sync writes (and of large payload reads: bigOpts), reused (no
   * allocation per call). Made with fractional values so that V8 stores their fields as doubles
   * from the start: made with integers, the first fractional store changed their hidden class
   * and threw away the optimized code of every function that had seen them.
   */
  protected readonly bigOpts: SyncOpts
  /** SYNC_WRITE with this connection's `yield`. */
  private readonly writeOpts: SyncOpts
  readonly handler: WriteHandler

  /** `yieldSpin`: synchronous waits spin with sched_yield() between polls (docs/mpi.md, "Polling"). */
  constructor (peer: number, handler: WriteHandler, yieldSpin: boolean) {
    this.peer = peer
    this.handler = handler
    this.bigOpts = { spinUs: 1000, timeoutMs: 0.5, yield: yieldSpin }
    this.writeOpts = { ...SYNC_WRITE, yield: yieldSpin }
  }

  /**
   * Sends one frame; `payload` follows the header (EAGER, DATA). Returns true when every byte
   * is already in the channel; else the bytes are written asynchronously and, once written,
   * `handler.onWritten(req, err?)` runs (when `req` is given).
   */
  send (kind: number, ctx: number, source: number, tag: number, length: number, sreq: number, rreq: number,
    payload: Uint8Array | null, req: unknown): boolean {
    const n = payload === null ? 0 : payload.length
    if (BATCH && n <= BATCH_MAX_PAYLOAD && this.batch(kind, ctx, source, tag, length, sreq, rreq, payload)) return true
    if (this.batchLen > 0) this.flush()
    const socket = this.socket
    if (this.ready && this.syncIo && socket !== null && socket.writableLength === 0 && !socket.destroyed) {
      if (HEADER_BYTES + n <= STAGE_BYTES) {
        const done = this.writeStaged(kind, ctx, source, tag, length, sreq, rreq, payload, n)
        if (done === HEADER_BYTES + n) return true
        if (done >= 0) {
          // The rest, copied (the stage is reused): the ring was full for 50 µs.
          this.rawWrite(Buffer.from(this.stage.subarray(done, HEADER_BYTES + n)), this.callback(req))
          return false
        }
      } else {
        const head = Buffer.allocUnsafe(HEADER_BYTES)
        putHeader(head, 0, kind, ctx, source, tag, length, sreq, rreq)
        const h = this.trySync(head)
        if (h === HEADER_BYTES) {
          // While the peer's own DATA is due on this connection (recvs), it is writing too and
          // drains nothing until it reads: only the short bound, then the event loop's path,
          // which reads and writes in turn (both spinning a whole payload's bound stalled an
          // exchange of 1 MiB by ~0.5 ms each way).
          const p = this.trySync(payload!, this.recvs.size === 0)
          if (p === n) return true
          if (p >= 0) { this.rawWrite(payload!.subarray(p), this.callback(req)); return false }
        } else if (h >= 0) {
          socket.cork()
          this.rawWrite(head.subarray(h), null)
          this.rawWrite(payload!, this.callback(req))
          socket.uncork()
          return false
        }
      }
    }
    const head = Buffer.allocUnsafe(HEADER_BYTES)
    putHeader(head, 0, kind, ctx, source, tag, length, sreq, rreq)
    const cb = this.callback(req)
    if (!this.ready) { this.queued.push({ head, payload, cb }); return false }
    this.writeAsync(head, payload, cb)
    return false
  }

  /**
   * Comm.sendSync's fast path (Device.sendEagerSync): an EAGER frame of at most a staging
   * buffer's payload, written from the stage with writeSync when this connection can be written
   * synchronously now (shm, handshake done, nothing queued, no batch pending). True when every
   * byte is in the channel, or the part the ring could not take within the sync bound was copied
   * into an asynchronous write (`payload` may be reused either way: MPI's buffered completion);
   * false when nothing was written (the caller takes the general path).
   * `n`: payload.length (the caller's).
   */
  writeEagerNow (ctx: number, source: number, tag: number, payload: Uint8Array, n = payload.length): boolean {
    const socket = this.socket
    if (!this.ready || !this.syncIo || socket === null || this.batchLen > 0 || socket.writableLength > 0 ||
        socket.destroyed || HEADER_BYTES + n > STAGE_BYTES) return false
    const done = this.writeStaged(EAGER, ctx, source, tag, n, 0, 0, payload, n)
    if (done < 0) return false
    if (done < HEADER_BYTES + n) this.rawWrite(Buffer.from(this.stage.subarray(done, HEADER_BYTES + n)), null)
    return true
  }

  /**
   * One frame of at most STAGE_BYTES from the staging buffer (header, then `payload` copied
   * behind it) with one writeSync: the bytes written (all, or part when the ring stayed full for
   * the sync bound: the caller writes the rest from the stage asynchronously), or -1 when sync
   * I/O is unavailable now (nothing written).
   */
  private writeStaged (kind: number, ctx: number, source: number, tag: number, length: number, sreq: number, rreq: number,
    payload: Uint8Array | null, n = payload === null ? 0 : payload.length): number {
    if (this.stage === NO_STAGE) this.makeStage()
    // Host byte order: little-endian on every platform fastsock builds for.
    const h = this.stage32
    h[0] = kind; h[1] = ctx; h[2] = source; h[3] = tag
    h[4] = length % 0x100000000; h[5] = Math.floor(length / 0x100000000); h[6] = sreq; h[7] = rreq
    const stage = this.stage
    if (n > 16) stage.set(payload!, HEADER_BYTES)
    else for (let i = 0; i < n; i++) stage[HEADER_BYTES + i] = payload![i]
    const all = HEADER_BYTES + n
    return this.trySync(this.stageViewOf(all), true, all)
  }

  /**
   * An EAGER frame into this tick's batch (shm, nothing queued): header and payload are copied
   * into the staging buffer behind the frames already there, and written with the others in one
   * writeSync by flush(), on this tick (the device's microtask), before any other frame of this
   * connection, or before a wait spins. The send is complete at once (its array may be reused).
   * False when the frame cannot be batched (Conn.send then).
   */
  sendEager (ctx: number, source: number, tag: number, payload: Uint8Array): boolean {
    return BATCH && payload.length <= BATCH_MAX_PAYLOAD && this.batch(EAGER, ctx, source, tag, payload.length, 0, 0, payload)
  }

  /** A frame with at most BATCH_MAX_PAYLOAD payload bytes into this tick's batch; false when it cannot be batched. */
  private batch (kind: number, ctx: number, source: number, tag: number, length: number, sreq: number, rreq: number, payload: Uint8Array | null): boolean {
    const socket = this.socket
    if (!this.ready || !this.syncIo || socket === null || socket.writableLength > 0 || socket.destroyed) return false
    if (!this.tickWrote) {
      // The first frame of a tick goes straight out (a ping-pong's send is not delayed by a
      // microtask); a second one on the same tick starts the batch.
      this.tickWrote = true
      this.handler.batched(this)
      return false
    }
    if (this.stage === NO_STAGE) this.makeStage()
    const n = payload === null ? 0 : payload.length
    let off = this.batchLen
    if (off + HEADER_BYTES + n > STAGE_BYTES) { this.flush(); off = 0 }
    const d = this.stageDv
    d.setUint32(off, kind, true)
    d.setUint32(off + 4, ctx, true)
    d.setInt32(off + 8, source, true)
    d.setInt32(off + 12, tag, true)
    d.setUint32(off + 16, length % 0x100000000, true)
    d.setUint32(off + 20, Math.floor(length / 0x100000000), true)
    d.setUint32(off + 24, sreq, true)
    d.setUint32(off + 28, rreq, true)
    const stage = this.stage
    if (n <= 16) {
      for (let i = 0; i < n; i++) stage[off + HEADER_BYTES + i] = payload![i]
    } else {
      stage.set(payload!, off + HEADER_BYTES)
    }
    this.batchLen = off + HEADER_BYTES + n
    return true
  }

  /** Writes this tick's batch of eager frames (see sendEager); what the ring cannot take now goes asynchronously. */
  flush (): void {
    this.tickWrote = false
    const all = this.batchLen
    if (all === 0) return
    this.batchLen = 0
    const socket = this.socket
    if (socket === null || socket.destroyed) return // lost: the loss is reported by the close
    const done = socket.writableLength === 0 ? this.trySync(this.stageViewOf(all)) : -1
    if (done === all) return
    this.rawWrite(Buffer.from(this.stage.subarray(done < 0 ? 0 : done, all)), null)
  }

  /** Allocates the staging buffer (see `stage`). */
  private makeStage (): void {
    this.stage = new Uint8Array(new ArrayBuffer(STAGE_BYTES))
    this.stage32 = new Uint32Array(this.stage.buffer, 0, HEADER_BYTES / 4)
    this.stageDv = new DataView(this.stage.buffer)
  }

  /** The peer is lost: drops the staging buffer and the socket (destroyed: nothing more is written). */
  release (): void {
    this.ready = false
    this.socket = null
    this.stage = NO_STAGE
    this.stage32 = NO_STAGE32
    this.stageDv = NO_STAGE_DV
    this.stageViews = []
    this.batchLen = 0
  }

  /** The first `n` bytes of `stage`: a cached view up to SMALL_FRAME bytes, else a new one. */
  private stageViewOf (n: number): Uint8Array {
    return n > SMALL_FRAME ? this.stage.subarray(0, n) : (this.stageViews[n] ??= this.stage.subarray(0, n))
  }

  /** The write callback of an asynchronous send: handler.onWritten(req, err), or null without `req`. */
  private callback (req: unknown): ((err?: Error | null) => void) | null {
    if (req === null || req === undefined) return null
    const handler = this.handler
    return (err?: Error | null) => handler.onWritten(req, err ?? null)
  }

  /**
   * writeSync of `bytes`: the count written (all, or part on timeout); -1 when sync I/O is
   * unavailable now. Bounded by SYNC_WRITE, plus the bytes' time at SYNC_BYTES_PER_MS past
   * SYNC_WRITE_BYTES when `streaming` (the peer is reading meanwhile).
   */
  private trySync (bytes: Uint8Array, streaming = true, n = bytes.length): number {
    const limit = Error.stackTraceLimit
    Error.stackTraceLimit = 0 // a timeout is expected here: no stack to capture
    let done = 0
    try {
      if (n <= SYNC_WRITE_BYTES || !streaming) return this.socket!.writeSync(bytes, this.writeOpts)
      // Streaming: bounded by progress, not by the whole payload's time. Each writeSync waits at
      // most SYNC_WRITE's bound for ring space; while the peer copies out, every call moves
      // bytes and the loop goes on; a call that moved nothing means the peer is not reading (it
      // computes, or writes its own payload to this rank: an exchange), and the rest goes to
      // the event loop's path after one bound, not after the payload's time (measured: a 2-rank
      // exchange of 1 MiB each way spun ~0.5 ms per side per call that way).
      const o = this.bigOpts
      o.timeoutMs = SYNC_WRITE.timeoutMs
      for (;;) {
        try {
          return done + this.socket!.writeSync(done === 0 ? bytes : bytes.subarray(done), o)
        } catch (err) {
          const e = err as { code?: string, bytesWritten?: number }
          if (e.code !== 'ETIMEDOUT') throw err
          const w = e.bytesWritten ?? 0
          if (w === 0) return done
          done += w
        }
      }
    } catch (err) {
      const e = err as { code?: string, bytesWritten?: number }
      if (e.code === 'ETIMEDOUT') return done + (e.bytesWritten ?? 0)
      return done > 0 ? done : -1 // unavailable (queued writes), or the peer is gone: the async write reports it
    } finally {
      Error.stackTraceLimit = limit
    }
  }

  protected rawWrite (bytes: Uint8Array, cb: ((err?: Error | null) => void) | null): void {
    this.handler.asyncWriter(this)
    if (cb === null) this.socket!.write(bytes)
    else this.socket!.write(bytes, cb)
  }

  protected writeAsync (head: Buffer, payload: Uint8Array | null, cb: ((err?: Error | null) => void) | null): void {
    const socket = this.socket!
    if (socket.destroyed) { if (cb !== null) process.nextTick(cb, peerLost(this.peer, 'connection closed')); return }
    if (payload === null || payload.length === 0) { this.rawWrite(head, cb); return }
    socket.cork()
    socket.write(head)
    this.rawWrite(payload, cb)
    socket.uncork()
  }

  /** Fails the frames queued before the handshake (the peer is lost). */
  failQueued (err: Error): void {
    const q = this.queued
    this.queued = []
    for (const f of q) if (f.cb !== null) f.cb(err)
  }
}
