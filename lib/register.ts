/**
 * The preload hook: `node -r fastsock/register app.js`, `node --import fastsock/register app.mjs`,
 * or `fastsock run -- <command>` (lib/cli/run.ts, which puts it in NODE_OPTIONS). It makes an
 * unmodified application's `net` fastsock's, so that every connection, including those core and
 * libraries make (http, https/tls, ws, undici, fetch), goes through the failover chain.
 *
 * What it changes, once per process (registering again is a no-op):
 * - `net.Socket` / `net.Stream`: fastsock's Socket (an ES5-style constructor, with
 *   `Symbol.hasInstance` so sockets made from Node's original class still pass `instanceof`);
 * - `net.connect` / `net.createConnection`: fastsock's connect, except for a connect that would
 *   go straight to TCP (a destination whose recent connections were short, lib/lifetime.ts, or a
 *   chain of `tcp` alone): Node's own `net.connect`, whose socket is of Node's own class;
 * - `net.Server.prototype._listen2` and `.close`, in place (http.Server, tls.Server and every
 *   other core server inherit them): a TCP listener also gets the side channel, whose
 *   connections become fastsock Sockets; the TCP connections stay Node's own sockets;
 * - `transport` on `net.Socket.prototype` (Node's): 'tcp' on Node's own sockets over TCP;
 * - `http.Agent.prototype.createConnection` when `http` was loaded before the hook (Node <= 20
 *   copies net.createConnection into it when `_http_agent` loads);
 * - `tls.connect`: a client whose destination is on this host, with a fast rung possible, gets a
 *   TLSSocket over a fastsock socket (`tls.connect({ socket })`); a TLSSocket over a fast rung
 *   reports the TCP view of the socket under it (remoteAddress, ...), and its `ref()`/`unref()`
 *   reach that socket (Node's JSStreamSocket between them would stop them);
 * - `child_process` `send(msg, socket)`: a socket that cannot travel (no kernel handle: shm, or
 *   still running the chain) throws ERR_FASTSOCK_NOT_TRANSFERABLE instead of being dropped;
 * - then `module.syncBuiltinESMExports()`, so ESM named imports of `node:net` see all this.
 * With FASTSOCK_TRANSPORT_LOG=<file>, it also records which rung carried this process's
 * connections and appends them to <file> (`logTransports`, for test runners).
 * `net.createServer` and `net.Server` stay Node's own (their prototype is patched).
 *
 * If the native addon cannot load, the hook warns once (process warning, code
 * FASTSOCK_NATIVE_UNAVAILABLE) and leaves `net` untouched.
 */
import net = require('net')
import * as nodeModule from 'module'
import * as fs from 'fs'
import * as diagnostics from 'diagnostics_channel'
import * as os from 'os'
import { native, loadError } from './native'
import { Socket, installHasInstance } from './socket'
import { listen2, close, setWrappedServerTest } from './server'
import { rewrapOnConnect, listenersOf } from './socket/wrapped'
import { originals, normalizeArgs } from './originals'
import { connect, connectVia, transportOf } from './index'
import { nodeOnlyConnect } from './chain'
import { recordLifetime, LifetimeHistory } from './lifetime'
import { NotTransferableError } from './errors'
import { defaultTransports } from './transports/names'
import { availability, kernelHandleFirst, NODE_TRANSPORT } from './transports/registry'
import { isLocalAddress } from './address'
import { debug } from './debug'

type AnyFn = (...args: any[]) => any // eslint-disable-line @typescript-eslint/no-explicit-any

/** What `register()` did in this process. */
export interface RegisterState {
  /** True when `net` is fastsock's. */
  patched: boolean
  /** Why not, when not patched (the native addon's load error). */
  reason: string | null
  /** The file that patched it (two copies of fastsock: the first one wins). */
  by: string
}

const STATE = Symbol.for('fastsock.register.state')
const holder = net as unknown as Record<symbol, RegisterState | undefined>

/**
 * Patches `net` (and http's agent, tls.connect, child_process send) for this process; see the
 * module comment. Idempotent: returns the state of the first call. Never throws: without the
 * native addon it warns once and returns `{ patched: false, reason }`.
 */
export function register (): RegisterState {
  const prev = holder[STATE]
  if (prev) return prev
  let state: RegisterState
  if (!native) {
    const reason = loadError?.message ?? 'unknown error'
    state = { patched: false, reason, by: __filename }
    process.emitWarning(`fastsock: the native addon did not load (${reason}); net is left untouched, connections use Node's TCP`,
      { code: 'FASTSOCK_NATIVE_UNAVAILABLE' })
  } else {
    patch()
    state = { patched: true, reason: null, by: __filename }
  }
  Object.defineProperty(net, STATE, { value: state, enumerable: false })
  return state
}

