/**
 * The client and listener halves shared by the rungs that are kernel sockets of another address
 * family over IP addresses (`smc`: AF_SMC, `sdp`: AF_INET_SDP). Such a socket is created and
 * connected natively (csrc/kernelsock.h), then handed to Node as an fd: Node drives it as its
 * own TCP handle (getsockname reports AF_INET/AF_INET6), so the connection is a real
 * `net.Socket` with full fidelity and the handle's own addresses.
 */
import * as os from 'os'
import type * as net from 'net'
import { native } from '../native'
import { originals } from '../originals'
import { addressBytes } from '../address'
import { errnoError, FastsockError } from '../errors'
import { debug } from '../debug'
import type { Established } from './unix'
import type { RemoteConnectRequest } from './remote'
import type { TransportName } from './names'

const { ETIMEDOUT, ECONNREFUSED } = os.constants.errno

/** One kernel socket family a rung runs on. */
export interface KernelFamily {
  rung: TransportName
  /** The socket() domain (43 AF_SMC, 27 AF_INET_SDP). */
  family: number
  /** socket()'s protocol for an IPv4 or IPv6 destination, or null when the family cannot reach it. */
  protocol: (ipFamily: 4 | 6) => number | null
  /** SO_SNDBUF/SO_RCVBUF set before connect and bind (0: the kernel's default). */
  bufferBytes: number
}

type RungError = Error & { notOffered?: boolean }

/**
 * Connects to the first of `req.addresses` that accepts, within `req.timeoutMs` overall.
 * Resolves with the connected socket as `probe` (reading paused: the caller adopts its handle);
 * rejects with Node's connect error (code ECONNREFUSED..., `notOffered: true` when nothing
 * listens), ERR_FASTSOCK_TRANSPORT_TIMEOUT, or ERR_FASTSOCK_NOT_OFFERED when no address is one
 * this family can reach. An aborted request closes its fd and rejects.
 */
export async function connectKernelFd (k: KernelFamily, req: RemoteConnectRequest): Promise<Established> {
  if (!native) throw Object.assign(new FastsockError('ERR_FASTSOCK_NATIVE_UNAVAILABLE', `${k.rung}: native addon not loaded`), { notOffered: true })
  const core = native
  const deadline = Date.now() + req.timeoutMs
  let last: RungError | null = null
  for (const address of req.addresses) {
    const ab = addressBytes(address)
    const protocol = ab ? k.protocol(ab.family) : null
    if (!ab || protocol === null) {
      last ??= Object.assign(new FastsockError('ERR_FASTSOCK_NOT_OFFERED', `${k.rung} cannot reach ${address}`), { notOffered: true })
      continue
    }
    const fd = core.connectStream(k.family, protocol, ab.family, ab.bytes, req.port, k.bufferBytes)
    const status = fd < 0
      ? fd
      : await new Promise<number>(resolve => core.waitConnected(fd, Math.max(1, deadline - Date.now()), resolve))
    if (status === 0 && !req.aborted()) {
      let probe: net.Socket
      try {
        probe = new originals.Socket({ fd, readable: true, writable: true, pauseOnCreate: true } as net.SocketConstructorOpts)
      } catch (err) {
        core.closeFd(fd)
        throw err
      }
      return { transport: k.rung, probe, shm: null, bindShm: null, leftover: [], view: null, handshakeRead: 0, handshakeWritten: 0 }
    }
    if (fd >= 0) core.closeFd(fd)
    if (req.aborted()) throw new FastsockError('ERR_FASTSOCK_TRANSPORT_TIMEOUT', `${k.rung}: the socket was destroyed while connecting`)
    if (status === -ETIMEDOUT) {
      last = new FastsockError('ERR_FASTSOCK_TRANSPORT_TIMEOUT', `${k.rung} connect to ${address}:${req.port} took longer than ${req.timeoutMs} ms`)
      break
    }
    last = errnoError(status, 'connect', `${address}:${req.port}`)
    if (status === -ECONNREFUSED) last.notOffered = true
    debug(k.rung, 'connect %s:%d failed: %s', address, req.port, last.message)
    if (Date.now() >= deadline) break
  }
  throw last ?? Object.assign(new FastsockError('ERR_FASTSOCK_NOT_OFFERED', `${k.rung}: no address to dial`), { notOffered: true })
}

/**
 * A bound, not yet listening, socket of this family for Node's _listen2 arguments: `address`
 * (null: every interface, `::` dual-stack when IPv6 works, else 0.0.0.0, as Node does), `port`,
 * `flags` (bit 1: IPv6 only). The fd, or null (reason in FASTSOCK_DEBUG) to leave Node's TCP
 * listener, which then reports any error (EADDRINUSE...) exactly as without fastsock.
 */
export function bindKernelFd (k: KernelFamily, address: string | null | undefined, port: number, flags: number): number | null {
  if (!native) return null
  const candidates = address ? [address] : ['::', '0.0.0.0']
  for (const a of candidates) {
    const ab = addressBytes(a)
    const protocol = ab ? k.protocol(ab.family) : null
    if (!ab || protocol === null) continue
    const fd = native.bindStream(k.family, protocol, ab.family, ab.bytes, port, (flags & 1) !== 0, k.bufferBytes)
    if (fd >= 0) return fd
    debug(k.rung, 'no %s listener on %s:%d: %s', k.rung, a, port, errnoError(fd, 'bind').message)
  }
  return null
}
