/**
 * fastsock's Socket: a `net.Socket` that connects through the failover chain (lib/chain.ts).
 *
 * On the kernel rungs (`unix`, `tcp`) the socket keeps Node's own handle, so every `net`
 * behaviour is Node's. What this class adds:
 * - `transport`: which rung carries the connection;
 * - the TCP view on the `unix` rung: remote/local address and port as the application asked for
 *   them, consistent on both ends (docs/design.md);
 * - typed arrays: `write()`/`end()` take any TypedArray or DataView (sent as its raw bytes,
 *   without a copy), `readInto()` fills a caller's typed array, and `onread.buffer` may be any
 *   typed array.
 */
import * as net from 'net'
import { TransportName, parseTransports, defaultTransports } from './transports/names'
import { TcpView } from './address'
import { ReadIntoRequest, targetBytes, feed, failAll, settleFull } from './readinto'
import type { Established, PipeHandle } from './transports/unix'
import type { StreamEndpointNative } from './native'
import { ShmConnection, configuredRingBytes, configuredPollUs, pollUsFor } from './transports/shm'
import { FastsockError, errnoError, outOfRange } from './errors'
import { originals } from './originals'
import { smcInfoOf, SmcInfo, whenSent } from './transports/smc'

/** Node's own net.Socket (never the preload hook's replacement). */
const NodeSocket = originals.Socket

/** Options of `new Socket()` and `connect()`: Node's, plus the chain's. */
export interface SocketOptions extends net.SocketConstructorOpts {
  /** Rungs to try, in order (default: FASTSOCK_TRANSPORTS, else the whole chain). */
  transports?: TransportName[] | string
  /** Upper bound for one fast rung's attempt, in ms (default 1000); TCP keeps Node's own. */
  transportTimeoutMs?: number
  /** shm ring size per direction in bytes, a power of two (default 1 MiB or FASTSOCK_SHM_RING_BYTES). */
  shmRingBytes?: number
  /**
   * shm: the cap, in µs, of the adaptive busy-polling window: a waiting connection is polled by
   * its event loop's progress engine for a window learned from its recent wait times (KVM
   * haltpoll's x2/÷2 rule) before it sleeps on its doorbell, under a per-process CPU cap
   * (docs/polling.md). Default 200, or FASTSOCK_SHM_POLL_US; 0 never spins. In [0, 1e6], else
   * ERR_OUT_OF_RANGE. (verbs: a fixed poll after each wake-up, default 0.)
   */
  shmPollUs?: number
  /** Node's caller-supplied receive buffer, extended: `buffer` may be any typed array. */
  onread?: { buffer: ArrayBufferView | (() => ArrayBufferView), callback: (bytes: number, buf: ArrayBufferView) => boolean | void }
}

/** Internal: what a server hands a socket it accepted on a fast rung. */
export const kAccepted = Symbol('fastsock.accepted')
export interface AcceptedInfo {
  transport: TransportName
  view: TcpView | null
  handshakeRead: number
  handshakeWritten: number
  /** shm: the endpoint, and how to route its events */
  shm?: StreamEndpointNative | null
  bindShm?: ((onevent: () => void) => void) | null
  shmPollUs?: number
  /** The handle is an AF_SMC socket (accepted on an smc listener), whatever the kernel runs it on. */
  smcHandle?: boolean
}

const DEFAULT_TRANSPORT_TIMEOUT_MS = 1000

/** The onread option as fastsock keeps it: Node's shape plus the buffer in use (shm). */
export interface OnreadSpec {
  buffer: Uint8Array | null
  gen: (() => Uint8Array) | null
  /** shm: the buffer the next read goes into */
  current: Uint8Array | null
  callback: (n: number) => boolean | void
}

const duplexWrite = NodeSocket.prototype.write
const noop = (): void => {}

/** A Node-internal symbol found by its description on an object that carries it. */
function nodeSymbol (obj: object, description: string): symbol | undefined {
  return Object.getOwnPropertySymbols(obj).find(s => s.description === description)
}

function asBuffer (chunk: unknown): unknown {
  if (ArrayBuffer.isView(chunk) && !(chunk instanceof Uint8Array)) {
    return Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
  }
  return chunk
}

function asUint8 (view: ArrayBufferView): Uint8Array {
  return view instanceof Uint8Array ? view : new Uint8Array(view.buffer, view.byteOffset, view.byteLength)
}

type AnyFn = (...args: any[]) => any // eslint-disable-line @typescript-eslint/no-explicit-any