function patch (): void {
  // Core modules that subclass net.Socket copy its prototype when they load: load them now, so
  // their classes (TLSSocket, tty streams) stay exactly Node's; they call the replacement
  // constructor, which runs Node's alone for them (lib/socket.ts).
  const tls = require('tls') as typeof import('tls')
  require('tty')

  const n = net as unknown as Record<string, unknown>
  n.Socket = Socket
  n.Stream = Socket
  installHasInstance()
  n.connect = netConnect
  n.createConnection = netConnect
  installTransportGetter()

  const proto = net.Server.prototype as unknown as Record<string, AnyFn>
  proto._listen2 = function _listen2 (this: net.Server, ...args: unknown[]) { listen2(this, args) }
  proto.close = function close_ (this: net.Server, cb?: (err?: Error) => void) { return close(this, cb) }
  // Servers whose connections Node's TLS or HTTP/2 wraps choose a rung with a kernel handle first.
  setWrappedServerTest(server => server instanceof tls.Server || isHttp2Server(server))

  // Node <= 20: _http_agent copied net.createConnection when it loaded.
  if ((process as unknown as { moduleLoadList: string[] }).moduleLoadList.includes('NativeModule _http_agent')) {
    const http = require('http') as typeof import('http')
    const ap = http.Agent.prototype as unknown as { createConnection: AnyFn }
    if (ap.createConnection === originals.createConnection) ap.createConnection = netConnect
  }

  const nodeTlsConnect = tls.connect as AnyFn
  ;(tls as unknown as { connect: AnyFn }).connect = function connect_ (...args: unknown[]) {
    return tlsConnect(nodeTlsConnect, args)
  }

  // A TLSSocket over a fastsock socket on a fast rung (its _parent) reports that socket's TCP
  // view: Node's would ask the TLS handle, which has no address there.
  const tp = tls.TLSSocket.prototype as unknown as Record<string, AnyFn>
  for (const name of ['_getpeername', '_getsockname']) {
    const nodeFn = tp[name]
    tp[name] = function (this: { _parent?: { _fsView?: unknown } & Record<string, AnyFn> | null }) {
      const parent = this._parent
      return parent && parent._fsView ? parent[name]() : nodeFn.call(this)
    }
  }

  // tls.connect({ socket }) over a socket without a kernel handle at that moment (shm, or the
  // chain still running) puts Node's JSStreamSocket between TLS and the socket, and TLSWrap's
  // ref/unref stop there. Forward them to the fastsock socket under it, as TLSWrap does to a
  // kernel handle: an unref'd https client then lets its process exit.
  for (const name of ['ref', 'unref']) {
    const nodeFn = tp[name]
    tp[name] = function (this: { _parent?: unknown }, ...args: unknown[]) {
      const parent = this._parent
      if (parent instanceof Socket) (parent as unknown as Record<string, AnyFn>)[name]()
      return nodeFn.apply(this, args)
    }
  }

  // TLS over a socket without a kernel handle writes through Node's JSStreamSocket (TLSSocket's
  // `_wrapHandle(wrap)` gets it as `wrap`, with the socket as its `stream`).
  const wrapHandle = tp._wrapHandle
  tp._wrapHandle = function (this: unknown, wrap: { stream?: unknown } | null, ...rest: unknown[]) {
    if (wrap !== null && typeof wrap === 'object' && wrap.stream instanceof Socket) failWritesAfterEnd(wrap as unknown as JsStreamSocket)
    return wrapHandle.call(this, wrap, ...rest)
  }

  guardChildProcessSend()
  const log = process.env.FASTSOCK_TRANSPORT_LOG
  if (log) logTransports(log)
  nodeModule.syncBuiltinESMExports()
  debug('register', 'net is fastsock\'s (pid %d)', process.pid)
}


/**
 * `net.connect` / `net.createConnection` under the hook. A connect that goes straight to Node's
 * TCP connect (lib/chain.ts `nodeOnlyConnect`: the destination's recent connections were short,
 * lib/lifetime.ts, or the process's chain is `tcp` alone) gets Node's own `net.connect`, and so a
 * socket of Node's own class: its data path runs no fastsock code (a fastsock Socket on TCP
 * passes through its overrides of `_writeGeneric`, `push`, `_final`, `_destroy`, ... and the
 * chain's entry, which the JIT compiles only after ~1,500 connections; docs/benchmarks.md, "Short
 * connections"). Such a socket reports `transport` 'tcp' (installTransportGetter) but has none of
 * fastsock's additions (readInto, the 'transportAttempt' events): an application written for
 * `net` uses none. Every other connect: fastsock's (the chain).
 */
