/**
 * fastsock's Server: a `net.Server` whose connections are fastsock Sockets, and which, when it
 * listens on TCP, also listens on the side channel (lib/transports/unix.ts) so that fastsock
 * clients on this host reach it over a faster rung. Plain `net` clients keep using TCP and see
 * nothing different.
 *
 * Accepting a connection on any rung does what Node's onconnection does: maxConnections and
 * 'drop', pauseOnConnect, noDelay/keepAlive, highWaterMark, allowHalfOpen, socket.server,
 * _connections (so close() waits for it and getConnections() counts it), 'connection', and the
 * 'net.server.socket' diagnostics channel.
 */
import * as net from 'net'
import * as util from 'util'
import * as diagnostics from 'diagnostics_channel'
import { Socket, kAccepted, AcceptedInfo } from './socket'
import { TransportName, parseTransports, defaultTransports } from './transports/names'
import { availability } from './transports/availability'
import { SideChannelListener, AcceptedFast } from './transports/unix'
import { originals } from './originals'
import { debug } from './debug'
import { remoteRungs, remoteRung, RemoteListener } from './transports/remote'
import './transports/rungs'
import { dispatchToWorkers, serveFromPrimary, isRoundRobinWorker, keyOf } from './cluster'

const serverSocketChannel = diagnostics.channel('net.server.socket')

/** Options of `createServer()`: Node's, plus the chain's. */
export interface ServerOptions extends net.ServerOpts {
  /** Rungs this server offers besides TCP (default: FASTSOCK_TRANSPORTS, else all). */
  transports?: TransportName[] | string
  /** Accept side-channel clients of this uid only (default true). */
  sameUidOnly?: boolean
  /** How long a side-channel client may take to say HELLO, in ms (default 2000). */
  handshakeTimeoutMs?: number
  /** shm connections accepted here: cap of the adaptive polling window in µs, default 200 (see SocketOptions.shmPollUs). */
  shmPollUs?: number
}

type AnyFn = (...args: any[]) => any // eslint-disable-line @typescript-eslint/no-explicit-any
interface NodeServerInternals {
  _handle: { onconnection: AnyFn, getsockname?: AnyFn } | null
  _connections: number
  _listen2: AnyFn
  highWaterMark?: number
  keepAliveInitialDelay?: number
}
interface ClientHandle {
  getsockname?: (out: Record<string, unknown>) => number
  getpeername?: (out: Record<string, unknown>) => number
  setNoDelay?: (on: boolean) => void
  close: () => void
}

const UV_TCP_IPV6ONLY = 1

/** The fastsock state a net.Server carries (absent on a server core made before the hook). */
interface FsServerFields {
  _fsTransports?: TransportName[]
  _fsSideChannel?: SideChannelListener | null
  _fsSameUidOnly?: boolean
  _fsHandshakeTimeoutMs?: number
  _fsShmPollUs?: number | undefined
  /** Listeners of the cross-host rungs (verbs, rsocket) beside the TCP one. */
  _fsRemoteListeners?: RemoteListener[]
  /** The rung whose socket the TCP listener is (smc), if any. */
  _fsListenRung?: TransportName
}
type AnyServer = net.Server & FsServerFields

const nodeListen2 = originals.serverProto._listen2
const nodeClose = originals.serverProto.close

/**
 * Node's setupListenHandle (`_listen2`), then fastsock's accept path (connections become fastsock
 * Sockets) and, for a TCP listener, the side channel. Works on any net.Server: fastsock's own,
 * and, with the preload hook, every server core makes (http.Server, tls.Server, ...), whose
 * fastsock settings are then the process defaults (FASTSOCK_TRANSPORTS, same uid only, 2 s).
 */
export function listen2 (server: net.Server, args: unknown[]): void {
  const self = server as unknown as NodeServerInternals
  const transports = (server as AnyServer)._fsTransports ?? defaultTransports()
  // A rung that must own the TCP listener itself (smc) supplies its socket as the fd to adopt.
  const [address, port, addressType, , fd, flags] = args as [string, number, number, number, number | undefined, number | undefined]
  if ((fd === undefined || fd === -1) && typeof port === 'number' && port >= 0 && !isRoundRobinWorker(server)) {
    for (const r of remoteRungs()) {
      if (!r.listenFd || !transports.includes(r.name) || !availability(r.name).available) continue
      const own = r.listenFd(address, port, addressType, flags ?? 0)
      if (own !== null) {
        args = [...args]
        args[4] = own
        // Node asserts that an fd comes without an address or port (createServerHandle).
        args[0] = null
        args[1] = null
        ;(server as AnyServer)._fsListenRung = r.name
        break
      }
    }
  }
  nodeListen2.apply(server, args)
  if (!self._handle) return // listen failed: Node emits the error
  // A UNIX path or fd listener (no TCP address) keeps Node's accept path: nothing to add there.
  const addr = server.address()
  if (addr === null || typeof addr === 'string') return
  self._handle.onconnection = (err: number, clientHandle: ClientHandle) => onTcpConnection(server, err, clientHandle)
  const v6only = ((flags ?? 0) & UV_TCP_IPV6ONLY) !== 0
  startSideChannel(server as AnyServer, v6only)
  startRemoteListeners(server as AnyServer, transports, v6only)
}