/** What the constructor keeps from the options until Node's own initialization has run. */
interface PreparedOptions {
  nodeOptions: net.SocketConstructorOpts
  transports: TransportName[] | null
  timeoutMs: number
  fsOnread: OnreadSpec | null
  accepted: AcceptedInfo | undefined
  ringBytes: number
  pollUs: number | undefined
}

/**
 * Validates fastsock's options (throws ERR_FASTSOCK_UNKNOWN_TRANSPORT, RangeError
 * ERR_OUT_OF_RANGE) and splits them from Node's, before any stream state exists.
 */
function prepareOptions (options?: SocketOptions | number): PreparedOptions {
  let opts: SocketOptions & { [kAccepted]?: AcceptedInfo } = typeof options === 'number' ? { fd: options } : { ...options }
  const transports = opts.transports !== undefined ? parseTransports(opts.transports) : null
  const timeoutMs = opts.transportTimeoutMs ?? DEFAULT_TRANSPORT_TIMEOUT_MS
  if (typeof timeoutMs !== 'number' || !(timeoutMs > 0)) throw outOfRange(`options.transportTimeoutMs must be a positive number of ms, got ${String(timeoutMs)}`)
  // Node's onread takes a Uint8Array (or a function returning one): hand it a byte view of
  // the caller's typed array and give the caller's callback its own array back.
  let fsOnread: OnreadSpec | null = null
  const onread = opts.onread
  if (onread && typeof onread === 'object' && typeof onread.callback === 'function') {
    const userCb = onread.callback
    if (ArrayBuffer.isView(onread.buffer)) {
      const view = onread.buffer
      const spec: OnreadSpec = { buffer: asUint8(view), gen: null, current: null, callback: (n: number) => userCb(n, view) }
      fsOnread = spec
      opts = { ...opts, onread: { buffer: spec.buffer, callback: spec.callback } as never }
    } else if (typeof onread.buffer === 'function') {
      const gen = onread.buffer
      let last: ArrayBufferView | null = null
      const spec: OnreadSpec = {
        buffer: null,
        gen: () => { last = gen(); return asUint8(last) },
        current: null,
        callback: (n: number) => userCb(n, last!)
      }
      fsOnread = spec
      opts = { ...opts, onread: { buffer: spec.gen, callback: spec.callback } as never }
    }
  }
  const accepted = opts[kAccepted]
  const ringBytes = opts.shmRingBytes ?? configuredRingBytes()
  if (!Number.isInteger(ringBytes) || ringBytes < 4096 || ringBytes > 256 * 1024 * 1024 || (ringBytes & (ringBytes - 1)) !== 0) {
    throw outOfRange(`options.shmRingBytes must be a power of two from 4096 to 268435456, got ${String(ringBytes)}`)
  }
  delete opts.transports
  delete opts.transportTimeoutMs
  delete opts.shmRingBytes
  const pollUs = opts.shmPollUs ?? accepted?.shmPollUs ?? configuredPollUs()
  if (pollUs !== undefined && (typeof pollUs !== 'number' || !(pollUs >= 0) || pollUs > 1e6)) throw outOfRange(`options.shmPollUs must be a number of µs in [0, 1e6], got ${String(pollUs)}`)
  delete opts.shmPollUs
  return { nodeOptions: opts as net.SocketConstructorOpts, transports, timeoutMs, fsOnread, accepted, ringBytes, pollUs }
}

/** fastsock's part of the constructor, once Node's net.Socket constructor has run on `self`. */
function initFastsock (self: SocketImpl, p: PreparedOptions): void {
  const opts = p.nodeOptions as net.SocketConstructorOpts & { handle?: unknown, pauseOnCreate?: boolean }
  const accepted = p.accepted
  self.transport = accepted?.transport ?? (opts.fd !== undefined || opts.handle ? 'tcp' : null)
  self._fsTransports = p.transports ?? defaultTransports()
  self._fsTimeoutMs = p.timeoutMs
  self._fsView = accepted?.view ?? null
  self._fsSmcHandle = accepted?.smcHandle === true
  self._fsHsRead = accepted?.handshakeRead ?? 0
  self._fsHsWritten = accepted?.handshakeWritten ?? 0
  self._fsReadQueue = null
  self._fsWriteImpl = null
  self._fsOnread = p.fsOnread
  self._fsShm = null
  self._fsShmRingBytes = p.ringBytes
  self._fsShmPollUs = p.pollUs
  if (accepted?.shm) {
    // Accepted on shm: no handle, so start the flow Node would start for one.
    self._fsAttachShm(accepted.shm, accepted.bindShm!)
    if (opts.pauseOnCreate) self.pause()
    else self.read(0)
  }
}

