/**
 * Rung `unix`: a verified side channel on an abstract UNIX socket (docs/design.md, "Discovery").
 *
 * A fastsock server listening on TCP addr:port also listens on the abstract name
 * `fastsock/1/<addr>/<port>`. A fastsock client whose destination is local (after DNS) connects
 * to that name, checks that the process on the other end owns the TCP listener (SO_PEERCRED +
 * SO_PEERPIDFD + /proc), exchanges HELLO/ACCEPT (lib/wire.ts), and then the UNIX stream itself
 * carries the application's bytes, on Node's own pipe handle. Nothing is ever sent on TCP for
 * discovery. Abstract names are scoped to the network namespace, like TCP ports.
 */
import * as net from 'net'
import { native } from '../native'
import { debug } from '../debug'
import { FastsockError, errnoError } from '../errors'
import { addressBytes, formatAddress, isLocalAddress, familyName, TcpView, unmapV4, dialedAddress } from '../address'
import * as wire from '../wire'
import { StreamEndpointNative } from '../native'
import { clientSetup, serverSetup, eventRelay } from './shm'
import { originals } from '../originals'
import type { TransportName } from './names'
import { LISTEN_BACKLOG } from './remote'

/**
 * Socket buffers asked for on the unix rung, per direction: about what loopback TCP autotunes to,
 * so that patterns that work over TCP (an echo nobody reads until it has written 1 MB) work here
 * too. Granted in full with CAP_NET_ADMIN; otherwise capped by net.core.{w,r}mem_max.
 */
export const UNIX_SOCKET_BUFFER_BYTES = 4 << 20

const ECONNREFUSED = -111
const ENOENT = -2

/** The abstract name a listener bound to `address` (Node's form) and `port` uses. */
export function channelName (address: string, port: number, v6only = false): string {
  return `fastsock/1/${address}${v6only ? '%v6only' : ''}/${port}`
}

/**
 * Names a client tries for a dialed address, in order: the exact address, then the wildcards
 * that would accept it (0.0.0.0 and dual-stack :: for IPv4; :: and IPv6-only :: for IPv6).
 */
export function candidateNames (dialed: string, port: number): string[] {
  const b = addressBytes(dialed)
  if (!b) return []
  const canon = formatAddress(b.family, b.bytes)
  if (b.family === 4) return [channelName(canon, port), channelName('0.0.0.0', port), channelName('::', port)]
  if (unmapV4(canon)) return [channelName(canon, port), channelName('::', port)]
  return [channelName(canon, port), channelName('::', port), channelName('::', port, true)]
}

/** The peer offers no side channel for this destination: the rung is skipped, not failed. */
export class NotOffered extends Error {}

/**
 * A connection the side channel established. On `unix` the caller adopts `probe`'s pipe
 * handle; on `shm` it wraps `shm` (the endpoint) and binds its events with `bindShm`.
 */
export interface Established {
  transport: TransportName
  /**
   * Internal socket that owns the connected handle until the caller adopts it (unix, and the
   * kernel-fd rungs: rsocket's bridge, smc, sdp).
   */
  probe: net.Socket | null
  /** The native endpoint (shm, verbs): a socket without a kernel handle. */
  shm: StreamEndpointNative | null
  /** Routes the endpoint's events to its connection object (shm). */
  bindShm: ((onevent: () => void) => void) | null
  /** Application bytes that arrived with ACCEPT, in order. */
  leftover: Buffer[]
  /** The TCP view this end reports (remote = what it dialed); null: the handle's own addresses. */
  view: TcpView | null
  /** Handshake bytes on the handle's counters, to keep them out of bytesRead/bytesWritten. */
  handshakeRead: number
  handshakeWritten: number
  /** The handle is an AF_SMC socket (smc rung), whatever the kernel runs it on. */
  smcHandle?: boolean
}

export interface UnixConnectRequest {
  /** Resolved destination addresses, local ones are tried in order. */
  addresses: string[]
  port: number
  timeoutMs: number
  /** wire.CAP_UNIX and/or wire.CAP_SHM: the rungs this attempt may end on. */
  capabilities: number
  /** Ring bytes per direction when the server picks shm. */
  shmRingBytes: number
  /** Set when the socket was destroyed meanwhile: the attempt is abandoned quietly. */
  aborted: () => boolean
}

