/**
 * Helpers of the cross-host rungs (`verbs`, `rsocket`): which addresses they dial and which they
 * listen on beside a TCP listener, so that the rung answers on "the same port" in its own port
 * space (docs/transports.md says what that means per rung).
 */
import * as os from 'os'
import { unmapV4 } from '../address'
import type { ListenRequest } from '../contract'

/** 127.0.0.0/8 (plain or ::ffff:-mapped) or ::1: no RDMA device serves these (except rxe on lo). */
export function isLoopback (ip: string): boolean {
  const v4 = unmapV4(ip) ?? ip
  return v4.startsWith('127.') || ip === '::1'
}

/**
 * The local addresses a cross-host rung listens on for a TCP listener on `address`: that address
 * when specific (none when loopback), else every non-internal interface address of the families
 * the wildcard covers ('0.0.0.0': IPv4; '::': IPv6, and IPv4 unless `v6only`), link-local IPv6
 * left out. Each rung then keeps those its devices own.
 */
export function listenAddresses (address: string, v6only: boolean): string[] {
  if (address !== '0.0.0.0' && address !== '::') {
    const specific = unmapV4(address) ?? address
    return isLoopback(specific) ? [] : [specific]
  }
  const out: string[] = []
  for (const list of Object.values(os.networkInterfaces())) {
    for (const a of list ?? []) {
      if (a.internal) continue
      if (a.family === 'IPv6' && (address === '0.0.0.0' || a.address.toLowerCase().startsWith('fe80'))) continue
      if (a.family === 'IPv4' && address === '::' && v6only) continue
      out.push(a.address)
    }
  }
  return out
}

/**
 * The addresses a cross-host rung listens on for this request (listenAddresses), or none when
 * the server cannot take such clients itself: a cluster worker under round-robin (the primary
 * owns the listen socket), or a listen handle that is not a kernel socket.
 */
export function crossHostListenAddresses (req: ListenRequest): string[] {
  if (req.roundRobinWorker || req.listenHandleProblem) return []
  return listenAddresses(req.address, req.v6only)
}