/**
 * The methods and accessors of fastsock's Socket. Never constructed itself: `Socket` (below) is
 * the constructor, an ES5-style function (core calls `ReflectApply(net.Socket, this, ...)` and
 * `net.Socket.call(this)` on the replacement, which an ES class constructor refuses), whose
 * prototype is this class's prototype.
 */
export class SocketImpl extends NodeSocket {
  /** The rung carrying this connection: null until connected (or when never connected). */
  declare transport: TransportName | null
  /** @internal chain configuration */
  declare _fsTransports: TransportName[]
  /** @internal */
  declare _fsTimeoutMs: number
  /** @internal TCP view on a rung without a TCP socket */
  declare _fsView: TcpView | null
  /** @internal the handle is an AF_SMC socket (smc rung; the kernel may run it on TCP) */
  declare _fsSmcHandle: boolean
  /** @internal handshake bytes on the handle's counters */
  declare _fsHsRead: number
  declare _fsHsWritten: number
  /** @internal pending readInto requests */
  declare _fsReadQueue: ReadIntoRequest[] | null
  /** @internal what Node assigned to `this.write` (writeAfterFIN), or null for the default */
  declare _fsWriteImpl: AnyFn | null
  /** @internal the onread option as Node sees it (no 'data', no readInto then) */
  declare _fsOnread: OnreadSpec | null
  /** @internal the shm connection when transport === 'shm' (no _handle then) */
  declare _fsShm: ShmConnection | null
  /** @internal */
  declare _fsShmRingBytes: number
  /** @internal */
  declare _fsShmPollUs: number | undefined

  /** @internal */
  _fsAttachShm (ep: StreamEndpointNative, bind: (onevent: () => void) => void): void {
    const conn = new ShmConnection(ep, this)
    this._fsShm = conn
    const pollUs = pollUsFor(ep, this._fsShmPollUs)
    if (pollUs > 0) ep.setPollUs(pollUs)
    bind(() => conn.onevent())
  }

  /**
   * Connects through the failover chain: `connect(port[, host][, cb])`, `connect(options[, cb])`
   * or `connect(path[, cb])` (a UNIX path: Node's own, transport 'unix'). Emits
   * 'transportAttempt' ({ transport }) per rung tried and 'transportAttemptFailed'
   * ({ transport, error }) per failure, then Node's events. If every rung fails and TCP is not
   * in the chain: 'error' with an AggregateError, code ERR_FASTSOCK_ALL_TRANSPORTS_FAILED.
   */
  override connect (...args: unknown[]): this {
    // Loaded here to keep the module graph acyclic (chain.ts needs this class).
    const { connectThroughChain } = require('./chain') as typeof import('./chain')
    return connectThroughChain(this, args) as this
  }

  /** @internal Node's own connect, without re-initializing stream state set since. */
  _fsNodeConnect (normalized: unknown[]): this {
    this.transport = 'tcp'
    const self = this as unknown as { _undestroy: AnyFn }
    if (this.connecting) self._undestroy = noop // a write()/end() queued while the chain ran stays queued
    try {
      ;(NodeSocket.prototype.connect as AnyFn).call(this, normalized)
    } finally {
      delete (self as { _undestroy?: AnyFn })._undestroy
    }
    return this as this
  }

  /** @internal Takes over the connected pipe handle the unix rung established. */
  _fsAdopt (est: Established, lookup: [string, number, string] | null): void {
    if (est.shm !== null) {
      // A native endpoint without a kernel handle (shm, verbs).
      if (this.destroyed) return void est.shm.close(true)
      this._fsAttachShm(est.shm, est.bindShm!)
      this.transport = est.transport
      this._fsView = est.view
      ;(this as unknown as { connecting: boolean }).connecting = false
      this._fsUnrefTimer()
      if (lookup) this.emit('lookup', null, lookup[0], lookup[1], lookup[2])
      this.emit('connect')
      this.emit('ready')
      if (!this.isPaused() || (this._fsReadQueue && this._fsReadQueue.length > 0)) this.read(0)
      this._fsShm!.pump()
      return
    }
    const probe = est.probe as unknown as { _handle: PipeHandle | null }
    const handle = probe._handle!
    if (this.destroyed) {
      est.probe!.destroy()
      return
    }
    const owner = nodeSymbol(handle, 'owner_symbol')
    if (!owner) throw new Error('cannot adopt a pipe handle on this Node version (no owner_symbol)')
    probe._handle = null
    est.probe!.destroy()
    const self = this as unknown as Record<string | symbol, unknown>
    ;(handle as unknown as Record<symbol, unknown>)[owner] = this
    self._handle = handle
    const asyncId = nodeSymbol(this, 'async_id_symbol')
    if (asyncId) self[asyncId] = handle.getAsyncId()
    const ob = this._fsOnread
    if (ob) {
      // What Node's initSocketHandle does for a handle it creates: the first buffer.
      let u8 = ob.buffer
      if (ob.gen) {
        u8 = ob.gen()
        const kBuffer = nodeSymbol(this, 'kBuffer')
        if (kBuffer) self[kBuffer] = u8
      }
      handle.useUserBuffer(u8!)
    }
    self._sockname = null
    self._peername = null
    this.transport = est.transport
    this._fsSmcHandle = est.smcHandle === true
    this._fsView = est.view
    this._fsHsRead = est.handshakeRead
    this._fsHsWritten = est.handshakeWritten
    ;(this as unknown as { connecting: boolean }).connecting = false
    this._fsUnrefTimer()
    if (lookup) this.emit('lookup', null, lookup[0], lookup[1], lookup[2])
    this.emit('connect')
    this.emit('ready')
    for (const b of est.leftover) this.push(b)
    if (!this.isPaused() || (this._fsReadQueue && this._fsReadQueue.length > 0)) this.read(0)
  }

