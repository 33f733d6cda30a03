/**
 * Rung `shm`: two single-producer/single-consumer byte rings in a shared memfd, one per
 * direction, negotiated over the verified side channel (lib/transports/unix.ts) and set up with
 * SHM_SETUP / SHM_READY (docs/wire-protocol.md). The side-channel socket stays open as the
 * liveness signal. There is no kernel socket in the data path: the fastsock Socket has no
 * `_handle` and its Duplex hooks call into ShmConnection.
 *
 * Event-loop integration: each end's doorbell eventfd is on a uv_poll; a doorbell is rung only
 * when the other side said it sleeps (csrc/shm/ring.h). Before sleeping, a waiting end is
 * busy-polled by its loop's progress engine for a window learned per connection, at most
 * `shmPollUs` (default 200 µs; 0: never), under a per-process CPU cap (docs/polling.md). The
 * synchronous pair (writeSync / readIntoSync) busy-polls for `spinUs` in the calling thread.
 */
import { native, ShmEndpointNative, StreamEndpointNative, isShmEndpoint } from '../native'
import { FastsockError, errnoError, outOfRange } from '../errors'
import * as wire from '../wire'
import { ReadIntoRequest, settleFull } from '../readinto'
import type { OnreadSpec } from '../socket'

const EAGAIN = -11
const ETIMEDOUT = -110
const ECONNRESET = -104
const EPIPE = -32

/** Default ring size per direction: comparable to loopback socket buffers (docs/design.md). */
export const DEFAULT_SHM_RING_BYTES = 1 << 20
const READ_CHUNK_BYTES = 64 * 1024

const STATE_EOF = 1
const STATE_RESET = 2
const STATE_GONE = 4
const STATE_READABLE = 16

/** Default cap of the adaptive polling window of shm connections, µs (docs/polling.md). */
export const DEFAULT_SHM_POLL_US = 200

// Read once per process (every Socket consults them; process.env is a slow lookup).
let pollUsFromEnv: number | undefined | null = null
let ringBytesFromEnv: number | null = null

/** The polling window's cap from FASTSOCK_SHM_POLL_US (µs), else undefined (the rung's default). */
export function configuredPollUs (): number | undefined {
  if (pollUsFromEnv === null) {
    const raw = process.env.FASTSOCK_SHM_POLL_US
    const v = Number(raw)
    pollUsFromEnv = raw !== undefined && raw !== '' && Number.isFinite(v) && v >= 0 && v <= 1e6 ? v : undefined
  }
  return pollUsFromEnv
}

/**
 * The polling window's cap (µs) for `ep`: `pollUs` (the option or FASTSOCK_SHM_POLL_US) when
 * set, else DEFAULT_SHM_POLL_US on shm and 0 on verbs (whose polling does not adapt yet).
 */
export function pollUsFor (ep: StreamEndpointNative, pollUs: number | undefined): number {
  return pollUs ?? (isShmEndpoint(ep) ? DEFAULT_SHM_POLL_US : 0)
}

/** Ring size from FASTSOCK_SHM_RING_BYTES, else the default. */
export function configuredRingBytes (): number {
  if (ringBytesFromEnv === null) {
    const v = Number(process.env.FASTSOCK_SHM_RING_BYTES)
    ringBytesFromEnv = Number.isInteger(v) && v >= 4096 && v <= 256 * 1024 * 1024 && (v & (v - 1)) === 0 ? v : DEFAULT_SHM_RING_BYTES
  }
  return ringBytesFromEnv
}

/** The socket-side hooks a ShmConnection drives (implemented by lib/socket.ts). */
export interface ShmOwner {
  destroyed: boolean
  readableLength: number
  push (chunk: Uint8Array | null): boolean
  read (n: number): unknown
  destroy (err?: Error): unknown
  _fsReadQueue: ReadIntoRequest[] | null
  _fsOnread: OnreadSpec | null
  _fsUnrefTimer (): void
}

interface PendingWrite { bufs: Buffer[], i: number, off: number, cb: (err?: Error | null) => void }

/**
 * Open shm connections of this process. When the process exits normally the kernel would send
 * a FIN on its TCP sockets (a RST where data was left unread); shm has no kernel to do that,
 * so at 'exit' every open connection publishes the same: EOF, or a reset if unread bytes are
 * left. A process killed by a signal leaves no flag: its peer sees the side channel close
 * without EOF, i.e. ECONNRESET.
 */
