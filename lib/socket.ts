/**
 * L6, fastsock's Socket: a `net.Socket` that connects through the failover chain (lib/chain.ts)
 * and adopts the Channel a rung made (lib/socket/adopt.ts).
 *
 * On a channel with a kernel handle (unix, rsocket's bridge, smc, sdp, tcp) the socket keeps
 * Node's own handle, so every `net` behaviour is Node's. On a handle-less channel (shm, verbs)
 * its Duplex hooks call the stream core (lib/stream/endpoint-stream.ts). The socket reads the
 * channel's capabilities and hooks, never a rung's name. What this class adds:
 * - `transport`: which rung carries the connection;
 * - the TCP view of a channel without a TCP socket: remote/local address and port as the
 *   application asked for them, consistent on both ends (docs/design.md);
 * - typed arrays: `write()`/`end()` take any TypedArray or DataView (sent as its raw bytes,
 *   without a copy), `readInto()` fills a caller's typed array, and `onread.buffer` may be any
 *   typed array.
 */
import * as os from 'os'
import type { TransportName } from './transports/names'
import { ReadIntoRequest, targetBytes, feed, failAll } from './stream/readinto'
import type { EndpointStream } from './stream/endpoint-stream'
import { ReadIntoError, ShmOnlyError, SyncUnavailableError, errnoError, invalidArgType, outOfRange } from './errors'
import { originals } from './originals'
import type { SmcInfo, TcpView } from './contract'
import { connectThroughChain } from './chain'
import { kState, SocketState } from './socket/state'
import { prepareOptions, SocketOptions, kAccepted, AcceptedInfo } from './socket/options'
import { initFastsock, chainHost, reinitialize, clearIdleTimer, NODE_CONNECT_PUBLISHES, publishClientSocket, recordClose } from './socket/connect'
export { NODE_CONNECT_PUBLISHES, publishClientSocket }
import { installAccessors, asBuffer } from './socket/accessors'
import { drainBuffered } from './socket/drain'

export { kAccepted, kState }
export type { SocketOptions, AcceptedInfo }

const ECONNRESET = os.constants.errno.ECONNRESET

/** Node's own net.Socket (never the preload hook's replacement). */
const NodeSocket = originals.Socket

type AnyFn = (...args: any[]) => any // eslint-disable-line @typescript-eslint/no-explicit-any

/** The socket's stream core when synchronous I/O works on it; else throws why not. */
function syncStream (sock: SocketImpl): EndpointStream {
  const st = sock[kState]
  if (!st.caps.syncIo || st.stream === null) {
    throw new SyncUnavailableError(`synchronous I/O needs the shm rung (this socket is on ${sock.transport ?? 'no transport'})`)
  }
  if (sock.destroyed) throw errnoError(-32, 'write')
  return st.stream
}

/** The sync pair's view: any TypedArray, DataView or Buffer, else ERR_INVALID_ARG_TYPE. */
function syncView (view: unknown, method: string): ArrayBufferView {
  if (!ArrayBuffer.isView(view)) throw invalidArgType(`${method}: view must be a TypedArray, DataView or Buffer, got ${view === null ? 'null' : typeof view}`)
  return view
}

/** The sync pair's `opts`: undefined or an object, else ERR_INVALID_ARG_TYPE. */
function syncOptions (opts: unknown): { spinUs?: unknown, timeoutMs?: unknown, yield?: unknown } {
  if (opts === undefined) return NO_SYNC_OPTIONS
  if (typeof opts !== 'object' || opts === null) throw invalidArgType(`options must be an object, got ${opts === null ? 'null' : typeof opts}`)
  return opts
}
const NO_SYNC_OPTIONS = Object.freeze({})

/**
 * An option of the sync pair (`spinUs`, `timeoutMs`): a number >= 0, `dflt` when undefined.
 * Throws ERR_INVALID_ARG_TYPE (not a number) or ERR_OUT_OF_RANGE (negative, NaN).
 */
function syncNumber (v: unknown, name: string, dflt: number): number {
  if (v === undefined) return dflt
  if (typeof v !== 'number') throw invalidArgType(`options.${name} must be a number, got ${typeof v}`)
  if (!(v >= 0)) throw outOfRange(`options.${name} must be >= 0, got ${v}`)
  return v
}

/** The sync pair's `yield` option: a boolean, false when undefined; ERR_INVALID_ARG_TYPE otherwise. */
function syncYield (v: unknown): boolean {
  if (v === undefined) return false
  if (typeof v !== 'boolean') throw invalidArgType(`options.yield must be a boolean, got ${typeof v}`)
  return v
}