  /**
   * @internal Node's _destroy, except while the chain runs (connecting, no handle yet): then
   * 'close' comes a loop turn later with its hadError flag, as it would from a handle.
   */
  override _destroy (err: Error | null, cb: (err?: Error | null) => void): void {
    const self = this as unknown as { _handle: unknown, _server: { _connections: number, _emitCloseIfDrained?: () => void } | null, resetAndClosing?: boolean }
    if (self._handle || (!this.connecting && !this._fsShm)) return super._destroy(err, cb)
    if (this._fsShm) {
      this._fsShm.close(self.resetAndClosing === true)
      self.resetAndClosing = false
    }
    ;(this as unknown as { connecting: boolean }).connecting = false
    this.setTimeout(0)
    cb(err)
    setImmediate(() => this.emit('close', !!err))
    if (self._server) {
      self._server._connections--
      self._server._emitCloseIfDrained?.()
    }
  }

  /** Node's _read; on shm, starts moving ring bytes into the stream. */
  override _read (n: number): void {
    if (this._fsShm) return this._fsShm.read()
    return super._read(n)
  }

  /** @internal Node's write path (after connect; also replayed for writes queued while connecting). */
  _writeGeneric (writev: boolean, data: unknown, encoding: BufferEncoding, cb: (err?: Error | null) => void): void {
    const shm = this._fsShm
    if (shm === null || this.connecting) {
      if ((this.transport === 'unix' || this.transport === 'rsocket') && this._fsView !== null) {
        // A UNIX socket fails a write at once (EPIPE) when the peer has closed; TCP accepts the
        // first such write (the peer answers with a RST) and fails the next. Do as TCP: the first
        // EPIPE is a write whose bytes are lost (a TLS close_notify to a peer that already left
        // must not error), later ones are errors.
        const done = cb
        cb = (err?: Error | null) => {
          const self = this as unknown as { _fsPeerGone?: boolean }
          if (err && (err as NodeJS.ErrnoException).code === 'EPIPE' && !self._fsPeerGone) {
            self._fsPeerGone = true
            return done(null)
          }
          done(err)
        }
      }
      return (NodeSocket.prototype as unknown as { _writeGeneric: AnyFn })._writeGeneric.call(this, writev, data, encoding, cb)
    }
    let bufs: Buffer[]
    if (writev) {
      const list = data as Array<{ chunk: Buffer | string, encoding: BufferEncoding }>
      bufs = list.map(e => (typeof e.chunk === 'string' ? Buffer.from(e.chunk, e.encoding) : e.chunk))
    } else {
      bufs = [typeof data === 'string' ? Buffer.from(data, encoding) : data as Buffer]
    }
    shm.write(bufs, cb)
  }

  /** Node's _final; on shm, publishes EOF once every write is in the ring; on smc, once the kernel sent every byte. */
  override _final (cb: (err?: Error | null) => void): void {
    if (this._fsShm && !this.connecting) return this._fsShm.final(cb)
    const nodeFinal = (NodeSocket.prototype as unknown as { _final: AnyFn })._final
    // AF_SMC: shut down only once the kernel has sent everything (see whenSent).
    if (this._fsSmcHandle && !this.connecting) return whenSent(this, () => nodeFinal.call(this, cb))
    return nodeFinal.call(this, cb)
  }

