/**
 * The `smc` rung: the kernel's SMC (AF_SMC, net/smc). A client connects an AF_SMC socket; the
 * kernel negotiates SMC-R (RDMA over RoCE) or SMC-D (ISM, on s390 or loopback) with the peer in
 * a TCP option and a CLC handshake, and falls back to plain TCP inside the same socket when the
 * peer or the path cannot do SMC (a plain `net` server, no device, no route). Either way the fd
 * is Node's own TCP handle: the connection is a real `net.Socket`.
 *
 * Server side, the rung's listener IS the TCP listener (`listenFd`): an AF_SMC socket bound to
 * the server's address and port, which serves SMC clients over SMC and plain TCP clients over
 * TCP. It is on when this kernel has AF_SMC and FASTSOCK_SMC_LISTEN is '1', or, unset, when an
 * RDMA device exists (SMC-R could run); FASTSOCK_SMC_LISTEN=0 turns it off. `smcListenState()`
 * says which and why.
 *
 * Only smc_diag tells what a connection really runs on: `smcInfo(fd)`, exposed as
 * `socket.smcInfo()` on both ends and logged with FASTSOCK_DEBUG.
 */
import type * as net from 'net'
import { native } from '../native'
import { debug, debugEnabled } from '../debug'
import { AF_SMC, channel, Capabilities, Channel, KernelHandle, NO_CAPABILITIES, Rung, SmcInfo } from '../contract'
import { connectKernelFd, bindKernelFd, familyAvailability, KernelFamily } from './kernelfd'
import { rdma } from './rdma'

export type { SmcInfo } from '../contract'

const SMCPROTO_SMC = 0
const SMCPROTO_SMC6 = 1

/**
 * SO_SNDBUF/SO_RCVBUF of smc sockets, set before connect and listen: SMC sizes each connection's
 * send buffer and RMB (the peer-writable receive buffer) from them, and its defaults
 * (net.smc.wmem/rmem, 64/128 KiB) hold far less than loopback TCP, so patterns that work over
 * TCP (an echo nobody reads until writing ends, 1 MB) would deadlock. The kernel doubles the
 * value and SMC uses half; it caps the RMB at its largest size (512 KiB for SMC-R here).
 */
const SMC_BUFFER_BYTES = 1 << 20

const SMC: KernelFamily = { rung: 'smc', label: 'AF_SMC', family: AF_SMC, protocol: f => f === 4 ? SMCPROTO_SMC : SMCPROTO_SMC6, bufferBytes: SMC_BUFFER_BYTES }

/** SMC_CLC_DECL_* of net/smc/smc_clc.h: the reasons a connection falls back to TCP. */
const DECLINE: Record<number, string> = {
  0x01010000: 'MEM: out of memory',
  0x02010000: 'TIMEOUT_CL: timeout waiting for the CLC handshake',
  0x02020000: 'TIMEOUT_AL: timeout waiting for link confirmation',
  0x03000000: 'CNFERR: configuration error',
  0x03010000: 'PEERNOSMC: the peer did not offer SMC (a plain TCP endpoint)',
  0x03020000: 'IPSEC: IPsec is in use on this connection',
  0x03030000: 'NOSMCDEV: no SMC device found (R or D)',
  0x03030001: 'NOSMCDDEV: no SMC-D device found',
  0x03030002: 'NOSMCRDEV: no SMC-R device found',
  0x03030003: 'NOISM2SUPP: the ISM device does not support SMC-Dv2',
  0x03030004: 'NOV2EXT: no SMC-Rv2/SMC-Dv2 extension',
  0x03030005: 'NOV2DEXT: no SMC-Dv2 extension',
  0x03030006: 'NOSEID: no system EID',
  0x03030007: 'NOSMCD2DEV: no SMC-Dv2 device found',
  0x03030008: 'NOUEID: no user EID matches the peer',
  0x03040000: 'MODEUNSUPP: SMC mode not supported',
  0x03050000: 'RMBE_EC: peer has no free RMBE',
  0x03060000: 'OPTUNSUPP: fastopen or other unsupported socket option in use',
  0x03070000: 'DIFFPREFIX: the peer is in a different IP subnet',
  0x03080000: 'GETVLANERR: cannot get the VLAN id',
  0x03090000: 'ISMVLANERR: cannot register the VLAN id on the ISM device',
  0x030a0000: 'NOACTLINK: no active SMC-R link in the link group',
  0x030b0000: 'NOSRVLINK: SMC-R link from the server not found',
  0x030c0000: 'VERSMISMAT: SMC version mismatch',
  0x030d0000: 'MAX_DMB: SMC-D DMB limit reached',
  0x030e0000: 'NOROUTE: no route to the peer for SMC-Rv2',
  0x030f0000: 'NOINDIRECT: indirect SMC-Rv2 is not supported',
  0x04000000: 'SYNCERR: synchronization error',
  0x05000000: 'PEERDECL: the peer declined during the handshake',
  0x09990000: 'INTERR: internal error',
  0x09990001: 'ERR_RTOK: rtoken handling failed',
  0x09990002: 'ERR_RDYLNK: the SMC-R link is not ready',
  0x09990003: 'ERR_REGBUF: buffer registration failed'
}

