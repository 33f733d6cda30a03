/**
 * fastsock: `require('fastsock')` in place of `require('net')`.
 *
 * Every export of `net` is here; `Socket`, `Stream`, `Server`, `connect`, `createConnection` and
 * `createServer` are fastsock's: same API and events, plus the failover chain (`transports`
 * option, `socket.transport`) and typed arrays (`write(view)`, `readInto(view)`).
 */
import * as net from 'net'
import { Socket, SocketOptions, NODE_CONNECT_PUBLISHES, publishClientSocket } from './socket'
import { Server, ServerOptions } from './server'
import { originals, normalizeArgs } from './originals'
import { debug } from './debug'
import { NODE_TRANSPORT } from './transports/registry'
import { native } from './native'

export * from 'net'
export { Socket, Socket as Stream, Server }
export type { SocketOptions, ServerOptions }
export { transports, TransportAvailability, TRANSPORT_NAMES, TransportName } from './transports/registry'
import type { TransportName } from './transports/registry'
export { FastsockError } from './errors'
export type { SmcInfo } from './contract'
export { clearNegativeCache } from './negative-cache'

type ConnectListener = () => void
type AnyFn = (...args: any[]) => any // eslint-disable-line @typescript-eslint/no-explicit-any

/**
 * Creates a fastsock Socket and connects it: `connect(port[, host][, listener])`,
 * `connect(options[, listener])` or `connect(path[, listener])`, as net.connect.
 */
export function connect (options: SocketOptions & net.NetConnectOpts, connectionListener?: ConnectListener): Socket
export function connect (port: number, host?: string, connectionListener?: ConnectListener): Socket
export function connect (path: string, connectionListener?: ConnectListener): Socket
export function connect (...args: unknown[]): Socket {
  return connectVia(connect, args)
}

/**
 * @internal `connect(...args)` as called through `caller` (connect itself, or the preload's
 * `net.connect`, lib/register.ts): the h2c check looks at the frame above `caller`. `normalized`:
 * `normalizeArgs(args)`, when the caller made it already (the preload's connect does).
 */
export function connectVia (caller: AnyFn, args: unknown[], normalized = normalizeArgs(args)): Socket {
  const options = normalized[0] as SocketOptions & { timeout?: number, path?: unknown }
  if (options.transports === undefined && options.path == null && isH2cClientSocket(args, caller)) {
    debug('http2', 'h2c client session: Node\'s TCP (http2 wraps its socket before it connects: a kernel handle is needed then)')
    options.transports = [NODE_TRANSPORT]
  }
  const socket = new Socket(options)
  // As Node's net.connect does up to 22 (from 24 on, Socket#connect publishes: lib/socket/connect.ts).
  if (!NODE_CONNECT_PUBLISHES) publishClientSocket(socket)
  if (options.timeout) socket.setTimeout(options.timeout)
  return (socket.connect as AnyFn)(normalized)
}
/** `http2` was loaded in this process (checked until it is). */
let http2Loaded = false
/** The length of process.moduleLoadList when it was last scanned for http2. */
let modulesScanned = -1

/**
 * True when `connect` was called by http2's own connect() (with the preload hook, as
 * `net.connect`): the socket of an h2c client session (`http2.connect('http://...')` without
 * `createConnection`). http2 wraps the socket it gets at once, before it connects, and a socket
 * still running the chain has no kernel handle then, so nghttp2 would reach it through Node's
 * JSStreamSocket on every rung (measured slower than Node's TCP: docs/transparency.md, "Sockets
 * TLS and HTTP/2 wrap"); Node's own TCP connect has its handle from the start. Unless the caller
 * chose rungs (`transports`). grpc-js connects first and hands http2 the connected socket: its
 * sockets keep the chain. Costs one one-frame stack capture per connect once http2 is loaded.
 */
function isH2cClientSocket (args: unknown[], caller: AnyFn): boolean {
  if (args.length !== 1 || typeof args[0] !== 'object' || args[0] === null) return false
  if (!http2Loaded) {
    // Scanned again only once the list grew (a core module loaded since): not per connect.
    const list = (process as unknown as { moduleLoadList: string[] }).moduleLoadList
    if (list.length === modulesScanned) return false
    modulesScanned = list.length
    if (!list.includes('NativeModule http2')) return false
    http2Loaded = true
  }
  const limit = Error.stackTraceLimit
  Error.stackTraceLimit = 1
  const at: { stack?: string } = {}
  Error.captureStackTrace(at, caller)
  Error.stackTraceLimit = limit
  return typeof at.stack === 'string' && at.stack.includes('node:internal/http2/')
}

/** Alias of `connect`, as in `net`. */
export const createConnection = connect

/** Creates a fastsock Server, as net.createServer. */
export function createServer (connectionListener?: (socket: Socket) => void): Server
export function createServer (options?: ServerOptions, connectionListener?: (socket: Socket) => void): Server
export function createServer (options?: ServerOptions | ((socket: Socket) => void), connectionListener?: (socket: Socket) => void): Server {
  return new Server(options as ServerOptions, connectionListener)
}

/**
 * The rung carrying `socket`'s connection: its `transport` for a fastsock socket, else the
 * transport of the socket it wraps (a TLSSocket's `_parent`, the stream of Node's JSStreamSocket
 * such as an http2 session's `socket`, followed down), else `'tcp'` for a
 * connected socket of Node's own with a TCP peer, else null (not connected, or not a socket).
 * For http, `transportOf(req.socket)` / `transportOf(res.socket)`.
 */
export function transportOf (socket: net.Socket | null | undefined): TransportName | null {
  let s = socket as (net.Socket & { transport?: TransportName | null, _parent?: net.Socket | null, stream?: unknown }) | null | undefined
  for (let depth = 0; s && depth < 8; depth++) {
    if (typeof s.transport === 'string') return s.transport
    if (s._parent) { s = s._parent; continue }
    // Node's JSStreamSocket (what http2 and TLS put over a socket without a kernel handle; an
    // http2 session's `socket`): the socket it wraps.
    if (s.stream instanceof originals.Socket) { s = s.stream as typeof s; continue }
    return s.remotePort !== undefined ? 'tcp' : null
  }
  return null
}

/**
 * The credentials of the process at the other end of a UNIX-domain `socket` (SO_PEERCRED, as the
 * kernel recorded them at connect): `{ pid, uid, gid }`; null for a socket without a UNIX
 * kernel handle (TCP, shm, not connected) or when the addon is not loaded.
 */
export function peerCredentials (socket: net.Socket | null | undefined): { pid: number, uid: number, gid: number } | null {
  const handle = (socket as { _handle?: { fd?: number } | null } | null | undefined)?._handle
  const fd = handle?.fd
  if (native === null || socket === null || socket === undefined || socket.remoteAddress !== undefined || typeof fd !== 'number' || fd < 0) return null
  try {
    return native.peerCred(fd)
  } catch {
    return null // not a UNIX socket, or closed meanwhile
  }
}