/**
 * Finds, verifies and handshakes the side channel for the first local destination address that
 * has one. Rejects with NotOffered when no name answers, ERR_FASTSOCK_UNVERIFIED_PEER when the
 * process behind the name does not own the TCP listener, ERR_FASTSOCK_REJECTED,
 * ERR_FASTSOCK_HANDSHAKE or ERR_FASTSOCK_TRANSPORT_TIMEOUT otherwise.
 */
export async function connectUnix (req: UnixConnectRequest): Promise<Established> {
  if (!native) throw new NotOffered('native addon not loaded')
  const euid = process.geteuid ? process.geteuid() : 0
  // A name whose holder cannot be verified (a squatter) is passed over, not trusted; the next
  // candidate may still be the real listener's (a wildcard one).
  let unverified: FastsockError | null = null
  for (const target of req.addresses) {
    if (!isLocalAddress(target)) continue
    const address = dialedAddress(target) // 0.0.0.0 and :: reach 127.0.0.1 and ::1
    const dialed = addressBytes(address)!
    for (const name of candidateNames(address, req.port)) {
      const fd = native.connectAbstract(name)
      if (fd === ECONNREFUSED || fd === ENOENT) continue
      if (fd < 0) throw errnoError(fd, 'connect', `(side channel ${name})`)
      const v = native.verifyListener(fd, dialed.family, dialed.bytes, req.port, euid)
      if (!v.ok) {
        native.closeFd(fd)
        debug('unix', 'side channel %s not trusted: %s', name, v.reason)
        unverified ??= new FastsockError('ERR_FASTSOCK_UNVERIFIED_PEER', `side channel ${name} not trusted: ${v.reason}`)
        continue
      }
      debug('unix', 'side channel %s verified: pid %d (pidfd from socket: %s)', name, v.pid, v.pidfdFromSocket)
      return await handshake(fd, address, dialed, req)
    }
  }
  if (unverified) throw unverified
  throw new NotOffered('no side channel answers for this destination')
}