/** Why a fast rung's listener must turn a client away now (not listening, maxConnections), or null. */
function busyReason (server: net.Server): string | null {
  const s = server as unknown as NodeServerInternals
  if (!s._handle) return 'the server is not accepting connections'
  return server.maxConnections && s._connections >= server.maxConnections ? 'maxConnections reached' : null
}

/** Every cross-host rung that listens beside TCP (verbs, rsocket) starts here. */
function startRemoteListeners (server: AnyServer, transports: TransportName[], v6only: boolean): void {
  const addr = server.address()
  if (addr === null || typeof addr === 'string') return
  for (const l of server._fsRemoteListeners ?? []) l.close()
  server._fsRemoteListeners = []
  if (isRoundRobinWorker(server) || listenHandleReason(server)) return
  for (const r of remoteRungs()) {
    if (!r.listen || !transports.includes(r.name) || !availability(r.name).available) continue
    const l = r.listen({
      address: addr.address,
      port: addr.port,
      v6only,
      busy: () => busyReason(server),
      accept: a => acceptFast(server, a)
    })
    if (l) server._fsRemoteListeners.push(l)
  }
}

/** Stops accepting on every rung (the side channel too), then Node's close(). */
export function close (server: net.Server, cb?: (err?: Error) => void): net.Server {
  const s = server as AnyServer
  s._fsSideChannel?.close()
  s._fsSideChannel = null
  for (const l of s._fsRemoteListeners ?? []) l.close()
  s._fsRemoteListeners = []
  return nodeClose.call(server, cb)
}

/**
 * Why this server cannot take side-channel clients itself, or null. A cluster worker under
 * round-robin scheduling listens on a stand-in handle without a kernel socket (the primary owns
 * the listen socket and hands accepted TCP connections over), so it could not prove it owns the
 * listener and a client would not trust it: it offers no side channel (docs/transparency.md,
 * "Cluster").
 */
function listenHandleReason (server: net.Server): string | null {
  const h = (server as unknown as { _handle: { fd?: unknown } | null })._handle
  if (h && !(typeof h.fd === 'number' && h.fd >= 0)) return 'the listen handle is not a kernel socket here'
  return null
}

function startSideChannel (server: AnyServer, v6only: boolean): void {
  const transports = server._fsTransports ?? defaultTransports()
  const offer = {
    shm: transports.includes('shm') && availability('shm').available,
    unix: transports.includes('unix') && availability('unix').available
  }
  if (!offer.shm && !offer.unix) return
  const addr = server.address()
  if (addr === null || typeof addr === 'string') return
  const rrWorker = isRoundRobinWorker(server)
  const why = rrWorker ? null : listenHandleReason(server)
  if (why) return void debug('server', 'no side channel for %s:%d: %s', addr.address, addr.port, why)
  server._fsSideChannel?.close()
  const sc = new SideChannelListener({
    address: addr.address,
    port: addr.port,
    v6only,
    offer,
    sameUidOnly: server._fsSameUidOnly ?? true,
    handshakeTimeoutMs: server._fsHandshakeTimeoutMs ?? 2000,
    busy: () => {
      if (!(server as unknown as NodeServerInternals)._handle) {
        // Someone took the listen handle away (cluster's round-robin primary does, to accept
        // and distribute itself): this server no longer accepts, so neither does its side channel.
        if (server._fsSideChannel === sc) server._fsSideChannel = null
        setImmediate(() => sc.close())
      }
      return busyReason(server)
    },
    accept: a => acceptFast(server, a)
  })
  if (rrWorker) {
    // Round-robin worker: the primary owns the name and hands its clients over (lib/cluster.ts).
    serveFromPrimary(server, sc, keyOf(addr.address, addr.port))
    return
  }
  server._fsSideChannel = sc.listen() ? sc : null
  if (server._fsSideChannel) {
    // cluster's round-robin primary takes the listen handle away in its own 'listening'
    // listener (registered after this one) to accept and distribute connections itself: the
    // side channel then hands its clients to the workers the same way (lib/cluster.ts).
    server.once('listening', () => process.nextTick(() => {
      if (!(server as unknown as NodeServerInternals)._handle && server._fsSideChannel === sc) {
        dispatchToWorkers(sc, keyOf(addr.address, addr.port))
      }
    }))
  }
}

function newSocket (server: AnyServer, handle: unknown, accepted: AcceptedInfo): Socket {
  const hwm = (server as unknown as NodeServerInternals).highWaterMark
  return new Socket({
    handle,
    allowHalfOpen: (server as unknown as { allowHalfOpen: boolean }).allowHalfOpen,
    pauseOnCreate: (server as unknown as { pauseOnConnect: boolean }).pauseOnConnect,
    readable: true,
    writable: true,
    readableHighWaterMark: hwm,
    writableHighWaterMark: hwm,
    [kAccepted]: accepted
  } as never)
}

