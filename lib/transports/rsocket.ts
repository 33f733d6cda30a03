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
import { native, nativeMissingReason, RsocketOutcome } from '../native'
import { debug } from '../debug'
import { errnoError, ERRNO, AttemptTimeoutError, NotOfferedError, unserved } from '../errors'
import { familyName, unmapV4, TcpView } from '../address'
import { handleOverFd } from '../handles'
import { isLoopback, crossHostListenAddresses } from './remote'
import { channel, Capabilities, Channel, ConnectRequest, KernelHandle, ListenRequest, RungListener, Rung, NO_CAPABILITIES, LISTEN_BACKLOG } from '../contract'
import { rdma, rdmaMissing, activeDevices } from './rdma'

/** The bridge's JS end is a UNIX stream socket standing in for TCP. */
const CAPS: Capabilities = Object.freeze({ ...NO_CAPABILITIES, pipeStandIn: true })

/** The error of a failed attempt: a timeout, UnservedError when nobody listens there, else Node's system error. */
function attemptError (o: RsocketOutcome, address: string, port: number): Error {
  const errno = o.errno ?? ERRNO.EIO
  if (errno === ERRNO.ETIMEDOUT) return new AttemptTimeoutError(`rsocket: ${address}:${port}: ${o.reason}`)
  const syscall = o.syscall ?? 'rconnect'
  const extra = `${address}:${port} (rsocket: ${o.reason})`
  return o.notOffered ? unserved(errno, syscall, extra) : errnoError(errno, syscall, extra)
}

/** A TCP view from the native names, in Node's form. */
function viewOf (o: RsocketOutcome, mapV4: boolean): TcpView {
  const ep = (e: { address: string, port: number }): { address: string, family: 'IPv4' | 'IPv6', port: number } => {
    const address = mapV4 && net.isIPv4(e.address) ? `::ffff:${e.address}` : e.address
    return { address, family: familyName(address), port: e.port }
  }
  return { local: ep(o.local!), remote: ep(o.remote!) }
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
 * once unless an RDMA device owns them. Rejects with NotOfferedError or UnservedError when every address declined or
 * refused (no RDMA route, an iWARP route, or REJECTED: no rsocket listener on that port).
 */
async function connect (req: ConnectRequest): Promise<Channel> {
  let last: Error | null = null
  for (const raw of req.addresses) {
    if (req.signal.aborted) throw req.signal.reason
    const address = unmapV4(raw) ?? raw
    if ((isLoopback(address) || address === '0.0.0.0' || address === '::') && !native!.rdmaDeviceForAddress!(address)) {
      last = new NotOfferedError(`rsocket: ${address} is a loopback address no RDMA device owns`)
      continue
    }
    const o = await attempt(address, req.port, Math.max(1, req.deadline - Date.now()))
    if (o.fd === undefined) {
      last = attemptError(o, address, req.port)
      debug('rsocket', 'attempt to %s:%d failed: %s', address, req.port, last.message)
      continue
    }
    if (req.signal.aborted) {
      native!.closeFd(o.fd)
      throw req.signal.reason
    }
    debug('rsocket', 'connected to %s:%d over %s (%s:%d -> %s:%d)', address, req.port, o.device,
      o.local!.address, o.local!.port, o.remote!.address, o.remote!.port)
    return channel({ transport: 'rsocket', handle: handleOverFd(o.fd), view: viewOf(o, false), caps: CAPS })
  }
  throw last ?? new NotOfferedError('rsocket: no address to dial')
}

/**
 * Listens with rsockets on port `req.port` of every local address of an RDMA device that the
 * TCP listener covers. Null when no address could be bound (each reason in FASTSOCK_DEBUG).
 */
function listen (req: ListenRequest): RungListener | null {
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
    let handle: KernelHandle
    try {
      handle = handleOverFd(o.fd)
    } catch (err) {
      native!.closeFd(o.fd)
      return void debug('rsocket', 'cannot adopt an accepted connection: %s', (err as Error).message)
    }
    req.accept(channel({ transport: 'rsocket', handle, view: viewOf(o, mapV4), caps: CAPS }))
  }
  for (const address of crossHostListenAddresses(req)) {
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

export const rsocket: Rung<'rsocket'> = {
  name: 'rsocket',
  probe () {
    if (!native) return { available: false, reason: nativeMissingReason() }
    const why = rdmaMissing()
    if (why) return { available: false, reason: why }
    const devs = activeDevices()
    const r = rdma()!
    if (!r.rsocket) return { available: false, reason: 'librdmacm has no rsocket API' }
    if (typeof native.rsocketConnect !== 'function') return { available: false, reason: `not in this build (devices: ${devs})` }
    const limit = r.rsocketSvcBug ? `; librdmacm ${r.rdmacmVersion || '(release unknown)'} predates rdma-core's rsocket service-thread fix (53, 44.7...): worked around, up to 67 rsocket connections and 67 listeners per process` : ''
    return { available: true, reason: `rsockets (librdmacm) on ${devs}${limit}` }
  },
  connect,
  listen
}