/** The bytes of one _writeGeneric request (a chunk, or writev's list of chunks). */
function writeBytes (writev: boolean, data: unknown, encoding: BufferEncoding): number {
  const size = (chunk: unknown, enc: BufferEncoding): number => typeof chunk === 'string' ? Buffer.byteLength(chunk, enc) : (chunk as Uint8Array).byteLength
  if (!writev) return size(data, encoding)
  let n = 0
  for (const e of data as Array<{ chunk: unknown, encoding: BufferEncoding }>) n += size(e.chunk, e.encoding)
  return n
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
  /** @internal fastsock's state (lib/socket/state.ts) */
  declare [kState]: SocketState
  /**
   * Connects through the failover chain: `connect(port[, host][, cb])`, `connect(options[, cb])`
   * or `connect(path[, cb])` (a UNIX path: Node's own, transport 'unix'). Emits
   * 'transportAttempt' ({ transport }) per rung tried and 'transportAttemptFailed'
   * ({ transport, error }) per failure, then Node's events. If every rung fails and TCP is not
   * in the chain: 'error' with an AggregateError, code ERR_FASTSOCK_ALL_TRANSPORTS_FAILED.
   */
  override connect (...args: unknown[]): this {
    if (this.destroyed) reinitialize(this)
    if (NODE_CONNECT_PUBLISHES) publishClientSocket(this)
    connectThroughChain(chainHost(this), args)
    return this
  }

  /**
   * @internal Node's _destroy, except while the chain runs (connecting, no handle yet): then
   * 'close' comes a loop turn later with its hadError flag, as it would from a handle.
   */
  override _destroy (err: Error | null, cb: (err?: Error | null) => void): void {
    const self = this as unknown as { _handle: unknown, _server: { _connections: number, _emitCloseIfDrained?: () => void } | null, resetAndClosing?: boolean }
    const st = this[kState]
    const stream = st.stream
    st.resetFlag?.close()
    st.stopAttempt?.()
    if (st.life !== null) recordClose(this, st, err)
    if (self._handle || (!this.connecting && !stream)) return super._destroy(err, cb)
    if (stream) {
      stream.close(self.resetAndClosing === true)
      self.resetAndClosing = false
    }
    ;(this as unknown as { connecting: boolean }).connecting = false
    clearIdleTimer(this)
    cb(err)
    setImmediate(() => this.emit('close', !!err))
    if (self._server) {
      self._server._connections--
      self._server._emitCloseIfDrained?.()
    }
  }

  /** Node's _read; on a handle-less channel, starts moving endpoint bytes into the stream. */
  override _read (n: number): void {
    const stream = this[kState].stream
    if (stream) return stream.read()
    return super._read(n)
  }

  /** @internal Node's write path (after connect; also replayed for writes queued while connecting). */
  _writeGeneric (writev: boolean, data: unknown, encoding: BufferEncoding, cb: (err?: Error | null) => void): void {
    const st = this[kState]
    const stream = st.stream
    if (stream === null || this.connecting) {
      if (st.caps.pipeStandIn) {
        // A UNIX socket fails a write at once (EPIPE) when the peer has closed; TCP accepts the
        // first such write (the peer answers with a RST) and fails the next. Do as TCP: the first
        // EPIPE is a write whose bytes are lost (a TLS close_notify to a peer that already left
        // must not error), later ones are errors; so is a first write larger than the send
        // buffer (TCP would have taken only part of it before the RST failed the rest).
        const done = cb
        cb = (err?: Error | null) => {
          if (err && (err as NodeJS.ErrnoException).code === 'EPIPE' && !st.peerGone && !st.resetFlag?.raised()) {
            st.peerGone = true
            if (st.sendBufferBytes === 0 || writeBytes(writev, data, encoding) <= st.sendBufferBytes) return done(null)
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
    stream.write(bufs, cb)
  }

  /**
   * Node's _final; on a handle-less channel, publishes EOF once every write is in the endpoint;
   * with a `beforeFinal` hook (smc), runs it first (once the kernel sent every byte).
   */
  override _final (cb: (err?: Error | null) => void): void {
    const st = this[kState]
    if (st.stream && !this.connecting) return st.stream.final(cb)
    const nodeFinal = (NodeSocket.prototype as unknown as { _final: AnyFn })._final
    const before = st.hooks.beforeFinal
    if (before && !this.connecting) return before(this, () => nodeFinal.call(this, cb))
    return nodeFinal.call(this, cb)
  }

  /** Node's; on a handle-less channel with onread, also restarts the reads a callback's `false` stopped. */
  override resume (): this {
    const st = this[kState]
    if (st.stream && st.onread && !this.connecting) st.stream.read()
    return super.resume()
  }

  override pause (): this {
    const st = this[kState]
    if (st.stream && st.onread) st.stream.stopReading()
    return super.pause()
  }

  override ref (): this {
    const stream = this[kState].stream
    if (stream) {
      stream.ref()
      return this
    }
    return super.ref()
  }

  override unref (): this {
    const stream = this[kState].stream
    if (stream) {
      stream.unref()
      return this
    }
    return super.unref()
  }

  /**
   * On a handle-less channel (shm, verbs): destroys with a reset (the peer gets ECONNRESET), like
   * a TCP RST. On a UNIX stream socket standing in for TCP (unix, rsocket: no RST exists): raises
   * the channel's reset flag, then destroys: a fastsock peer reads the end of the stream as
   * ECONNRESET; without a flag (rsocket, a server that predates it) the peer sees an orderly
   * close (Node's would throw ERR_INVALID_HANDLE_TYPE for the pipe handle). While connecting,
   * once connected, as Node's. Otherwise Node's.
   */
  override resetAndDestroy (): this {
    const st = this[kState]
    if (this.connecting && st.stream === null && !(this as unknown as { _handle: unknown })._handle) {
      // The chain runs (no handle yet): as Node's while its TCP handle connects, reset once connected.
      this.once('connect', () => this.resetAndDestroy())
      return this
    }
    if (st.stream) {
      ;(this as unknown as { resetAndClosing: boolean }).resetAndClosing = true
      this.destroy()
      return this
    }
    if (st.caps.pipeStandIn) {
      st.resetFlag?.raise()
      this.destroy()
      return this
    }
    return super.resetAndDestroy()
  }

  /**
   * Writes every byte of `view` (any TypedArray, DataView or Buffer) before returning: on `shm`
   * straight into the ring, busy-polling for up to `spinUs` (default 50) µs when it is full, then
   * sleeping in this thread. `yield: true` calls sched_yield() between the polls (Open MPI's
   * yield-when-idle: for more spinning threads than CPUs, a peer waiting for this CPU runs at
   * once instead of after the time slice). For a peer in another thread or process (a peer on this thread's
   * event loop could never read: `timeoutMs` bounds the wait). Returns the byte count. Throws
   * ERR_FASTSOCK_SYNC_UNAVAILABLE off the shm rung or with asynchronous writes still queued,
   * ERR_INVALID_ARG_TYPE for a `view` or option of the wrong type, ERR_OUT_OF_RANGE for a
   * negative option, EPIPE/ECONNRESET when the peer is gone, ETIMEDOUT after timeoutMs (0: none;
   * the error's `bytesWritten` says how far it got).
   */
  writeSync (view: ArrayBufferView, opts?: { spinUs?: number, timeoutMs?: number, yield?: boolean }): number {
    const stream = syncStream(this)
    if (this.writableLength > 0) {
      throw new SyncUnavailableError('writeSync with asynchronous writes still queued')
    }
    const bytes = syncView(view, 'writeSync')
    const o = syncOptions(opts)
    const spinUs = syncNumber(o.spinUs, 'spinUs', 50)
    const timeoutMs = syncNumber(o.timeoutMs, 'timeoutMs', 0)
    const yieldSpin = syncYield(o.yield)
    this._unrefTimer()
    return stream.writeSync(bytes, spinUs, timeoutMs, yieldSpin)
  }

  /**
   * Fills `view` from the stream before returning (fewer bytes only at end of stream), busy-
   * polling the ring for up to `spinUs` (default 50) µs, then sleeping in this thread (see
   * writeSync). Bytes already buffered in the socket are taken first. Returns the byte count.
   * Throws as writeSync (ERR_FASTSOCK_SYNC_UNAVAILABLE also with readInto() requests pending),
   * ECONNRESET when the peer reset, ETIMEDOUT (with `bytesRead`).
   */
  readIntoSync (view: ArrayBufferView, opts?: { spinUs?: number, timeoutMs?: number, yield?: boolean }): number {
    const stream = syncStream(this)
    const st = this[kState]
    syncView(view, 'readIntoSync')
    const o = syncOptions(opts)
    const spinUs = syncNumber(o.spinUs, 'spinUs', 50)
    const timeoutMs = syncNumber(o.timeoutMs, 'timeoutMs', 0)
    const yieldSpin = syncYield(o.yield)
    this._unrefTimer()
    if (this.readableLength === 0) return stream.readIntoSync(view, spinUs, timeoutMs, yieldSpin)
    // Bytes already buffered in the stream come first.
    if (st.readQueue !== null && st.readQueue.length > 0) {
      throw new SyncUnavailableError('readIntoSync with readInto() requests pending')
    }
    const bytes = targetBytes(view)
    const q: ReadIntoRequest[] = [{ view, bytes, filled: 0, settle: () => {} }]
    const saved = st.readQueue
    st.readQueue = q
    try {
      drainBuffered(this)
    } finally {
      st.readQueue = saved
    }
    const filled = q.length ? q[0].filled : bytes.length
    if (filled === bytes.length) return filled
    return filled + stream.readIntoSync(bytes.subarray(filled), spinUs, timeoutMs, yieldSpin)
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
    const st = this[kState]
    if (!st.caps.zeroCopyLoan || st.stream === null) {
      throw new ShmOnlyError(`allocShared needs the shm rung (this socket is on ${this.transport ?? 'no transport'})`)
    }
    return st.stream.allocShared(byteLength)
  }

  /**
   * The protocol counters of a socket on a native endpoint rung, or null elsewhere. On `verbs`:
   * { eagerBytes, peerEagerBytes, recvBuffers, credits, rndvThreshold (bytes), eagerSent,
   * rndvSent, rndvReceived, rndvDirect (READs straight into a readInto array), creditMessages,
   * starved, regCacheHits, regCacheMisses, regCacheEvictions, regCacheBytes, regCacheEntries,
   * regCacheCapacity, device, iwarp }.
   */
  transportStats (): Record<string, number | string | boolean> | null {
    const st = this[kState]
    return st.caps.stats && st.stream !== null && !this.destroyed ? st.stream.stats() : null
  }

  /**
   * On an AF_SMC socket (the smc rung's, either end): what the kernel really runs the connection
   * on, from smc_diag: `{ mode: 'SMCR' | 'SMCD' | 'TCP', fallbackReason, fallbackText, peerDiagnosis }`
   * ('TCP': SMC fell back to TCP inside the socket, `fallbackReason` says why, and `transport`
   * is then 'tcp'). null on other sockets, or when the kernel does not list the socket (closed).
   */
  smcInfo (): SmcInfo | null {
    const st = this[kState]
    return st.caps.smcInfo && st.hooks.smcInfo ? st.hooks.smcInfo(this) : null
  }

  /** Node's idle-timer refresh (net.Socket's `_unrefTimer`). */
  declare _unrefTimer: () => void

  _getpeername (this: SocketImpl): object {
    const view = this[kState].view
    return view ? view.remote : (NodeSocket.prototype as unknown as { _getpeername: AnyFn })._getpeername.call(this)
  }

  _getsockname (this: SocketImpl): object {
    const view = this[kState].view
    return view ? view.local : (NodeSocket.prototype as unknown as { _getsockname: AnyFn })._getsockname.call(this)
  }

  /** Like net's `end()`, and `data` may be any TypedArray or DataView. */
  override end (data?: unknown, encoding?: unknown, cb?: unknown): this {
    return (NodeSocket.prototype.end as AnyFn).call(this, asBuffer(data), encoding, cb)
  }

  /**
   * Node's stream hook for incoming bytes: pending readInto requests are served first (one copy,
   * from the read buffer into the caller's array), the rest goes on to the stream as usual. The
   * end of a stream whose peer raised the reset flag (pipeStandIn) is ECONNRESET, as a RST is.
   */
  override push (chunk: unknown, encoding?: BufferEncoding): boolean {
    const st = this[kState]
    if (chunk === null && st.resetFlag !== null && st.resetFlag.raised()) {
      this.destroy(errnoError(-ECONNRESET, 'read'))
      return false
    }
    const q = st.readQueue
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
    const st = this[kState]
    if (st.onread !== null) {
      throw new ReadIntoError('readInto is not available on a socket created with the onread option', 0)
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
    if (st.readQueue === null) {
      st.readQueue = []
      this.once('close', () => failAll(st.readQueue!, 'the socket closed', this.errored))
    }
    const q = st.readQueue
    q.push(req)
    if (q.length === 1) drainBuffered(this)
    if (q.length > 0) {
      if (st.stream) st.stream.pump()
      else this.read(0)
    }
    return promise
  }
}

installAccessors(SocketImpl.prototype)

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
  ;(self as SocketImpl)[kState] = prepared.state // before Node's constructor, which may call the hooks
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

/** The TCP view a fastsock socket on a fast channel reports, or null (Node's own addresses). */
export function tcpViewOf (socket: object): TcpView | null {
  return (socket as Partial<SocketImpl>)[kState]?.view ?? null
}

/** False for a fastsock socket on a handle-less channel (shm, verbs): no kernel handle to pass. */
export function hasKernelHandle (socket: object): boolean {
  return (socket as Partial<SocketImpl>)[kState]?.stream == null
}

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
