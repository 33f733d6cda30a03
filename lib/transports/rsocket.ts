/**
 * Rung `rsocket`: rsockets (librdmacm's socket API over RDMA RC queue pairs, the maintained
 * successor of SDP), for a peer on another host (or this one) with an RDMA device.
 *
 * rsockets have no fd that libuv could poll, so each connection is bridged (csrc/rdma/bridge.h):
 * a native helper thread moves bytes between the rsocket and one end of a UNIX socketpair, and
 * the other end is the socket's own Node pipe handle with a TCP view (the rsocket's addresses),
 * as on the `unix` rung. Stream semantics carry over: EOF each way (half-open), errors, and
 * backpressure (the bridge stops reading a side whose other side is full).
 *
 * Port space: an rsocket server listens in rdma_cm's TCP port space on the TCP listener's port
 * number P, bound per local address of an RDMA device (the wildcard, like any address whose
 * device is iWARP, collides with Node's TCP listener: iWARP connections are kernel TCP ones).
 * The `verbs` rung uses RDMA_PS_IB for the same P, so the two never collide.
 * docs/transports.md ("rsocket") has what was measured.
 */
import * as net from 'net'
import { native, RsocketOutcome } from '../native'
import { debug } from '../debug'
import { errnoError, FastsockError } from '../errors'
import { familyName, unmapV4, TcpView } from '../address'
import { originals } from '../originals'
import { registerRemoteRung, RemoteConnectRequest, RemoteListenRequest, RemoteListener, isLoopback, listenAddresses, LISTEN_BACKLOG } from './remote'
import type { Established, PipeHandle } from './unix'


/** An Error for a failed attempt: code from errno, `notOffered` when nobody listens there. */
function attemptError (o: RsocketOutcome, address: string, port: number): Error & { notOffered?: boolean } {
  const errno = o.errno ?? -5
  let err: Error & { notOffered?: boolean }
  if (errno === -110) {
    err = new FastsockError('ERR_FASTSOCK_TRANSPORT_TIMEOUT', `rsocket: ${address}:${port}: ${o.reason}`)
  } else {
    err = errnoError(errno, o.syscall ?? 'rconnect', `${address}:${port} (rsocket: ${o.reason})`)
  }
  if (o.notOffered) err.notOffered = true
  return err
}

/** A TCP view from the native names, in Node's form. */
function viewOf (o: RsocketOutcome, mapV4: boolean): TcpView {
  const ep = (e: { address: string, port: number }): { address: string, family: 'IPv4' | 'IPv6', port: number } => {
    const address = mapV4 && net.isIPv4(e.address) ? `::ffff:${e.address}` : e.address
    return { address, family: familyName(address), port: e.port }
  }
  return { local: ep(o.local!), remote: ep(o.remote!) }
}

/** A paused net.Socket over the JS end of a bridge's socketpair (a Node Pipe handle). */
function pipeSocket (fd: number): net.Socket {
  const NodeSocket = originals.Socket as unknown as new (o: object) => net.Socket
  return new NodeSocket({ fd, readable: true, writable: true, pauseOnCreate: true })
}

/**
 * One connect in a helper thread, which ends within timeoutMs on its own; a timer 1 s later
 * stands guard in case librdmacm blocks it anyway (a connection that still arrives then is
 * closed at once), so that the chain always moves on.
 */
function attempt (address: string, port: number, timeoutMs: number): Promise<RsocketOutcome> {
  return new Promise(resolve => {
    let late = false
    const guard = setTimeout(() => {
      late = true
      resolve({ errno: -110, syscall: 'rconnect', reason: `no answer from the connect thread within ${timeoutMs} ms` })
    }, timeoutMs + 1000)
    native!.rsocketConnect!(address, port, timeoutMs, o => {
      if (!late) {
        clearTimeout(guard)
        return resolve(o)
      }
      if (o.fd !== undefined) native!.closeFd(o.fd)
    })
  })
}

/**
 * Connects to the first address that answers with rsockets. Loopback addresses are declined at
 * once unless an RDMA device owns them. Rejects with `notOffered` when every address declined or
 * refused (no RDMA route, an iWARP route, or REJECTED: no rsocket listener on that port).
 */