function handshake (fd: number, address: string, dialed: { family: 4 | 6, bytes: Uint8Array },
  req: UnixConnectRequest): Promise<Established> {
  return new Promise((resolve, reject) => {
    let probe: net.Socket
    try {
      probe = new net.Socket({ fd, readable: true, writable: true })
    } catch (err) {
      native!.closeFd(fd)
      reject(err)
      return
    }
    let acc: Buffer = Buffer.alloc(0)
    let done = false
    const started = Date.now()
    /** Ends the handshake: the probe's listeners and the timer go; the result (or its promise) is settled. */
    const finish = (err: Error | null, est?: Established | Promise<Established>): void => {
      if (done) return
      done = true
      clearTimeout(timer)
      probe.removeListener('data', onData)
      probe.removeListener('error', onError)
      probe.removeListener('close', onClose)
      if (err) {
        probe.destroy()
        reject(err)
      } else {
        resolve(est!)
      }
    }
    const timer = setTimeout(() => finish(new FastsockError('ERR_FASTSOCK_TRANSPORT_TIMEOUT',
      `side channel handshake took longer than ${req.timeoutMs} ms`)), req.timeoutMs)
    const onError = (err: Error): void => finish(new FastsockError('ERR_FASTSOCK_HANDSHAKE',
      `side channel failed during the handshake: ${err.message}`, { cause: err }))
    const onClose = (): void => finish(new FastsockError('ERR_FASTSOCK_HANDSHAKE', 'side channel closed during the handshake'))
    const onData = (chunk: Buffer): void => {
      if (req.aborted()) return finish(new NotOffered('socket destroyed during the handshake'))
      acc = acc.length ? Buffer.concat([acc, chunk]) : chunk
      let parsed
      try {
        parsed = wire.decode(acc)
      } catch (err) {
        return finish(err as Error)
      }
      if (!parsed) return
      const m = parsed.message
      if (m.type === wire.MessageType.Reject) {
        const err = new FastsockError('ERR_FASTSOCK_REJECTED', `side channel rejected the connection: ${m.text}`)
        ;(err as FastsockError & { reason: number }).reason = m.reason
        return finish(err)
      }
      const offered = (m.type === wire.MessageType.Accept && m.transport === wire.TRANSPORT_UNIX && (req.capabilities & wire.CAP_UNIX)) ||
        (m.type === wire.MessageType.Accept && m.transport === wire.TRANSPORT_SHM && (req.capabilities & wire.CAP_SHM))
      if (m.type !== wire.MessageType.Accept || m.version !== wire.PROTOCOL_VERSION || !offered) {
        return finish(new FastsockError('ERR_FASTSOCK_HANDSHAKE', `unexpected side-channel reply (type ${m.type}, version ${m.version})`))
      }
      // Stop reading on the probe: from here on the bytes belong to the application socket.
      const handle = (probe as unknown as { _handle: PipeHandle })._handle
      probe.pause()
      handle.reading = false
      handle.readStop()
      const leftover: Buffer[] = []
      if (parsed.bytes < acc.length) leftover.push(acc.subarray(parsed.bytes))
      let more: Buffer | null
      while ((more = probe.read() as Buffer | null) !== null) leftover.push(more)
      const family = familyName(address)
      const view = { remote: { address, family, port: req.port }, local: { address, family, port: m.clientPort } }
      if (m.transport === wire.TRANSPORT_SHM) {
        if (leftover.length) return finish(new FastsockError('ERR_FASTSOCK_HANDSHAKE', 'bytes after ACCEPT(shm)'))
        // The side channel leaves libuv: keep a dup for the shm setup and as the liveness signal.
        const fd2 = native!.dupFd(handle.fd)
        if (fd2 < 0) return finish(errnoError(fd2, 'dup'))
        const relay = eventRelay()
        const remaining = Math.max(1, req.timeoutMs - (Date.now() - started))
        finish(null, clientSetup(fd2, req.shmRingBytes, remaining, relay.emit).then(ep => ({
          transport: 'shm', probe: null, shm: ep, bindShm: relay.bind, leftover: [], view, handshakeRead: 0, handshakeWritten: 0
        })))
        probe.destroy() // closes the original fd; fd2 keeps the socket
        return
      }
      native!.growSocketBuffers(handle.fd, UNIX_SOCKET_BUFFER_BYTES) // it carries the data: size it like TCP's
      finish(null, {
        transport: 'unix',
        probe,
        shm: null,
        bindShm: null,
        leftover,
        view,
        handshakeRead: parsed.bytes,
        handshakeWritten: wire.HELLO_BYTES
      })
    }
    probe.on('data', onData)
    probe.on('error', onError)
    probe.on('close', onClose)
    probe.write(wire.encodeHello({ capabilities: req.capabilities, family: dialed.family, address: dialed.bytes, port: req.port }))
  })
}

/** The parts of Node's Pipe handle (a StreamBase) this module touches. */
export interface PipeHandle {
  fd: number
  reading: boolean
  readStop (): number
  readStart (): number
  getAsyncId (): number
  useUserBuffer (buf: Uint8Array): void
  onread: unknown
  bytesRead: number
  bytesWritten: number
}

let nextClientPort = 32768 + Math.floor(Math.random() * (60999 - 32768))

/** A port number in the kernel's ephemeral range for a side-channel client's TCP view. */
function allocateClientPort (): number {
  const p = nextClientPort
  nextClientPort = nextClientPort >= 60999 ? 32768 : nextClientPort + 1
  return p
}

/** What a server needs to know about an accepted side-channel connection to adopt it. */
export interface AcceptedFast {
  transport: TransportName
  /** The connected handle (unix; a pipe or TCP handle on the kernel-fd rungs). */
  handle: PipeHandle | null
  /** The endpoint and its event binding (shm). */
  shm: StreamEndpointNative | null
  bindShm: ((onevent: () => void) => void) | null
  /** The TCP view; null: the handle's own addresses are the truth (smc, sdp). */
  view: TcpView | null
  handshakeRead: number
  handshakeWritten: number
}

export interface SideChannelOptions {
  /** The TCP listener's bound address as Node reports it, and its port. */
  address: string
  port: number
  v6only: boolean
  /** Rungs this listener may choose, best first: 'shm' (when the client offers it), 'unix'. */
  offer: { shm: boolean, unix: boolean }
  /** Same-uid clients only (the default): others get REJECT(Forbidden) and use TCP. */
  sameUidOnly: boolean
  handshakeTimeoutMs: number
  /** Returns a reason to turn the client away now (maxConnections), or null. */
  busy: () => string | null
  /** Adopts the verified, handshaken connection as an application socket. */
  accept: (a: AcceptedFast) => void
}