  /** Node's; on shm with onread, also restarts the ring reads a callback's `false` stopped. */
  override resume (): this {
    if (this._fsShm && this._fsOnread && !this.connecting) this._fsShm.read()
    return super.resume()
  }

  override pause (): this {
    if (this._fsShm && this._fsOnread) this._fsShm.stopReading()
    return super.pause()
  }

  override ref (): this {
    if (this._fsShm) {
      this._fsShm.ref()
      return this
    }
    return super.ref()
  }

  override unref (): this {
    if (this._fsShm) {
      this._fsShm.unref()
      return this
    }
    return super.unref()
  }

  /**
   * On shm: destroys with a reset (the peer gets ECONNRESET), like a TCP RST. On unix (a UNIX
   * stream socket, which has no RST): destroys, and the peer sees an orderly close (Node's would
   * throw ERR_INVALID_HANDLE_TYPE for the pipe handle). Otherwise Node's.
   */
  override resetAndDestroy (): this {
    if (this._fsShm) {
      ;(this as unknown as { resetAndClosing: boolean }).resetAndClosing = true
      this.destroy()
      return this
    }
    if ((this.transport === 'unix' || this.transport === 'rsocket') && this._fsView) {
      this.destroy()
      return this
    }
    return super.resetAndDestroy()
  }

  /**
   * Writes every byte of `view` (any TypedArray, DataView or Buffer) before returning: on `shm`
   * straight into the ring, busy-polling for up to `spinUs` (default 50) µs when it is full, then
   * sleeping in this thread. For a peer in another thread or process (a peer on this thread's
   * event loop could never read: `timeoutMs` bounds the wait). Returns the byte count. Throws
   * ERR_FASTSOCK_SYNC_UNAVAILABLE off the shm rung or with asynchronous writes still queued,
   * EPIPE/ECONNRESET when the peer is gone, ETIMEDOUT after timeoutMs (0: none).
   */
  writeSync (view: ArrayBufferView, opts?: { spinUs?: number, timeoutMs?: number }): number {
    const shm = this._fsSyncConnection()
    if (this.writableLength > 0) {
      throw new FastsockError('ERR_FASTSOCK_SYNC_UNAVAILABLE', 'writeSync with asynchronous writes still queued')
    }
    if (!ArrayBuffer.isView(view)) throw new TypeError('writeSync: view must be a TypedArray, DataView or Buffer')
    this._fsUnrefTimer()
    return shm.writeSync(view, opts?.spinUs ?? 50, opts?.timeoutMs ?? 0)
  }

  /**
   * Fills `view` from the stream before returning (fewer bytes only at end of stream), busy-
   * polling the ring for up to `spinUs` (default 50) µs, then sleeping in this thread (see
   * writeSync). Bytes already buffered in the socket are taken first. Returns the byte count.
   */
  readIntoSync (view: ArrayBufferView, opts?: { spinUs?: number, timeoutMs?: number }): number {
    const shm = this._fsSyncConnection()
    const spinUs = opts?.spinUs ?? 50
    const timeoutMs = opts?.timeoutMs ?? 0
    this._fsUnrefTimer()
    if (this.readableLength === 0) {
      if (!ArrayBuffer.isView(view)) targetBytes(view) // throws the TypeError
      return shm.readIntoSync(view, spinUs, timeoutMs)
    }
    // Bytes already buffered in the stream come first.
    if (this._fsReadQueue !== null && this._fsReadQueue.length > 0) {
      throw new FastsockError('ERR_FASTSOCK_SYNC_UNAVAILABLE', 'readIntoSync with readInto() requests pending')
    }
    const bytes = targetBytes(view)
    const q: ReadIntoRequest[] = [{ view, bytes, filled: 0, settle: () => {} }]
    const saved = this._fsReadQueue
    this._fsReadQueue = q
    try {
      this._fsDrainBuffered()
    } finally {
      this._fsReadQueue = saved
    }
    const filled = q.length ? q[0].filled : bytes.length
    if (filled === bytes.length) return filled
    return filled + shm.readIntoSync(bytes.subarray(filled), spinUs, timeoutMs)
  }

  /**
   * Zero-copy send on `shm`: a Uint8Array of `byteLength` bytes inside the transmit ring, to
   * fill and pass to `write()`, which then publishes it without copying. Returns null when the
   * ring lacks the room now (or a write is queued): wait for 'drain' and retry. One loan at a
   * time, written before any other write (else the write fails with ERR_FASTSOCK_STALE_LOAN).
   * For a typed view of other elements, the ring head must be aligned (it is when every write
   * so far was a multiple of that element size). Throws ERR_FASTSOCK_SHM_ONLY off shm,
   * RangeError ERR_OUT_OF_RANGE when byteLength exceeds the ring.
   */
  allocShared (byteLength: number): Uint8Array | null {
    if (!this._fsShm?.sharedRing) {
      throw new FastsockError('ERR_FASTSOCK_SHM_ONLY', `allocShared needs the shm rung (this socket is on ${this.transport ?? 'no transport'})`)
    }
    return this._fsShm.allocShared(byteLength)
  }