/** The name and meaning of a fallback reason ('' for 0). */
export function fallbackText (reason: number): string {
  if (reason === 0) return ''
  return DECLINE[reason] ?? `unknown reason 0x${reason.toString(16).padStart(8, '0')}`
}

/** smc_diag's report on the AF_SMC socket `fd`, or null when the kernel does not list it. */
export function smcInfoOfFd (fd: number): SmcInfo | null {
  if (!native || !(fd >= 0)) return null
  const d = native.smcDiag(fd)
  if (typeof d === 'number') return null
  const mode = d.mode === 0 ? 'SMCR' : d.mode === 2 ? 'SMCD' : 'TCP'
  const reason = mode === 'TCP' ? d.fallbackReason : 0
  return { mode, fallbackReason: reason, fallbackText: fallbackText(reason), peerDiagnosis: d.peerDiagnosis }
}

/** smc_diag's report on a socket whose handle is an AF_SMC fd, or null. */
export function smcInfoOf (socket: net.Socket): SmcInfo | null {
  const h = (socket as unknown as { _handle: { fd?: number } | null })._handle
  return h && typeof h.fd === 'number' ? smcInfoOfFd(h.fd) : null
}

/** An AF_SMC handle: smcInfo(), and end() once the kernel sent every byte. */
const CAPS: Capabilities = Object.freeze({ ...NO_CAPABILITIES, smcInfo: true })

/**
 * The Channel of a connected AF_SMC handle. Its transport is what the connection really runs on:
 * 'tcp' when smc_diag reports a TCP fallback (a plain TCP peer, no RDMA path...), else 'smc'.
 * With FASTSOCK_DEBUG, logs the mode.
 */
function smcChannel (handle: KernelHandle, side: string): Channel {
  const i = smcInfoOfFd(handle.fd)
  if (debugEnabled) {
    if (!i) debug('smc', '%s fd %d: not listed by smc_diag', side, handle.fd)
    else {
      debug('smc', '%s fd %d runs on %s%s', side, handle.fd,
        i.mode, i.mode === 'TCP' ? ` (fallback 0x${i.fallbackReason.toString(16).padStart(8, '0')} ${i.fallbackText})` : '')
    }
  }
  return channel({ transport: i?.mode === 'TCP' ? 'tcp' : 'smc', handle, caps: CAPS, hooks: { beforeFinal: whenSent, smcInfo: smcInfoOf } })
}

/**
 * Calls `then` once the kernel has sent every byte written to the AF_SMC socket (polled with
 * SIOCOUTQNSD, 1 ms doubling to 50 ms), at once when nothing is pending or the socket is gone.
 * Node's end() shuts the socket down as soon as its writes are in the kernel; an SMC-R socket's
 * shutdown(SHUT_WR) waits at most 2 s (SMC_MAX_STREAM_WAIT_TIMEOUT, or until a signal) for its
 * send buffer to reach the peer, then closes the write side regardless: bytes still in the
 * buffer are lost (seen in the rdma-vm guest: 128 KiB short of a 4 MiB echo). It also blocks the
 * event loop meanwhile. Waiting here first makes that shutdown immediate and lossless.
 */
export function whenSent (socket: net.Socket, then: () => void): void {
  let delayMs = 1
  const check = (): void => {
    const h = (socket as unknown as { _handle: { fd?: number } | null })._handle
    const n = native && h && typeof h.fd === 'number' && h.fd >= 0 ? native.unsentBytes(h.fd) : 0
    if (n <= 0 || socket.destroyed) return then()
    setTimeout(check, delayMs).unref()
    delayMs = Math.min(delayMs * 2, 50)
  }
  check()
}

/** Whether fastsock servers make their TCP listener an AF_SMC socket in this process, and why. */
export function smcListenState (): { on: boolean, reason: string } {
  const env = process.env.FASTSOCK_SMC_LISTEN
  if (!native || native.probeSocketFamily(AF_SMC) !== 0) return { on: false, reason: 'no AF_SMC in this kernel' }
  if (env === '0') return { on: false, reason: 'FASTSOCK_SMC_LISTEN=0' }
  if (env === '1') return { on: true, reason: 'FASTSOCK_SMC_LISTEN=1' }
  const devices = rdma()?.devices ?? []
  if (devices.length === 0) return { on: false, reason: 'no RDMA device for SMC-R (FASTSOCK_SMC_LISTEN=1 forces it on)' }
  return { on: true, reason: `RDMA devices ${devices.map(d => d.name).join(', ')} (FASTSOCK_SMC_LISTEN=0 turns it off)` }
}

let listenState: { on: boolean, reason: string } | null = null

export const smc: Rung<'smc'> = {
  name: 'smc',
  probe: () => familyAvailability(SMC),
  async connect (req) {
    return smcChannel(await connectKernelFd(SMC, req), 'connected')
  },
  listenFd (address, port, _addressType, flags) {
    listenState ??= smcListenState()
    if (!listenState.on) {
      debug('smc', 'TCP listener kept on %s:%d: %s', address ?? '(any)', port, listenState.reason)
      return null
    }
    const fd = bindKernelFd(SMC, address, port, flags)
    if (fd !== null) debug('smc', 'listening with AF_SMC on %s:%d (%s)', address ?? '(any)', port, listenState.reason)
    return fd
  },
  acceptedChannel (handle) {
    return smcChannel(handle, 'accepted')
  }
}
