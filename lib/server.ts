/**
 * L6, fastsock's Server: a `net.Server` whose connections are fastsock Sockets, and which, when
 * it listens on TCP, asks every rung it offers to listen beside it (`Rung.listen`: the side
 * channel for the same-host rungs, RDMA listeners for the cross-host ones), or to be the TCP
 * listener itself (`Rung.listenFd`). Plain `net` clients keep using TCP and see nothing
 * different. The server names no rung: it adopts the Channels the rungs hand it.
 *
 * A server of Node's own class (http.Server under the preload hook) leaves its TCP connections
 * to Node's onconnection (sockets of Node's own class); fastsock's Server makes fastsock Sockets of
 * them too. Accepting a connection on any other rung does what Node's onconnection does: maxConnections and
 * 'drop', pauseOnConnect, noDelay/keepAlive, highWaterMark, allowHalfOpen, socket.server,
 * _connections (so close() waits for it and getConnections() counts it), 'connection', and the
 * 'net.server.socket' diagnostics channel.
 */
import * as net from 'net'
import * as util from 'util'
import * as diagnostics from 'diagnostics_channel'
import { Socket, kAccepted, AcceptedInfo } from './socket'
import { TransportName, parseTransports, defaultTransports } from './transports/names'
import { availability, RUNGS, NODE_TRANSPORT, kernelHandleFirst } from './transports/registry'
import { debug } from './debug'
import { channel, Channel, Connector, KernelHandle, ListenRequest, Rung, RungListener, discardChannel } from './contract'
import { originals } from './originals'
import { isRoundRobinWorker } from './cluster'
import { blocks } from './address'

const serverSocketChannel = diagnostics.channel('net.server.socket')

