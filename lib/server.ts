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

const serverSocketChannel = diagnostics.channel('net.server.socket')

/** Options of `createServer()`: Node's, plus the chain's. */
export interface ServerOptions extends net.ServerOpts {
  /** Rungs this server offers besides TCP (default: FASTSOCK_TRANSPORTS, else all). */
  transports?: TransportName[] | string
  /** Accept side-channel clients of this uid only (default true). */
  sameUidOnly?: boolean
  /** How long a side-channel client may take to say HELLO, in ms (default 2000). */
  handshakeTimeoutMs?: number
  /** shm connections accepted here: in-loop polling budget in µs (see SocketOptions.shmPollUs). */
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

export class Server extends net.Server {
  /** @internal */
  _fsTransports: TransportName[]
  /** @internal */
  _fsSideChannel: SideChannelListener | null = null
  /** @internal */
  _fsSameUidOnly: boolean
  /** @internal */
  _fsHandshakeTimeoutMs: number
  /** @internal */
  _fsShmPollUs: number | undefined

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
    this._fsTransports = transports ?? defaultTransports()
    this._fsSameUidOnly = sameUidOnly
    this._fsHandshakeTimeoutMs = handshakeTimeoutMs
    this._fsShmPollUs = shmPollUs
  }

  /** @internal Node's setupListenHandle, then fastsock's accept path and side channel. */
  _listen2 (...args: unknown[]): void {
    const self = this as unknown as NodeServerInternals
    ;(net.Server.prototype as unknown as NodeServerInternals)._listen2.apply(this, args)
    if (!self._handle) return // listen failed: Node emits the error
    self._handle.onconnection = (err: number, clientHandle: ClientHandle) => this._fsOnTcpConnection(err, clientHandle)
    const flags = (args[5] as number | undefined) ?? 0
    this._fsStartSideChannel((flags & UV_TCP_IPV6ONLY) !== 0)
  }

  private _fsStartSideChannel (v6only: boolean): void {
    const offer = {
      shm: this._fsTransports.includes('shm') && availability('shm').available,
      unix: this._fsTransports.includes('unix') && availability('unix').available
    }
    if (!offer.shm && !offer.unix) return
    const addr = this.address()
    if (addr === null || typeof addr === 'string') return
    this._fsSideChannel?.close()
    const sc = new SideChannelListener({
      address: addr.address,
      port: addr.port,
      v6only,
      offer,
      sameUidOnly: this._fsSameUidOnly,
      handshakeTimeoutMs: this._fsHandshakeTimeoutMs,
      busy: () => {
        const s = this as unknown as NodeServerInternals
        return this.maxConnections && s._connections >= this.maxConnections ? 'maxConnections reached' : null
      },
      accept: a => this._fsAcceptFast(a)
    })
    this._fsSideChannel = sc.listen() ? sc : null
  }

  private _fsNewSocket (handle: unknown, accepted: AcceptedInfo): Socket {
    const hwm = (this as unknown as NodeServerInternals).highWaterMark
    return new Socket({
      handle,
      allowHalfOpen: (this as unknown as { allowHalfOpen: boolean }).allowHalfOpen,
      pauseOnCreate: (this as unknown as { pauseOnConnect: boolean }).pauseOnConnect,
      readable: true,
      writable: true,
      readableHighWaterMark: hwm,
      writableHighWaterMark: hwm,
      [kAccepted]: accepted
    } as never)
  }

  private _fsAdmit (socket: Socket): void {
    const s = this as unknown as NodeServerInternals
    s._connections++
    ;(socket as unknown as { server: Server, _server: Server }).server = this
    ;(socket as unknown as { _server: Server })._server = this
    this.emit('connection', socket)
    if (serverSocketChannel.hasSubscribers) serverSocketChannel.publish({ socket })
  }

  /** Node's onconnection, creating a fastsock Socket. */
  private _fsOnTcpConnection (err: number, clientHandle: ClientHandle): void {
    if (err) {
      const e = new Error(`accept ${util.getSystemErrorName(err)}`) as NodeJS.ErrnoException
      e.errno = err
      e.code = util.getSystemErrorName(err)
      e.syscall = 'accept'
      this.emit('error', e)
      return
    }
    const s = this as unknown as NodeServerInternals
    if (this.maxConnections && s._connections >= this.maxConnections) {
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
      this.emit('drop', data)
      clientHandle.close()
      return
    }
    const socket = this._fsNewSocket(clientHandle, { transport: 'tcp', view: null, handshakeRead: 0, handshakeWritten: 0 })
    const o = this as unknown as { noDelay?: boolean, keepAlive?: boolean, keepAliveInitialDelay?: number }
    if (o.noDelay) socket.setNoDelay(true)
    if (o.keepAlive) socket.setKeepAlive(true, (o.keepAliveInitialDelay ?? 0) * 1000)
    this._fsAdmit(socket)
  }

  /** A connection the side channel verified and handshook: adopt it like a TCP one. */
  private _fsAcceptFast (a: AcceptedFast): void {
    if (!this.listening) {
      ;(a.handle as unknown as ClientHandle | null)?.close()
      a.shm?.close(true)
      return
    }
    const socket = this._fsNewSocket(a.handle ?? undefined, {
      transport: a.transport, view: a.view, handshakeRead: a.handshakeRead, handshakeWritten: a.handshakeWritten, shm: a.shm, bindShm: a.bindShm, shmPollUs: this._fsShmPollUs
    })
    this._fsAdmit(socket)
  }

  /** Stops accepting on every rung (the side channel too); 'close' once all connections end. */
  override close (cb?: (err?: Error) => void): this {
    this._fsSideChannel?.close()
    this._fsSideChannel = null
    return super.close(cb)
  }
}