function netConnect (...args: unknown[]): net.Socket {
  const normalized = normalizeArgs(args)
  const options = normalized[0] as Record<string, unknown>
  const node = nodeOnlyConnect(options)
  if (node === null) return connectVia(netConnect, args, normalized)
  debug('chain', '%s:%s: Node\'s own socket (%s)', options.host ?? 'localhost', options.port, node === true ? 'the chain is tcp alone' : 'recent connections there were short')
  const sock = (originals.connect as AnyFn)(...args) as net.Socket
  if (node !== true) trackLifetime(sock, node)
  return sock
}

/**
 * Adds the lifetime of Node's own socket `sock` to its destination's history when it closes, so
 * that connections there that turn out long move the destination back to the fast rungs. A
 * connect that failed (its error's syscall 'connect') or a connection that moved no byte adds
 * nothing (what a fastsock Socket records: lib/socket/connect.ts `recordClose`).
 */
function trackLifetime (sock: net.Socket, history: LifetimeHistory): void {
  const start = performance.now()
  sock.on('close', () => {
    const err = (sock as unknown as { errored: NodeJS.ErrnoException | null }).errored
    const bytes = sock.bytesRead + sock.bytesWritten
    if (bytes > 0 && err?.syscall !== 'connect') recordLifetime(history, bytes, performance.now() - start)
  })
}

/**
 * `socket.transport` on sockets of Node's own class under the hook (netConnect's, the
 * connections a server of Node's accepts on TCP, lib/server.ts): 'tcp' while the socket has a
 * TCP handle, else undefined (a pipe, a TTY, a TLSSocket: its own transport is its `_parent`'s,
 * `transportOf()`). A getter on Node's `net.Socket.prototype`: fastsock's sockets own their
 * `transport` (fastsock's prototype a null one under it) and shadow it; Node's instances keep
 * their shape.
 */
function installTransportGetter (): void {
  const proto = originals.Socket.prototype as object
  if (Object.prototype.hasOwnProperty.call(proto, 'transport')) return
  // fastsock's prototype first: its constructor assigns `transport`, which a getter without a
  // setter up the chain would refuse (strict mode); a writable data property there lets the
  // assignment make the socket's own, as before.
  Object.defineProperty(Socket.prototype, 'transport', { value: null, writable: true, configurable: true, enumerable: false })
  Object.defineProperty(proto, 'transport', {
    configurable: true,
    enumerable: false,
    get (this: { _handle?: { constructor?: { name?: string } } | null }): string | undefined {
      return this._handle?.constructor?.name === 'TCP' ? NODE_TRANSPORT : undefined
    }
  })
}

/** tls's normalizeConnectArgs: [options, cb?], options merged from an options argument. */
function normalizeTlsArgs (list: unknown[]): [Record<string, unknown>, AnyFn | undefined] {
  const args = normalizeArgs(list)
  const options = args[0] as Record<string, unknown>
  const cb = args[1] as AnyFn | undefined
  if (typeof list[1] === 'object' && list[1] !== null) Object.assign(options, list[1])
  else if (typeof list[2] === 'object' && list[2] !== null) Object.assign(options, list[2])
  return [options, cb ?? undefined]
}

const TLS_SOCKET_OPTIONS = ['port', 'host', 'family', 'hints', 'lookup', 'autoSelectFamily', 'autoSelectFamilyAttemptTimeout', 'transports', 'transportTimeoutMs', 'shmRingBytes', 'pollUs', 'shmPollUs', 'keepAlive', 'keepAliveInitialDelay', 'noDelay']

/** Why a TLS client to these options cannot take a fast rung (Node's tls.connect then), or null. */
function tlsDecline (o: Record<string, unknown>): string | null {
  if (o.socket) return 'a socket was given'
  if (o.path != null) return 'a UNIX path'
  if (o.localAddress != null || o.localPort != null || o.fd != null) return 'localAddress/localPort/fd requested'
  if (o.port === undefined || o.port === null) return 'no port'
  const host = typeof o.host === 'string' && o.host !== '' ? o.host : 'localhost'
  if (host !== 'localhost' && !(net.isIP(host) && isLocalAddress(host))) return `${host} is not known to be local`
  const chain = o.transports !== undefined ? String(o.transports).split(',') : defaultTransports()
  const fast = chain.some(t => t !== 'tcp' && availability(t as never)?.available)
  return fast ? null : 'no fast rung available'
}

