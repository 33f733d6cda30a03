/**
 * The client and listener halves shared by the rungs that are kernel sockets of another address
 * family over IP addresses (`smc`: AF_SMC, `sdp`: AF_INET_SDP). Such a socket is created and
 * connected natively (csrc/kernelsock.h), then handed to Node as an fd: Node drives it as its
 * own TCP handle (getsockname reports AF_INET/AF_INET6), so the connection is a real
 * `net.Socket` with full fidelity and the handle's own addresses.
 */
import * as util from 'util'
import { native } from '../native'
import { handleOverFd } from '../handles'
import { addressBytes } from '../address'
import { errnoError, ERRNO, unserved, AttemptTimeoutError, NotOfferedError } from '../errors'
import { debug } from '../debug'
import type { Availability, ConnectRequest, KernelHandle } from '../contract'

const { ETIMEDOUT, ECONNREFUSED } = ERRNO

/** One kernel socket family a rung runs on. */
export interface KernelFamily {
  rung: string
  /** The family's name in sentences ('AF_SMC'). */
  label: string
  /** The socket() domain (43 AF_SMC, 27 AF_INET_SDP). */
  family: number
  /** socket()'s protocol for an IPv4 or IPv6 destination, or null when the family cannot reach it. */
  protocol: (ipFamily: 4 | 6) => number | null
  /** SO_SNDBUF/SO_RCVBUF set before connect and bind (0: the kernel's default). */
  bufferBytes: number
}

/**
 * The family's availability in this kernel: socket(family, SOCK_STREAM, 0) works or not, and the
 * errno that says why not.
 */
export function familyAvailability (k: KernelFamily): Availability {
  if (!native) return { available: false, reason: `${k.label}: native addon not loaded` }
  const r = native.probeSocketFamily(k.family)
  return r === 0
    ? { available: true, reason: `${k.label} sockets exist in this kernel` }
    : { available: false, reason: `no ${k.label} in this kernel (${util.getSystemErrorName(r)})` }
}

/**
 * Connects to the first of `req.addresses` that accepts, by the attempt's `req.deadline`.
 * Resolves with the connected Node TCP handle over the fd (not reading: the caller's socket
 * adopts it); rejects with UnservedError (ECONNREFUSED: nothing listens), Node's connect error
 * (code ...), AttemptTimeoutError, or NotOfferedError when no address is one this family can
 * reach. An aborted request closes its fd and rejects.
 */
export async function connectKernelFd (k: KernelFamily, req: ConnectRequest): Promise<KernelHandle> {
  if (!native) throw new NotOfferedError(`${k.rung}: native addon not loaded`)
  const core = native
  const deadline = req.deadline
  let last: Error | null = null
  for (const address of req.addresses) {
    const ab = addressBytes(address)
    const protocol = ab ? k.protocol(ab.family) : null
    if (!ab || protocol === null) {
      last ??= new NotOfferedError(`${k.rung} cannot reach ${address}`)
      continue
    }
    const fd = core.connectStream(k.family, protocol, ab.family, ab.bytes, req.port, k.bufferBytes)
    const status = fd < 0
      ? fd
      : await new Promise<number>(resolve => core.waitConnected(fd, Math.max(1, deadline - Date.now()), resolve))
    if (status === 0 && !req.signal.aborted) {
      try {
        return handleOverFd(fd)
      } catch (err) {
        core.closeFd(fd)
        throw err
      }
    }
    if (fd >= 0) core.closeFd(fd)
    if (req.signal.aborted) throw req.signal.reason
    if (status === ETIMEDOUT) {
      last = new AttemptTimeoutError(`${k.rung} connect to ${address}:${req.port} took longer than ${req.timeoutMs} ms`)
      break
    }
    last = status === ECONNREFUSED ? unserved(status, 'connect', `${address}:${req.port}`) : errnoError(status, 'connect', `${address}:${req.port}`)
    debug(k.rung, 'connect %s:%d failed: %s', address, req.port, last.message)
    if (Date.now() >= deadline) break
  }
  throw last ?? new NotOfferedError(`${k.rung}: no address to dial`)
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