  /**
   * The protocol counters of a socket on a native endpoint rung, or null elsewhere. On `verbs`:
   * { eagerBytes, peerEagerBytes, recvBuffers, credits, rndvThreshold (bytes), eagerSent,
   * rndvSent, rndvReceived, rndvDirect (READs straight into a readInto array), creditMessages,
   * starved, regCacheHits, regCacheMisses, regCacheEvictions, regCacheBytes, regCacheEntries,
   * regCacheCapacity, device, iwarp }.
   */
  transportStats (): Record<string, number | string | boolean> | null {
    const ep = this._fsShm?.ep as unknown as { stats?: () => Record<string, number | string | boolean> } | undefined
    return ep && typeof ep.stats === 'function' && !this.destroyed ? ep.stats() : null
  }

  private _fsSyncConnection (): ShmConnection {
    if (!this._fsShm?.sharedRing) {
      throw new FastsockError('ERR_FASTSOCK_SYNC_UNAVAILABLE', `synchronous I/O needs the shm rung (this socket is on ${this.transport ?? 'no transport'})`)
    }
    if (this.destroyed) throw errnoError(-32, 'write')
    return this._fsShm
  }

  /**
   * On an AF_SMC socket (the smc rung's, either end): what the kernel really runs the connection
   * on, from smc_diag: `{ mode: 'SMCR' | 'SMCD' | 'TCP', fallbackReason, fallbackText, peerDiagnosis }`
   * ('TCP': SMC fell back to TCP inside the socket, `fallbackReason` says why, and `transport`
   * is then 'tcp'). null on other sockets, or when the kernel does not list the socket (closed).
   */
  smcInfo (): SmcInfo | null {
    return this._fsSmcHandle ? smcInfoOf(this) : null
  }

  /** @internal */
  _fsUnrefTimer (): void {
    (this as unknown as { _unrefTimer: AnyFn })._unrefTimer()
  }

  _getpeername (this: SocketImpl): object {
    return this._fsView ? this._fsView.remote : (NodeSocket.prototype as unknown as { _getpeername: AnyFn })._getpeername.call(this)
  }

  _getsockname (this: SocketImpl): object {
    return this._fsView ? this._fsView.local : (NodeSocket.prototype as unknown as { _getsockname: AnyFn })._getsockname.call(this)
  }

  /** Like net's `end()`, and `data` may be any TypedArray or DataView. */
  override end (data?: unknown, encoding?: unknown, cb?: unknown): this {
    return (NodeSocket.prototype.end as AnyFn).call(this, asBuffer(data), encoding, cb)
  }

  /**
   * Node's stream hook for incoming bytes: pending readInto requests are served first (one copy,
   * from the read buffer into the caller's array), the rest goes on to the stream as usual.
   */
  override push (chunk: unknown, encoding?: BufferEncoding): boolean {
    const q = this._fsReadQueue
    if (q !== null && q.length > 0) {
      if (chunk === null) {
        failAll(q, 'the stream ended')
      } else if (chunk instanceof Uint8Array && this.readableLength === 0) {
        const taken = feed(q, chunk)
        if (taken === chunk.length) return true
        chunk = chunk.subarray(taken)
      }
    }
    return super.push(chunk, encoding)
  }