/**
 * tls.connect over fastsock: when the destination is on this host and a fast rung is possible,
 * a fastsock socket runs the chain and Node's TLS runs over it (`tls.connect({ socket })`);
 * otherwise Node's tls.connect, unchanged.
 */
function tlsConnect (nodeTlsConnect: AnyFn, args: unknown[]): unknown {
  const [options, cb] = normalizeTlsArgs(args)
  const why = tlsDecline(options)
  if (why) {
    debug('register', 'tls.connect: Node\'s (%s)', why)
    return nodeTlsConnect(...args)
  }
  const sockOpts: Record<string, unknown> = {}
  for (const k of TLS_SOCKET_OPTIONS) if (options[k] !== undefined) sockOpts[k] = options[k]
  // Half-open, as a kernel handle under TLSWrap is: the TLSSocket (with the caller's
  // allowHalfOpen) decides when to end after the peer's FIN; the socket under it must not end
  // itself and refuse TLS's close_notify (EPIPE, "ended by the other party").
  sockOpts.allowHalfOpen = true
  // TLS will wrap this socket: a rung with a kernel handle first (TLSWrap drives it natively), a
  // handle-less one (shm: through Node's JSStreamSocket) after it, unless the caller chose.
  if (options.transports === undefined) sockOpts.transports = kernelHandleFirst(defaultTransports())
  debug('tls', 'tls.connect to %s:%s: chain %s', options.host ?? 'localhost', options.port, String(sockOpts.transports ?? defaultTransports()))
  const socket = connect(sockOpts as never)
  const tlsOpts: Record<string, unknown> = { ...options, socket }
  if (tlsOpts.servername === undefined && typeof options.host === 'string' && !net.isIP(options.host)) tlsOpts.servername = options.host
  const before = listenersOf(socket)
  const tlssock = nodeTlsConnect(tlsOpts, cb) as import('tls').TLSSocket
  // Connected on a rung with a kernel handle: TLS moves onto it before the handshake.
  rewrapOnConnect(socket, tlssock, before)
  // TLSSocket copies the allowHalfOpen of the socket it wraps: give it the caller's, as Node's
  // tls.connect does without a socket.
  tlssock.allowHalfOpen = options.allowHalfOpen === true
  if (typeof options.timeout === 'number' && options.timeout > 0) tlssock.setTimeout(options.timeout)
  // tls.connect leaves a socket it was given to the caller: this one is ours, close it with
  // tlssock. Its errors reach tlssock (through the JSStreamSocket wrapping it); once tlssock is
  // gone, a late one (EPIPE on a close_notify to a peer that already left) is only logged.
  tlssock.once('close', () => socket.destroy())
  socket.on('error', err => { if (tlssock.destroyed) debug('register', 'tls: inner socket error after close: %s', err.message) })
  return tlssock
}

/** The part of Node's JSStreamSocket (internal/js_stream_socket) failWritesAfterEnd touches. */
interface JsStreamSocket { stream: import('net').Socket, doWrite (req: unknown, bufs: unknown[]): number }

/** libuv's UV_EPIPE (negative errno). */
const UV_EPIPE = -os.constants.errno.EPIPE

/**
 * TLSWrap writes records after its own shutdown (a client that `end()`s before the handshake is
 * done still sends its Finished). To a kernel handle, shut down for writing, such a write fails
 * at once with EPIPE (`uv_write`), which TLSWrap ignores after a shutdown; through JSStreamSocket
 * it reached the ended socket's `write()`, whose ERR_STREAM_WRITE_AFTER_END became an 'error' on
 * the TLSSocket. Here it fails as libuv's does: JSStreamSocket's `doWrite` returns the error code,
 * which TLSWrap gets as the write's synchronous result; the socket never sees the write.
 */
function failWritesAfterEnd (jss: JsStreamSocket): void {
  const doWrite = jss.doWrite
  jss.doWrite = function (this: JsStreamSocket, req: unknown, bufs: unknown[]): number {
    return this.stream.writableEnded ? UV_EPIPE : doWrite.call(this, req, bufs)
  }
}

/** The prototype of http2's plain server, once `http2` is loaded (null: not loaded yet). */
let http2ServerProto: object | null = null