const live = new Set<ShmConnection>()
let exitHookInstalled = false
function trackLive (c: ShmConnection): void {
  live.add(c)
  if (!exitHookInstalled) {
    exitHookInstalled = true
    process.once('exit', () => { for (const conn of live) conn.close(false) })
  }
}

/**
 * The endpoint's `onevent` before its ShmConnection exists: the endpoint is made during the
 * setup, the connection (which needs the socket) only when it is adopted. `emit` goes to the
 * native side; `bind(fn)` routes it to the connection once there is one.
 */
export function eventRelay (): { emit: () => void, bind: (fn: () => void) => void } {
  let target: (() => void) | null = null
  return { emit: () => target?.(), bind: fn => { target = fn } }
}

/** Reads exactly one side-channel message (no fds expected) from a raw fd, with a timeout. */
function readMessage (fd: number, timeoutMs: number, maxFds: number): Promise<{ message: wire.Message, fds: number[] }> {
  return new Promise((resolve, reject) => {
    native!.waitReadable(fd, timeoutMs, status => {
      if (status === ETIMEDOUT) {
        return reject(new FastsockError('ERR_FASTSOCK_TRANSPORT_TIMEOUT', `shm setup took longer than ${timeoutMs} ms`))
      }
      const r = native!.recvFds(fd, wire.MAX_MESSAGE_BYTES, maxFds)
      if (typeof r === 'number') {
        if (r === EAGAIN) return reject(new FastsockError('ERR_FASTSOCK_HANDSHAKE', 'shm setup: spurious wake-up'))
        return reject(new FastsockError('ERR_FASTSOCK_HANDSHAKE', `shm setup: ${errnoError(r, 'recvmsg').message}`))
      }
      const closeFds = (): void => { for (const f of r.fds) native!.closeFd(f) }
      if (r.bytes.length === 0) {
        closeFds()
        return reject(new FastsockError('ERR_FASTSOCK_HANDSHAKE', 'shm setup: side channel closed'))
      }
      try {
        const parsed = wire.decode(r.bytes)
        if (!parsed || parsed.bytes !== r.bytes.length) throw new FastsockError('ERR_FASTSOCK_HANDSHAKE', 'shm setup: truncated message')
        resolve({ message: parsed.message, fds: r.fds })
      } catch (err) {
        closeFds()
        reject(err)
      }
    })
  })
}

/**
 * Client side, after ACCEPT(shm) on the side channel `fd` (a dup the caller hands over):
 * creates and sends the segment, waits for SHM_READY. Resolves with the connected endpoint;
 * rejects (closing everything) with ERR_FASTSOCK_REJECTED / _HANDSHAKE / _TRANSPORT_TIMEOUT.
 */
export async function clientSetup (fd: number, ringBytes: number, timeoutMs: number,
  onevent: () => void): Promise<ShmEndpointNative> {
  const n = native!
  const fd2 = fd
  let seg: { memfd: number, clientDoorbell: number, serverDoorbell: number } | null = null
  try {
    seg = n.shmCreateSegment(ringBytes, ringBytes)
    const sent = n.sendFds(fd, wire.encodeShmSetup(ringBytes, ringBytes), [seg.memfd, seg.clientDoorbell, seg.serverDoorbell])
    if (sent < 0) throw new FastsockError('ERR_FASTSOCK_HANDSHAKE', `shm setup: ${errnoError(sent, 'sendmsg').message}`)
    const { message } = await readMessage(fd, timeoutMs, 0)
    if (message.type === wire.MessageType.Reject) {
      const err = new FastsockError('ERR_FASTSOCK_REJECTED', `server refused the shm segment: ${message.text}`)
      ;(err as FastsockError & { reason: number }).reason = message.reason
      throw err
    }
    if (message.type !== wire.MessageType.ShmReady) throw new FastsockError('ERR_FASTSOCK_HANDSHAKE', `expected SHM_READY, got type ${message.type}`)
    // The endpoint owns memfd, both doorbells and the side channel from here on.
    const { memfd, clientDoorbell, serverDoorbell } = seg
    seg = null
    fd = -1 // owned (and on failure closed) by the endpoint constructor
    return new n.ShmEndpoint(memfd, ringBytes, ringBytes, true, clientDoorbell, serverDoorbell, fd2, onevent)
  } catch (err) {
    if (seg) for (const f of [seg.memfd, seg.clientDoorbell, seg.serverDoorbell]) n.closeFd(f)
    if (fd >= 0) n.closeFd(fd)
    // Marks a failure of the shm setup itself: the chain may still try `unix`.
    ;(err as { shmSetup?: boolean }).shmSetup = true
    throw err
  }
}