/**
 * The listening half of the side channel, owned by a fastsock Server. Its own net.Server is
 * unref'd: the TCP listener alone decides whether the process stays alive.
 */
export class SideChannelListener {
  readonly name: string
  private server: net.Server | null = null
  private readonly opts: SideChannelOptions
  private readonly family: 4 | 6

  constructor (opts: SideChannelOptions) {
    this.opts = opts
    this.name = channelName(opts.address, opts.port, opts.v6only)
    this.family = net.isIPv4(opts.address) ? 4 : 6
  }

  /** Binds the name. Returns false (and logs why with FASTSOCK_DEBUG) when it cannot. */
  listen (): boolean {
    if (!native) return false
    let fd: number
    try {
      fd = native.listenAbstract(this.name, LISTEN_BACKLOG)
    } catch (err) {
      debug('unix', 'no side channel for %s:%d: %s (clients will use TCP)', this.opts.address, this.opts.port, (err as Error).message)
      return false
    }
    const server = (originals.createServer as typeof net.createServer)({ pauseOnConnect: true })
    server.on('error', err => debug('unix', 'side channel %s error: %s', this.name, err.message))
    if ((require('cluster') as import('cluster').Cluster).isWorker) {
      // listen({ fd }) would go through the cluster primary (net.js listenInCluster), which
      // cannot take this fd: set the handle up here, as a lone process's listen would.
      ;(server as unknown as { _listen2: (...a: unknown[]) => void })._listen2(null, null, null, LISTEN_BACKLOG, fd)
    } else {
      server.listen({ fd })
    }
    // Accept here rather than through Node's onconnection: these internal connections are not
    // the application's, so they do not go on the 'net.server.socket' diagnostics channel (the
    // connection the handshake yields is published, as the server's own, when it is adopted).
    const h = (server as unknown as { _handle: { onconnection: unknown } | null })._handle
    if (h) {
      h.onconnection = (err: number, clientHandle: unknown) => {
        if (err || !clientHandle) return
        const NodeSocket = originals.Socket as unknown as new (o: object) => net.Socket
        this.onRaw(new NodeSocket({ handle: clientHandle, pauseOnCreate: true, readable: true, writable: true }))
      }
    }
    server.unref()
    this.server = server
    debug('unix', 'side channel listening on @%s', this.name)
    return true
  }

  close (): void {
    if (this.server) {
      this.server.close()
      this.server = null
    }
  }

  private reject (raw: net.Socket, reason: wire.RejectReason, text: string): void {
    debug('unix', 'side channel %s rejects a client: %s', this.name, text)
    raw.end(wire.encodeReject(reason, text))
    raw.destroySoon()
  }

  /**
   * Set in a cluster primary whose TCP handle cluster took over (lib/cluster.ts): each client is
   * handed, unread, to a worker instead of being served here.
   */
  handoff: ((raw: net.Socket) => void) | null = null

  /** Serves one side-channel client: `raw` is its connected socket, nothing read yet. */
  serve (raw: net.Socket): void {
    this.onRaw(raw)
  }