  /**
   * Reads exactly `lengthElements` elements (default: the rest of the view) of the stream into
   * `view` starting at element `offsetElements` (default 0). Returns a promise of `view`, or
   * calls `cb(err, view)` when given. Bytes are copied once, from the read buffer into `view`,
   * in the host's byte order. Rejects with ERR_FASTSOCK_READINTO (with `bytesRead`) when the
   * stream ends, errors or closes first, and throws at once on a bad view or range
   * (TypeError / RangeError ERR_OUT_OF_RANGE) or when the socket uses `onread`.
   */
  readInto<T extends ArrayBufferView> (view: T, cb: (err: Error | null, view: T) => void): void
  readInto<T extends ArrayBufferView> (view: T, offsetElements?: number, lengthElements?: number): Promise<T>
  readInto<T extends ArrayBufferView> (view: T, offsetElements: number, lengthElements: number | undefined,
    cb: (err: Error | null, view: T) => void): void
  readInto<T extends ArrayBufferView> (view: T, a?: unknown, b?: unknown, c?: unknown): Promise<T> | void {
    let cb: ((err: Error | null, view: T) => void) | undefined
    if (typeof a === 'function') { cb = a as typeof cb; a = undefined }
    else if (typeof b === 'function') { cb = b as typeof cb; b = undefined }
    else if (typeof c === 'function') cb = c as typeof cb
    const bytes = targetBytes(view, a as number | undefined, b as number | undefined)
    if (this._fsOnread !== null) {
      throw new FastsockError('ERR_FASTSOCK_READINTO', 'readInto is not available on a socket created with the onread option')
    }
    let promise: Promise<T> | undefined
    let settle: (err: Error | null) => void
    if (cb) {
      const done = cb
      settle = err => done(err, view)
    } else {
      let res!: (v: T) => void
      let rej!: (e: Error) => void
      promise = new Promise<T>((resolve, reject) => { res = resolve; rej = reject })
      settle = err => (err ? rej(err) : res(view))
    }
    const req: ReadIntoRequest = { view, bytes, filled: 0, settle }
    if (this.readableEnded || this.destroyed) {
      failAll([req], this.destroyed ? 'the socket is destroyed' : 'the stream ended')
      return promise
    }
    if (this._fsReadQueue === null) {
      this._fsReadQueue = []
      this.once('close', () => failAll(this._fsReadQueue!, 'the socket closed', this.errored))
    }
    const q = this._fsReadQueue
    q.push(req)
    if (q.length === 1) this._fsDrainBuffered()
    if (q.length > 0) {
      if (this._fsShm) this._fsShm.pump()
      else this.read(0)
    }
    return promise
  }

  /** @internal Serves pending readInto requests from bytes already in the readable buffer. */
  _fsDrainBuffered (): void {
    const q = this._fsReadQueue!
    settleFull(q)
    const flowingListeners = this.listenerCount('data') > 0
    while (q.length > 0 && this.readableLength > 0) {
      const want = q[0].bytes.length - q[0].filled
      // read(n) emits 'data' for what it returns: keep those bytes from 'data' listeners.
      let chunk: Buffer | null
      if (flowingListeners) {
        const emit = this.emit
        this.emit = function (this: SocketImpl, ev: string | symbol, ...rest: unknown[]) {
          return ev === 'data' ? false : emit.apply(this, [ev, ...rest] as Parameters<typeof emit>)
        } as typeof this.emit
        try {
          chunk = this.read(Math.min(want, this.readableLength))
        } finally {
          delete (this as { emit?: unknown }).emit
        }
      } else {
        chunk = this.read(Math.min(want, this.readableLength))
      }
      if (chunk === null) break
      feed(q, chunk)
      settleFull(q)
    }
    if (q.length > 0 && this.readableEnded) failAll(q, 'the stream ended')
  }
}

const kBytesWrittenName = 'kBytesWritten'
const nodePending = Object.getOwnPropertyDescriptor(NodeSocket.prototype, 'pending')!.get!
const nodeBufferSize = Object.getOwnPropertyDescriptor(NodeSocket.prototype, 'bufferSize')!.get!
Object.defineProperties(SocketImpl.prototype, {
  /** Node's: no handle or connecting. On shm (no handle by design): connecting. */
  pending: {
    configurable: true,
    enumerable: true,
    get (this: SocketImpl): boolean { return this._fsShm ? this.connecting : nodePending.call(this) }
  },
  bufferSize: {
    configurable: true,
    enumerable: true,
    get (this: SocketImpl): number | undefined { return this._fsShm ? this.writableLength : nodeBufferSize.call(this) }
  },
  /** Bytes received from the peer: application bytes only (handshakes are not counted). */
  bytesRead: {
    configurable: true,
    enumerable: true,
    get (this: SocketImpl): number {
      if (this._fsShm) return this._fsShm.bytesRead
      const h = (this as unknown as { _handle: PipeHandle | null })._handle
      const got = h ? h.bytesRead : ((this as unknown as Record<symbol, number>)[nodeSymbol(this, 'kBytesRead')!] ?? 0)
      return got - this._fsHsRead
    }
  },
  /** The base of Node's bytesWritten getter, which adds the queued bytes to it. */
  _bytesDispatched: {
    configurable: true,
    enumerable: false,
    get (this: SocketImpl): number {
      if (this._fsShm) return this._fsShm.bytesWritten
      const h = (this as unknown as { _handle: PipeHandle | null })._handle
      const sent = h ? h.bytesWritten : ((this as unknown as Record<symbol, number>)[nodeSymbol(this, kBytesWrittenName)!] ?? 0)
      return sent - this._fsHsWritten
    }
  }
})