/**
 * Server side, after ACCEPT(shm) went out on the side channel `fd` (a dup the caller hands
 * over): receives SHM_SETUP with its fds, validates them (a hostile client gets REJECT and the
 * server carries on), answers SHM_READY. Resolves with the endpoint.
 */
export async function serverSetup (fd: number, timeoutMs: number, onevent: () => void): Promise<ShmEndpointNative> {
  const n = native!
  let fds: number[] = []
  const refuse = (text: string): never => {
    n.sendFds(fd, wire.encodeReject(wire.RejectReason.Malformed, text), [])
    throw new FastsockError('ERR_FASTSOCK_HANDSHAKE', `shm setup refused: ${text}`)
  }
  try {
    const got = await readMessage(fd, timeoutMs, wire.SHM_SETUP_FDS)
    fds = got.fds
    const m = got.message
    if (m.type !== wire.MessageType.ShmSetup) refuse(`expected SHM_SETUP, got type ${m.type}`)
    if (m.version !== wire.PROTOCOL_VERSION) refuse(`protocol version ${m.version} unsupported; this server speaks ${wire.PROTOCOL_VERSION}`)
    const setup = m as wire.ShmSetup
    if (fds.length !== wire.SHM_SETUP_FDS) refuse(`SHM_SETUP carries ${fds.length} fds, not ${wire.SHM_SETUP_FDS}`)
    if (!n.isEventfd(fds[1]) || !n.isEventfd(fds[2])) refuse('doorbells must be eventfds')
    let ep: ShmEndpointNative
    const [memfd, clientDoorbell, serverDoorbell] = fds
    fds = [] // the endpoint constructor owns them now, also when it throws
    const side = n.dupFd(fd) // the endpoint's liveness fd; `fd` stays ours to answer on
    if (side < 0) {
      for (const f of [memfd, clientDoorbell, serverDoorbell]) n.closeFd(f)
      throw errnoError(side, 'dup')
    }
    try {
      ep = new n.ShmEndpoint(memfd, setup.c2sBytes, setup.s2cBytes, false, serverDoorbell, clientDoorbell, side, onevent)
    } catch (err) {
      refuse((err as Error).message)
    }
    const sent = n.sendFds(fd, wire.encodeShmReady(), [])
    n.closeFd(fd)
    fd = -1
    if (sent < 0) {
      ep!.close(true)
      throw new FastsockError('ERR_FASTSOCK_HANDSHAKE', `shm setup: ${errnoError(sent, 'sendmsg').message}`)
    }
    return ep!
  } catch (err) {
    for (const f of fds) n.closeFd(f)
    if (fd >= 0) n.closeFd(fd)
    throw err
  }
}

/**
 * The Duplex side of an shm connection: what the handle-less Socket's hooks call. Reads go
 * ring -> caller's array (readInto) or ring -> one Buffer per chunk ('data'); writes go
 * caller's bytes -> ring. Backpressure is the ring: when it is full the write's callback waits
 * for the consumer's doorbell, so `write()` returns false and 'drain' follows, as over TCP.
 */
export class ShmConnection {
  readonly ep: StreamEndpointNative
  private readonly owner: ShmOwner
  /** The stream asked for data (Node's _read) and push() has not said stop. */
  private reading = false
  private pending: PendingWrite | null = null
  private eofPushed = false
  private closed = false
  private pumping = false
  /** The transmit ring as one ArrayBuffer (made on the first allocShared). */
  private region: ArrayBuffer | null = null
  /** The outstanding zero-copy loan: where it sits in `region`, and its length. */
  private loan: { offset: number, length: number } | null = null
  /** Final counters, kept after close: [bytesWritten, bytesRead]. */
  private finalCounters: [number, number] = [0, 0]

  constructor (ep: StreamEndpointNative, owner: ShmOwner) {
    this.ep = ep
    this.owner = owner
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
    this.owner._fsUnrefTimer()
    this.pump()
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
    if (this.pending) {
      const p = this.pending
      this.pending = null
      p.cb(errnoError(EPIPE, 'write'))
    }
  }