/** Options of `createServer()`: Node's, plus the chain's. */
export interface ServerOptions extends net.ServerOpts {
  /** Rungs this server offers besides TCP (default: FASTSOCK_TRANSPORTS, else all). */
  transports?: TransportName[] | string
  /** Accept side-channel clients of this uid only (default true). */
  sameUidOnly?: boolean
  /** How long a side-channel client may take to say HELLO, in ms (default 2000). */
  handshakeTimeoutMs?: number
  /** shm and verbs connections accepted here: cap of the adaptive polling window in µs, default 200 (see SocketOptions.pollUs). */
  pollUs?: number
  /** @deprecated The old name of `pollUs` (still accepted; `pollUs` wins when both are given). */
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

/** The key of a server's ServerState (absent on a server core made before the hook). */
const kServer = Symbol.for('fastsock.server.state')

/** fastsock's state of one net.Server. */
interface ServerState {
  /** Rungs offered (the `transports` option, else the process's). */
  transports: TransportName[]
  /** Accept side-channel clients of this uid only. */
  sameUidOnly: boolean
  handshakeTimeoutMs: number
  /** Polling budget (µs) of accepted handle-less connections; undefined: the socket's default. */
  pollUs: number | undefined
  /** The rungs' listeners beside the TCP one. */
  listeners: RungListener[]
  /** The rung whose socket the TCP listener is (smc), if any. */
  listenRung: Rung | null
}
type AnyServer = net.Server & { [kServer]?: ServerState }

/** The server's state; made with the process defaults for a server core made (http.Server...). */
function stateOf (server: AnyServer): ServerState {
  return server[kServer] ??= { transports: defaultTransports(), sameUidOnly: true, handshakeTimeoutMs: 2000, pollUs: undefined, listeners: [], listenRung: null }
}

/** The registry's rungs this server offers and this host has, in registry order. */
function offeredRungs (st: ServerState): Rung[] {
  return RUNGS.filter(r => st.transports.includes(r.name) && availability(r.name).available)
}

/**
 * Set by the preload hook: true for a server whose connections Node's own C++ stream consumers
 * will wrap (tls.Server, so https.Server and http2's secure server; http2's plain server). Such
 * a server chooses, among the rungs a client offers, one with a kernel handle first: TLSWrap or
 * nghttp2 then drives that handle natively, where a handle-less socket (shm) would reach them
 * through Node's JSStreamSocket (docs/transparency.md, "Sockets TLS and HTTP/2 wrap").
 */
let wrapsConnections: ((server: net.Server) => boolean) | null = null

/** Installs the test above (lib/register.ts). */
export function setWrappedServerTest (test: (server: net.Server) => boolean): void {
  wrapsConnections = test
}

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
  const st = stateOf(server as AnyServer)
  const rungs = offeredRungs(st)
  // A rung that must own the TCP listener itself (smc) supplies its socket as the fd to adopt.
  const [address, port, addressType, , fd, flags] = args as [string, number, number, number, number | undefined, number | undefined]
  st.listenRung = null
  if ((fd === undefined || fd === -1) && typeof port === 'number' && port >= 0 && !isRoundRobinWorker(server)) {
    for (const r of rungs) {
      if (!r.listenFd) continue
      const own = r.listenFd(address, port, addressType, flags ?? 0)
      if (own !== null) {
        args = [...args]
        args[4] = own
        // Node asserts that an fd comes without an address or port (createServerHandle).
        args[0] = null
        args[1] = null
        st.listenRung = r
        break
      }
    }
  }
  nodeListen2.apply(server, args)
  if (!self._handle) return // listen failed: Node emits the error
  // A UNIX path or fd listener (no TCP address) keeps Node's accept path: nothing to add there.
  const addr = server.address()
  if (addr === null || typeof addr === 'string') return
  // A server of Node's own class (core's: http.Server under the preload hook) keeps Node's own
  // onconnection for its TCP connections: they are sockets of Node's own class, with no fastsock
  // code on their data path (a fastsock Socket per accepted TCP connection cost the server CPU
  // and JIT warm-up for nothing it could use; docs/benchmarks.md, "Short connections"). fastsock's
  // Server (its connections have readInto & co. on every rung) and a listener a rung owns (smc)
  // take them here.
  if (server instanceof Server || st.listenRung !== null) {
    self._handle.onconnection = (err: number, clientHandle: ClientHandle) => onTcpConnection(server as AnyServer, err, clientHandle)
  }
  let order = rungs
  if (wrapsConnections !== null && wrapsConnections(server)) {
    const names = kernelHandleFirst(rungs.map(r => r.name))
    order = names.map(n => rungs.find(r => r.name === n)!)
    debug('server', '%s:%d: TLS/HTTP/2 server, its connections get wrapped: rungs with a kernel handle first (%s)', addr.address, addr.port, names.join(','))
  }
  startListeners(server as AnyServer, st, order, addr, ((flags ?? 0) & UV_TCP_IPV6ONLY) !== 0)
}

/** Why a fast rung's listener must turn a client away now (not listening, maxConnections), or null. */
function busyReason (server: net.Server): string | null {
  const s = server as unknown as NodeServerInternals
  if (!s._handle) return 'the server is not accepting connections'
  return server.maxConnections && s._connections >= server.maxConnections ? 'maxConnections reached' : null
}

/** Every offered rung's listener beside TCP (side channel, verbs, rsocket) starts here. */
function startListeners (server: AnyServer, st: ServerState, rungs: Rung[], addr: net.AddressInfo, v6only: boolean): void {
  for (const l of st.listeners) l.close()
  st.listeners = []
  const req: ListenRequest = {
    server,
    address: addr.address,
    port: addr.port,
    v6only,
    rungs,
    sameUidOnly: st.sameUidOnly,
    handshakeTimeoutMs: st.handshakeTimeoutMs,
    roundRobinWorker: isRoundRobinWorker(server),
    listenHandleProblem: listenHandleReason(server),
    busy: () => busyReason(server),
    accept: c => acceptChannel(server, c)
  }
  // A connector (the side channel) listens once, at its first rung, for all its rungs.
  const listened = new Set<Connector>()
  for (const r of rungs) {
    if (r.connector && listened.has(r.connector)) continue
    if (r.connector) listened.add(r.connector)
    const l = r.connector ? r.connector.listen(req) : r.listen?.(req)
    if (l) st.listeners.push(l)
  }
}