/** True for http2's plain (h2c) server; its secure server is a tls.Server. */
function isHttp2Server (server: net.Server): boolean {
  if (http2ServerProto === null) {
    if (!(process as unknown as { moduleLoadList: string[] }).moduleLoadList.includes('NativeModule http2')) return false
    http2ServerProto = Object.getPrototypeOf((require('http2') as typeof import('http2')).createServer()) as object
  }
  return http2ServerProto.isPrototypeOf(server)
}

/** Why `handle` cannot be passed to another process, or null (Node handles everything else). */
function untransferable (handle: unknown): string | null {
  if (!(handle instanceof originals.Socket)) return null
  const s = handle as unknown as { _fsShm?: unknown, _handle?: unknown, connecting?: boolean, transport?: string | null }
  if (s._fsShm) return 'an shm socket has no kernel handle to pass'
  if (!s._handle && s.connecting) return 'the socket is still connecting (no kernel handle yet)'
  return null
}

function guardedSend (send: AnyFn): AnyFn {
  if ((send as { fastsockGuarded?: boolean }).fastsockGuarded) return send
  const guarded = function send_ (this: unknown, message: unknown, handle?: unknown, ...rest: unknown[]): unknown {
    const why = handle != null && typeof handle === 'object' ? untransferable(handle) : null
    if (why) {
      throw new NotTransferableError(
        `fastsock: cannot send this socket to another process: ${why} (transport ${transportOf(handle as net.Socket) ?? 'none'})`)
    }
    return send.call(this, message, handle, ...rest)
  }
  ;(guarded as { fastsockGuarded?: boolean }).fastsockGuarded = true
  return guarded
}

/**
 * Node's IPC silently drops a socket without a kernel handle (`send(msg, socket)`): make it
 * throw. `process.send` (this process is a child) is wrapped now; a ChildProcess's `send` is an
 * own property assigned when its channel is set up, caught by a setter on the prototype.
 */
function guardChildProcessSend (): void {
  const p = process as unknown as { send?: AnyFn }
  if (typeof p.send === 'function') p.send = guardedSend(p.send)
  const { ChildProcess } = require('child_process') as typeof import('child_process')
  const proto = ChildProcess.prototype as object
  if (Object.getOwnPropertyDescriptor(proto, 'send')) return
  Object.defineProperty(proto, 'send', {
    configurable: true,
    enumerable: false,
    get () { return undefined },
    set (this: object, fn: AnyFn) {
      Object.defineProperty(this, 'send', { value: typeof fn === 'function' ? guardedSend(fn) : fn, writable: true, configurable: true, enumerable: true })
    }
  })
}

/** The rung of a connected socket for the transport log: 'pipe' for a UNIX path the caller named. */
function rungOf (s: net.Socket): string | null {
  const rung = transportOf(s)
  const fast = (s as unknown as { _fsView?: unknown })._fsView
  if (rung === 'unix' && !fast) return 'pipe'
  if (rung === null && (s as unknown as { _handle?: object | null })._handle?.constructor?.name === 'Pipe') return 'pipe'
  return rung
}

/**
 * FASTSOCK_TRANSPORT_LOG=<file>: appends JSON lines to `file` naming the rungs that carried this
 * process's connections: `{ pid, server: { <rung>: 1 } }` as a server accepts each connection,
 * and at exit `{ pid, argv, client: { <rung>: count } }` for the client sockets made by
 * `connect()` (the rung they last connected on; never connected ones are left out). 'pipe' is a
 * UNIX path the application named, not the unix rung. Listens on the 'net.client.socket' and
 * 'net.server.socket' diagnostics channels; holds client sockets until exit and writes
 * synchronously, so it is meant for test runs (scripts/node-suite), not for production.
 */
function logTransports (file: string): void {
  const append = (rec: object): void => {
    try { fs.appendFileSync(file, JSON.stringify({ pid: process.pid, ...rec }) + '\n') } catch (err) { debug('register', 'transport log %s: %s', file, (err as Error).message) }
  }
  const clients = new Set<net.Socket>()
  diagnostics.subscribe('net.client.socket', msg => { clients.add((msg as { socket: net.Socket }).socket) })
  diagnostics.subscribe('net.server.socket', msg => {
    append({ server: { [rungOf((msg as { socket: net.Socket }).socket) ?? 'none']: 1 } })
  })
  process.on('exit', () => {
    const client: Record<string, number> = {}
    for (const s of clients) {
      const rung = rungOf(s)
      if (rung) client[rung] = (client[rung] ?? 0) + 1
    }
    append({ argv: process.argv.slice(1), client })
  })
}

/** The state of this process's registration (registering on load: `require('fastsock/register')`). */
export const state: RegisterState = register()
