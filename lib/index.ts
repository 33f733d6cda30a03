/**
 * fastsock: `require('fastsock')` in place of `require('net')`.
 *
 * Every export of `net` is here; `Socket`, `Stream`, `Server`, `connect`, `createConnection` and
 * `createServer` are fastsock's: same API and events, plus the failover chain (`transports`
 * option, `socket.transport`) and typed arrays (`write(view)`, `readInto(view)`).
 */
import * as net from 'net'
import * as diagnostics from 'diagnostics_channel'
import { Socket, SocketOptions } from './socket'
import { Server, ServerOptions } from './server'

export * from 'net'
export { Socket, Socket as Stream, Server }
export type { SocketOptions, ServerOptions }
export { transports, TransportAvailability, TRANSPORT_NAMES, TransportName } from './transports/registry'
import type { TransportName } from './transports/registry'
export { FastsockError } from './errors'
export type { SmcInfo } from './transports/contract'
export { clearNegativeCache } from './negative-cache'

type ConnectListener = () => void
type AnyFn = (...args: any[]) => any // eslint-disable-line @typescript-eslint/no-explicit-any
const clientSocketChannel = diagnostics.channel('net.client.socket')
const normalizeArgs = (net as unknown as { _normalizeArgs: (args: unknown[]) => unknown[] })._normalizeArgs

/**
 * Creates a fastsock Socket and connects it: `connect(port[, host][, listener])`,
 * `connect(options[, listener])` or `connect(path[, listener])`, as net.connect.
 */
export function connect (options: SocketOptions & net.NetConnectOpts, connectionListener?: ConnectListener): Socket
export function connect (port: number, host?: string, connectionListener?: ConnectListener): Socket
export function connect (path: string, connectionListener?: ConnectListener): Socket
export function connect (...args: unknown[]): Socket {
  const normalized = normalizeArgs(args)
  const options = normalized[0] as SocketOptions & { timeout?: number }
  const socket = new Socket(options)
  // As Node's net.connect does: APM tools see every client socket, on every rung.
  if (clientSocketChannel.hasSubscribers) clientSocketChannel.publish({ socket })
  if (options.timeout) socket.setTimeout(options.timeout)
  return (socket.connect as AnyFn)(normalized)
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
 * transport of the socket it wraps (a TLSSocket's `_parent`, followed down), else `'tcp'` for a
 * connected socket of Node's own with a TCP peer, else null (not connected, or not a socket).
 * For http, `transportOf(req.socket)` / `transportOf(res.socket)`.
 */
export function transportOf (socket: net.Socket | null | undefined): TransportName | null {
  let s = socket as (net.Socket & { transport?: TransportName | null, _parent?: net.Socket | null }) | null | undefined
  for (let depth = 0; s && depth < 8; depth++) {
    if (typeof s.transport === 'string') return s.transport
    if (s._parent) { s = s._parent; continue }
    return s.remotePort !== undefined ? 'tcp' : null
  }
  return null
}