async function connect (req: RemoteConnectRequest): Promise<Established> {
  const started = Date.now()
  let last: (Error & { notOffered?: boolean }) | null = null
  let allNotOffered = true
  for (const raw of req.addresses) {
    if (req.aborted()) break
    const address = unmapV4(raw) ?? raw
    if ((isLoopback(address) || address === '0.0.0.0' || address === '::') && !native!.rdmaDeviceForAddress!(address)) {
      last = Object.assign(new FastsockError('ERR_FASTSOCK_NOT_OFFERED', `rsocket: ${address} is a loopback address no RDMA device owns`), { notOffered: true })
      continue
    }
    const left = req.timeoutMs - (Date.now() - started)
    if (left <= 0) {
      last = new FastsockError('ERR_FASTSOCK_TRANSPORT_TIMEOUT', `rsocket: no connection within ${req.timeoutMs} ms`)
      allNotOffered = false
      break
    }
    const o = await attempt(address, req.port, left)
    if (o.fd === undefined) {
      last = attemptError(o, address, req.port)
      if (!o.notOffered) allNotOffered = false
      debug('rsocket', 'attempt to %s:%d failed: %s', address, req.port, last.message)
      continue
    }
    if (req.aborted()) {
      native!.closeFd(o.fd)
      break
    }
    debug('rsocket', 'connected to %s:%d over %s (%s:%d -> %s:%d)', address, req.port, o.device,
      o.local!.address, o.local!.port, o.remote!.address, o.remote!.port)
    return {
      transport: 'rsocket',
      probe: pipeSocket(o.fd),
      shm: null,
      bindShm: null,
      leftover: [],
      view: viewOf(o, false),
      handshakeRead: 0,
      handshakeWritten: 0
    }
  }
  const err = last ?? Object.assign(new FastsockError('ERR_FASTSOCK_NOT_OFFERED', 'rsocket: no address to dial'), { notOffered: true })
  if (allNotOffered) err.notOffered = true
  throw err
}

/**
 * Listens with rsockets on port `req.port` of every local address of an RDMA device that the
 * TCP listener covers. Null when no address could be bound (each reason in FASTSOCK_DEBUG).
 */
function listen (req: RemoteListenRequest): RemoteListener | null {
  const ids: number[] = []
  let closed = false
  const mapV4 = req.address === '::'
  const onAccept = (o: RsocketOutcome): void => {
    if (o.fd === undefined) return
    if (closed) return void native!.closeFd(o.fd)
    const busy = req.busy()
    if (busy) {
      debug('rsocket', 'turning away %s:%d: %s', o.remote!.address, o.remote!.port, busy)
      return void native!.closeFd(o.fd)
    }
    let raw: net.Socket
    try {
      raw = pipeSocket(o.fd)
    } catch (err) {
      native!.closeFd(o.fd)
      return void debug('rsocket', 'cannot adopt an accepted connection: %s', (err as Error).message)
    }
    const handle = (raw as unknown as { _handle: PipeHandle | null })._handle
    ;(raw as unknown as { _handle: PipeHandle | null })._handle = null
    raw.destroy()
    req.accept({ transport: 'rsocket', handle, shm: null, bindShm: null, view: viewOf(o, mapV4), handshakeRead: 0, handshakeWritten: 0 })
  }
  for (const address of listenAddresses(req.address, req.v6only)) {
    const dev = native!.rdmaDeviceForAddress!(address)
    if (!dev) {
      debug('rsocket', 'not listening on %s:%d: no RDMA device owns that address', address, req.port)
      continue
    }
    if (dev.transport === 'iwarp') {
      debug('rsocket', 'not listening on %s:%d: %s is iWARP, whose rdma_cm connections are kernel TCP ones (the TCP listener holds the port)', address, req.port, dev.name)
      continue
    }
    try {
      ids.push(native!.rsocketListen!(address, req.port, LISTEN_BACKLOG, onAccept))
      debug('rsocket', 'listening on %s:%d (%s)', address, req.port, dev.name)
    } catch (err) {
      debug('rsocket', 'not listening on %s:%d (%s): %s', address, req.port, dev.name, (err as Error).message)
    }
  }
  if (ids.length === 0) return null
  return {
    close () {
      if (closed) return
      closed = true
      for (const id of ids) native!.rsocketClose!(id)
    }
  }
}

if (native && typeof native.rsocketConnect === 'function') {
  registerRemoteRung({ name: 'rsocket', connect, listen })
}