  private onRaw (raw: net.Socket): void {
    if (this.handoff) return this.handoff(raw)
    const handle = (raw as unknown as { _handle: PipeHandle | null })._handle
    if (!handle || !native) return void raw.destroy()
    raw.on('error', err => debug('unix', 'side channel client error: %s', err.message))
    if (this.opts.sameUidOnly) {
      let uid = -1
      try {
        uid = native.peerCred(handle.fd).uid
      } catch {}
      const euid = process.geteuid ? process.geteuid() : 0
      if (uid !== euid) return this.reject(raw, wire.RejectReason.Forbidden, `uid ${uid} is not this server's uid`)
    }
    let acc: Buffer = Buffer.alloc(0)
    const timer = setTimeout(() => raw.destroy(), this.opts.handshakeTimeoutMs)
    const onData = (chunk: Buffer): void => {
      acc = acc.length ? Buffer.concat([acc, chunk]) : chunk
      let parsed
      try {
        parsed = wire.decode(acc)
      } catch (err) {
        clearTimeout(timer)
        raw.removeListener('data', onData)
        return this.reject(raw, wire.RejectReason.Malformed, (err as Error).message)
      }
      if (!parsed) return
      clearTimeout(timer)
      raw.removeListener('data', onData)
      raw.pause()
      handle.reading = false
      handle.readStop()
      const m = parsed.message
      if (m.type !== wire.MessageType.Hello) return this.reject(raw, wire.RejectReason.Malformed, 'expected HELLO')
      if (m.version !== wire.PROTOCOL_VERSION) {
        return this.reject(raw, wire.RejectReason.Version, `protocol version ${m.version} unsupported; this server speaks ${wire.PROTOCOL_VERSION}`)
      }
      if (parsed.bytes !== acc.length) return this.reject(raw, wire.RejectReason.Malformed, 'bytes after HELLO before ACCEPT')
      const useShm = this.opts.offer.shm && (m.capabilities & wire.CAP_SHM) !== 0
      if (!useShm && !(this.opts.offer.unix && (m.capabilities & wire.CAP_UNIX))) {
        return this.reject(raw, wire.RejectReason.NoTransport, 'no common transport')
      }
      const dialed = formatAddress(m.family, m.address)
      const why = this.checkDialed(m.family, dialed, m.port)
      if (why) return this.reject(raw, wire.RejectReason.Malformed, why)
      const busy = this.opts.busy()
      if (busy) return this.reject(raw, wire.RejectReason.Busy, busy)
      const clientPort = allocateClientPort()
      // The server reports the address the client reached, in its own family (IPv4-mapped on
      // an IPv6 listener), like the kernel does for a loopback TCP connection.
      const seen = this.family === 6 && m.family === 4 ? `::ffff:${dialed}` : dialed
      const family = familyName(seen)
      const view = { local: { address: seen, family, port: this.opts.port }, remote: { address: seen, family, port: clientPort } }
      const transport = useShm ? wire.TRANSPORT_SHM : wire.TRANSPORT_UNIX
      raw.write(wire.encodeAccept({ transport, clientPort }), err => {
        if (err || raw.destroyed) return
        const h = (raw as unknown as { _handle: PipeHandle | null })._handle
        if (!h) return
        if (useShm) {
          // The side channel leaves libuv: a dup carries SHM_SETUP, then stays as liveness.
          const fd2 = native!.dupFd(h.fd)
          raw.destroy()
          if (fd2 < 0) return
          const relay = eventRelay()
          serverSetup(fd2, this.opts.handshakeTimeoutMs, relay.emit).then(ep => {
            this.opts.accept({ transport: 'shm', handle: null, shm: ep, bindShm: relay.bind, view, handshakeRead: 0, handshakeWritten: 0 })
          }, e => debug('unix', 'shm setup with a client failed: %s', (e as Error).message))
          return
        }
        native!.growSocketBuffers(h.fd, UNIX_SOCKET_BUFFER_BYTES) // it carries the data: size it like TCP's
        ;(raw as unknown as { _handle: PipeHandle | null })._handle = null
        raw.destroy()
        this.opts.accept({
          transport: 'unix',
          handle: h,
          shm: null,
          bindShm: null,
          view,
          handshakeRead: wire.HELLO_BYTES,
          handshakeWritten: wire.ACCEPT_BYTES
        })
      })
    }
    raw.on('data', onData)
    raw.resume()
  }

  /** Null when a client may have reached this listener by dialing `dialed`, else why not. */
  private checkDialed (family: 4 | 6, dialed: string, port: number): string | null {
    if (port !== this.opts.port) return `HELLO names port ${port}, this listener is on ${this.opts.port}`
    if (!isLocalAddress(dialed)) return `HELLO names ${dialed}, not an address of this host`
    const bound = this.opts.address
    if (bound === '0.0.0.0') return family === 4 ? null : `IPv6 ${dialed} on an IPv4 listener`
    if (bound === '::') return this.opts.v6only && family === 4 ? `IPv4 ${dialed} on an IPv6-only listener` : null
    return dialed === bound ? null : `HELLO names ${dialed}, this listener is bound to ${bound}`
  }
}