/**
 * `write()` that takes any TypedArray or DataView. An accessor, because Node assigns
 * `socket.write` itself (on connect, and `writeAfterFIN` after the peer's FIN): the assigned
 * function is kept and called with the converted chunk.
 */
function fastWrite (this: SocketImpl, chunk: unknown, encoding?: unknown, cb?: unknown): boolean {
  return (this._fsWriteImpl ?? duplexWrite).call(this, asBuffer(chunk), encoding, cb)
}
Object.defineProperty(SocketImpl.prototype, 'write', {
  configurable: true,
  enumerable: false,
  get () { return fastWrite },
  set (this: SocketImpl, fn: AnyFn) { this._fsWriteImpl = fn === duplexWrite ? null : fn }
})

export interface SocketImpl {
  /** Like net's `write()`, and `chunk` may be any TypedArray or DataView (its raw bytes). */
  write (chunk: string | ArrayBufferView, cb?: (err?: Error | null) => void): boolean
  write (chunk: string | ArrayBufferView, encoding?: BufferEncoding, cb?: (err?: Error | null) => void): boolean
}

/** A fastsock socket: a `net.Socket` with the failover chain and typed arrays (see SocketImpl). */
export interface Socket extends SocketImpl {}

/** `Socket` as a value: `new Socket(options)`, `Socket(options)`, `Socket.call(this, options)`. */
export interface SocketConstructor {
  new (options?: SocketOptions | number): Socket
  (options?: SocketOptions | number): Socket
  readonly prototype: Socket
}

const fsProto = SocketImpl.prototype

/**
 * fastsock's Socket constructor. ES5-style, so that it can stand in for `net.Socket` (the preload
 * hook): `new Socket(opts)`, `Socket(opts)` (returns a new socket, as net.Socket does),
 * `Socket.call(this, opts)` from an ES5 subclass, `class X extends Socket`, and
 * `ReflectApply(net.Socket, this, [opts])` as core's own subclasses (TLSSocket, tty streams) do.
 * On an object whose prototype chain lacks fastsock's prototype (a core subclass set up before
 * the hook), it runs Node's constructor alone, so that object stays exactly Node's.
 * Throws ERR_FASTSOCK_UNKNOWN_TRANSPORT and RangeError ERR_OUT_OF_RANGE on bad options.
 */
function SocketCtor (this: unknown, options?: SocketOptions | number): Socket | void {
  const self = this as object | undefined
  if (new.target === undefined) {
    if (self !== null && typeof self === 'object' && !fsProto.isPrototypeOf(self) &&
        Function.prototype[Symbol.hasInstance].call(NodeSocket, self)) {
      return Reflect.apply(NodeSocket, self, [options]) as void
    }
    if (self === null || typeof self !== 'object' || !fsProto.isPrototypeOf(self)) {
      return new (SocketCtor as unknown as SocketConstructor)(options)
    }
  }
  const prepared = prepareOptions(options)
  Reflect.apply(NodeSocket, self, [prepared.nodeOptions])
  initFastsock(self as SocketImpl, prepared)
}
SocketCtor.prototype = fsProto
Object.defineProperty(fsProto, 'constructor', { value: SocketCtor, writable: true, configurable: true, enumerable: false })
Object.setPrototypeOf(SocketCtor, NodeSocket) // statics, as class inheritance would give
Object.defineProperty(SocketCtor, 'name', { value: 'Socket' })

/**
 * fastsock's Socket (see the module comment): callable with or without `new`, and as
 * `Socket.call(this, options)` from ES5-style subclasses (TLSSocket), as `net.Socket` is.
 */
export const Socket = SocketCtor as unknown as SocketConstructor

/**
 * Installed by the preload hook when `net.Socket` becomes fastsock's: sockets core made with
 * Node's original class (a server's accepted sockets before the hook, stdio streams) still pass
 * `instanceof net.Socket`. Only for `Socket` itself: a subclass (`class X extends Socket`) keeps
 * the ordinary check.
 */
export function installHasInstance (): void {
  if (Object.prototype.hasOwnProperty.call(SocketCtor, Symbol.hasInstance)) return
  Object.defineProperty(SocketCtor, Symbol.hasInstance, {
    configurable: true,
    value: function (this: unknown, obj: unknown): boolean {
      const ordinary = Function.prototype[Symbol.hasInstance]
      if (this === SocketCtor) return ordinary.call(NodeSocket, obj)
      return ordinary.call(this, obj)
    }
  })
}