/** Stops accepting on every rung (the side channel too), then Node's close(). */
export function close (server: net.Server, cb?: (err?: Error) => void): net.Server {
  const st = (server as AnyServer)[kServer]
  if (st) {
    for (const l of st.listeners) l.close()
    st.listeners = []
  }
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

/**
 * A TLSSocket made over an accepted socket without a handle (shm) counts it as connecting until
 * that socket emits 'connect' (_tls_wrap.js _init: `socket.connecting || !socket._handle`): a
 * TLS server would never start its handshake. So whenever a 'connect' listener is added to such
 * a socket, connected and alive, it gets its 'connect' on the next tick: for a TLS server's own
 * 'connection' listener as for a proxy that reads a first byte, unshift()s it and hands the
 * socket on later (`httpsServer.emit('connection', socket)`).
 */
function standInConnect (socket: Socket): void {
  let scheduled = false
  socket.on('newListener', (event: string | symbol) => {
    if (event !== 'connect' || scheduled || socket.connecting || socket.destroyed) return
    scheduled = true
    process.nextTick(() => {
      scheduled = false
      if (!socket.destroyed && socket.listenerCount('connect') > 0) socket.emit('connect')
    })
  })
}

function admit (server: AnyServer, socket: Socket): void {
  const s = server as unknown as NodeServerInternals
  s._connections++
  ;(socket as unknown as { server: net.Server, _server: net.Server }).server = server
  ;(socket as unknown as { _server: net.Server })._server = server
  if (!(socket as unknown as { _handle: unknown })._handle) standInConnect(socket)
  server.emit('connection', socket)
  if (serverSocketChannel.hasSubscribers) serverSocketChannel.publish({ socket })
}

/** maxConnections reached: a new connection is dropped (Node's onconnection). */
function full (server: net.Server): boolean {
  return !!server.maxConnections && (server as unknown as NodeServerInternals)._connections >= server.maxConnections
}

/** Node's 'drop' event, with the dropped connection's addresses (a handle's, or a channel's TCP view). */
function drop (server: net.Server, local: Record<string, unknown>, remote: Record<string, unknown>): void {
  const data: Record<string, unknown> = Object.create(null)
  data.localAddress = local.address; data.localPort = local.port; data.localFamily = local.family
  data.remoteAddress = remote.address; data.remotePort = remote.port; data.remoteFamily = remote.family
  server.emit('drop', data)
}

/** The server's `blockList` option (Node 22+), or undefined. */
function serverBlockList (server: net.Server): net.BlockList | undefined {
  return (server as unknown as { blockList?: net.BlockList }).blockList
}

/** The server's blockList blocks this accepted handle's peer address (Node's onconnection check). */
function blockedPeer (server: net.Server, h: ClientHandle | null): boolean {
  const list = serverBlockList(server)
  if (list == null || typeof h?.getpeername !== 'function') return false
  const r: Record<string, unknown> = {}
  h.getpeername(r)
  return blocks(list, r.address)
}

/** accept() errors that name the connection, not the listener: the peer reset or aborted it first. */
const RESET_BEFORE_ACCEPT = new Set(['ECONNRESET', 'ECONNABORTED'])

/** What every connection accepted on a TCP listener of Node's own gets: one object for all (read, never written). */
const TCP_ACCEPTED: AcceptedInfo = Object.freeze({ channel: Object.freeze(channel({ transport: NODE_TRANSPORT })) })

/** Node's onconnection, creating a fastsock Socket. */
function onTcpConnection (server: AnyServer, err: number, clientHandle: ClientHandle): void {
  if (err && stateOf(server).listenRung && RESET_BEFORE_ACCEPT.has(util.getSystemErrorName(err))) {
    // A listener a rung owns (AF_SMC) reports a client that reset before accept() as an accept
    // error; TCP's accept() hands such a connection over and libuv drops ECONNABORTED. Dropped
    // here too: a client's reset is never the server's 'error' (docs/transports.md, smc).
    debug('server', 'accept: %s from the %s listener, a connection reset before it was accepted: dropped', util.getSystemErrorName(err), stateOf(server).listenRung!.name)
    return
  }
  if (err) {
    const e = new Error(`accept ${util.getSystemErrorName(err)}`) as NodeJS.ErrnoException
    e.errno = err
    e.code = util.getSystemErrorName(err)
    e.syscall = 'accept'
    server.emit('error', e)
    return
  }
  if (full(server)) {
    const l: Record<string, unknown> = {}
    const r: Record<string, unknown> = {}
    clientHandle.getsockname?.(l)
    clientHandle.getpeername?.(r)
    drop(server, l, r)
    clientHandle.close()
    return
  }
  if (blockedPeer(server, clientHandle)) {
    clientHandle.close()
    return
  }
  const rung = stateOf(server).listenRung
  const socket = newSocket(server, clientHandle, rung?.acceptedChannel ? { channel: rung.acceptedChannel(clientHandle as unknown as KernelHandle) } : TCP_ACCEPTED)
  const o = server as unknown as { noDelay?: boolean, keepAlive?: boolean, keepAliveInitialDelay?: number }
  if (o.noDelay) socket.setNoDelay(true)
  if (o.keepAlive) socket.setKeepAlive(true, (o.keepAliveInitialDelay ?? 0) * 1000)
  admit(server, socket)
}

/** A connection a rung's listener established: adopt it like a TCP one. */
function acceptChannel (server: AnyServer, c: Channel): void {
  if (!server.listening) return discardChannel(c)
  if (full(server)) {
    // The rung's listener checked busy() at its handshake, but connections handshaking at the
    // same time all passed it: the count that decides is this one, as in Node's onconnection.
    const h = c.handle as unknown as ClientHandle | null
    const l: Record<string, unknown> = { ...c.view?.local }
    const r: Record<string, unknown> = { ...c.view?.remote }
    if (!c.view) { h?.getsockname?.(l); h?.getpeername?.(r) }
    drop(server, l, r)
    // Closed as Node closes a dropped handle: an orderly close (a reset only if bytes came unread).
    c.handle?.close()
    c.endpoint?.close(false)
    return
  }
  if (c.view ? blocks(serverBlockList(server), c.view.remote.address) : blockedPeer(server, c.handle as unknown as ClientHandle | null)) {
    // Turned away as Node's onconnection turns a blocked TCP peer away: closed, no 'connection'.
    c.handle?.close()
    c.endpoint?.close(false)
    return
  }
  const socket = newSocket(server, c.handle ?? undefined, { channel: c, pollUs: stateOf(server).pollUs })
  admit(server, socket)
}

/**
 * fastsock's server: `net.Server` plus, on a TCP listener, the side channel that lets fastsock
 * clients on this host in over shm or unix (see the module comment). Options: ServerOptions.
 * `instanceof net.Server`; its connections are fastsock Sockets on every rung.
 */
export class Server extends net.Server {
  /** @internal fastsock's state */
  declare [kServer]: ServerState

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
    const pollUs = opts.pollUs ?? opts.shmPollUs
    delete opts.handshakeTimeoutMs
    delete opts.pollUs
    delete opts.shmPollUs
    super(opts, listener as (socket: net.Socket) => void)
    this[kServer] = { transports: transports ?? defaultTransports(), sameUidOnly, handshakeTimeoutMs, pollUs, listeners: [], listenRung: null }
  }

  /** @internal Node's setupListenHandle, then fastsock's accept path and the rungs' listeners. */
  _listen2 (...args: unknown[]): void {
    listen2(this, args)
  }

  /** Stops accepting on every rung (the side channel too); 'close' once all connections end. */
  override close (cb?: (err?: Error) => void): this {
    close(this, cb)
    return this
  }
}