  ref (): void { if (!this.closed) this.ep.ref() }
  unref (): void { if (!this.closed) this.ep.unref() }

  /** Called by the endpoint's doorbell and liveness watchers, and after any state change. */
  onevent (): void {
    this.pump()
  }

  /** Moves everything that can move now, then arms the doorbells it needs. Re-entrancy safe. */
  pump (): void {
    if (this.pumping || this.closed) return
    this.pumping = true
    try {
      this.pumpLoop()
    } finally {
      this.pumping = false
    }
  }

  private pumpLoop (): void {
    const ep = this.ep
    const owner = this.owner
    for (;;) {
      if (this.closed || owner.destroyed) return
      let progress = false
      // 1. readInto requests, straight from the ring into the caller's arrays.
      const q = owner._fsReadQueue
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
      const ob = owner._fsOnread
      while (ob !== null && this.reading) {
        const u8 = ob.current ?? (ob.current = ob.gen ? ob.gen() : ob.buffer!)
        const n = ep.readInto(u8)
        if (n === 0) break
        progress = true
        owner._fsUnrefTimer()
        if (ob.gen) ob.current = null
        if (ob.callback(n) === false) this.reading = false
        if (this.closed || owner.destroyed) return
      }
      // 2b. 'data' for the stream, one Buffer per chunk.
      while (ob === null && this.reading && !(q !== null && q.length > 0)) {
        // A Buffer, or (verbs) a view into a rendezvous Buffer: push() makes a Buffer of a view
        // without copying (Readable's _uint8ArrayToBuffer).
        const buf = ep.read(READ_CHUNK_BYTES)
        if (buf === null) break
        progress = true
        owner._fsUnrefTimer()
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
          owner._fsUnrefTimer()
          p.cb()
          if (this.closed || owner.destroyed) return
          continue
        }
      }
      // Progress made: go round again; what follows runs once nothing moves.
      if (progress) continue
      // 4. End of stream and peer state, once the ring is drained.
      const queued = owner._fsReadQueue !== null && owner._fsReadQueue.length > 0
      const wantsData = (queued && owner.readableLength === 0) || (this.reading && (ob !== null || !queued))
      const st = ep.state()
      if ((st & STATE_READABLE) === 0 && (wantsData || (st & (STATE_RESET | STATE_GONE)) !== 0)) {
        if (st & STATE_RESET) return void owner.destroy(errnoError(ECONNRESET, 'read'))
        if (st & STATE_EOF) {
          if (!this.eofPushed) {
            this.eofPushed = true
            // As Node's onStreamRead does at EOF: read(0) lets 'end' fire on a paused stream.
            owner.push(null)
            owner.read(0)
            if (this.closed || owner.destroyed) return
          }
        } else if (st & STATE_GONE) {
          return void owner.destroy(errnoError(ECONNRESET, 'read'))
        }
      }
      if (this.pending && (st & STATE_GONE)) {
        const p = this.pending
        this.pending = null
        p.cb(errnoError(EPIPE, 'write'))
        return
      }
      // 5. Nothing moves: sleep on the doorbell, unless arming finds work after all (armRead
      // re-checks the ring after raising the flag, so bytes that landed since step 1/2 looked
      // are never stranded: the producer rings only for an armed consumer).
      let retry = false
      if (wantsData && !this.eofPushed && ((st & STATE_READABLE) !== 0 || !ep.armRead())) retry = true
      if (this.pending && !ep.armWrite()) retry = true
      if (!retry) return
    }
  }

  /** True when the endpoint is a shared ring (shm): loans and synchronous I/O work. */
  get sharedRing (): boolean { return isShmEndpoint(this.ep) }

  /** The endpoint as a shared ring; callers check `sharedRing` first (socket.ts does). */
  private ring (): ShmEndpointNative {
    if (!isShmEndpoint(this.ep)) throw new FastsockError('ERR_FASTSOCK_SHM_ONLY', 'this needs the shm rung (a shared ring)')
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
    if (this.loan !== null) throw new FastsockError('ERR_FASTSOCK_STALE_LOAN', 'allocShared: the previous loan was not written yet')
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
      return new FastsockError('ERR_FASTSOCK_STALE_LOAN', 'write of an allocShared view that is not the current loan (another write came first, or it was resized)')
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