function admit (server: AnyServer, socket: Socket): void {
  const s = server as unknown as NodeServerInternals
  s._connections++
  ;(socket as unknown as { server: net.Server, _server: net.Server }).server = server
  ;(socket as unknown as { _server: net.Server })._server = server
  server.emit('connection', socket)
  if (serverSocketChannel.hasSubscribers) serverSocketChannel.publish({ socket })
  // A TLSSocket made over a socket without a handle (shm) counts it as connecting until that
  // socket emits 'connect' (_tls_wrap.js _init): a TLS server would hang. Give it its 'connect'.
  const h = socket as unknown as { _handle: unknown }
  if (!h._handle && !socket.destroyed && socket.listenerCount('connect') > 0) socket.emit('connect')
}

/** Node's onconnection, creating a fastsock Socket. */
function onTcpConnection (server: AnyServer, err: number, clientHandle: ClientHandle): void {
  if (err) {
    const e = new Error(`accept ${util.getSystemErrorName(err)}`) as NodeJS.ErrnoException
    e.errno = err
    e.code = util.getSystemErrorName(err)
    e.syscall = 'accept'
    server.emit('error', e)
    return
  }
  const s = server as unknown as NodeServerInternals
  if (server.maxConnections && s._connections >= server.maxConnections) {
    const data: Record<string, unknown> = Object.create(null)
    if (clientHandle.getsockname) {
      const l: Record<string, unknown> = {}
      clientHandle.getsockname(l)
      data.localAddress = l.address; data.localPort = l.port; data.localFamily = l.family
    }
    if (clientHandle.getpeername) {
      const r: Record<string, unknown> = {}
      clientHandle.getpeername(r)
      data.remoteAddress = r.address; data.remotePort = r.port; data.remoteFamily = r.family
    }
    server.emit('drop', data)
    clientHandle.close()
    return
  }
  const rung = server._fsListenRung
  const socket = newSocket(server, clientHandle, { transport: rung ?? 'tcp', view: null, handshakeRead: 0, handshakeWritten: 0, smcHandle: rung === 'smc' })
  const accepted = rung ? remoteRung(rung)?.accepted : undefined
  if (accepted) socket.transport = accepted(socket)
  const o = server as unknown as { noDelay?: boolean, keepAlive?: boolean, keepAliveInitialDelay?: number }
  if (o.noDelay) socket.setNoDelay(true)
  if (o.keepAlive) socket.setKeepAlive(true, (o.keepAliveInitialDelay ?? 0) * 1000)
  admit(server, socket)
}

/** A connection the side channel verified and handshook: adopt it like a TCP one. */
function acceptFast (server: AnyServer, a: AcceptedFast): void {
  if (!server.listening) {
    ;(a.handle as unknown as ClientHandle | null)?.close()
    a.shm?.close(true)
    return
  }
  const socket = newSocket(server, a.handle ?? undefined, {
    transport: a.transport, view: a.view, handshakeRead: a.handshakeRead, handshakeWritten: a.handshakeWritten, shm: a.shm, bindShm: a.bindShm, shmPollUs: server._fsShmPollUs
  })
  admit(server, socket)
}

/**
 * fastsock's server: `net.Server` plus, on a TCP listener, the side channel that lets fastsock
 * clients on this host in over shm or unix (see the module comment). Options: ServerOptions.
 * `instanceof net.Server`; its connections are fastsock Sockets on every rung.
 */
export class Server extends net.Server {
  /** @internal */
  declare _fsTransports: TransportName[]
  /** @internal */
  declare _fsSideChannel: SideChannelListener | null
  /** @internal */
  declare _fsSameUidOnly: boolean
  /** @internal */
  declare _fsHandshakeTimeoutMs: number
  /** @internal */
  declare _fsShmPollUs: number | undefined

  constructor (listener?: (socket: Socket) => void)
  constructor (options?: ServerOptions, listener?: (socket: Socket) => void)
  constructor (options?: ServerOptions | ((socket: Socket) => void), listener?: (socket: Socket) => void) {
    let opts: ServerOptions = {}
    if (typeof options === 'function') listener = options
    else if (options != null) opts = { ...options }
    const transports = opts.transports !== undefined ? parseTransports(opts.transports) : null
    const sameUidOnly = opts.sameUidOnly ?? true
    const handshakeTimeoutMs = opts.handshakeTimeoutMs ?? 2000
    delete opts.transports
    delete opts.sameUidOnly
    const shmPollUs = opts.shmPollUs
    delete opts.handshakeTimeoutMs
    delete opts.shmPollUs
    super(opts, listener as (socket: net.Socket) => void)
    this._fsSideChannel = null
    this._fsTransports = transports ?? defaultTransports()
    this._fsSameUidOnly = sameUidOnly
    this._fsHandshakeTimeoutMs = handshakeTimeoutMs
    this._fsShmPollUs = shmPollUs
  }

  /** @internal Node's setupListenHandle, then fastsock's accept path and side channel. */
  _listen2 (...args: unknown[]): void {
    listen2(this, args)
  }

  /** Stops accepting on every rung (the side channel too); 'close' once all connections end. */
  override close (cb?: (err?: Error) => void): this {
    close(this, cb)
    return this
  }
}
