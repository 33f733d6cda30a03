/**
 * The contract of the cross-host rungs (`verbs`, `rsocket`, `smc`, `sdp`): each is a module with
 * a `connect` the chain calls and, optionally, a `listen` a fastsock server calls for every TCP
 * listener it opens, so that the rung answers on "the same port" in its own port space
 * (docs/transports.md says what that means per rung). Same-host rungs (shm, unix) go through
 * the side channel instead (lib/transports/unix.ts).
 */
import * as os from 'os'
import { unmapV4 } from '../address'
import type { TransportName } from './names'
import type { Established, AcceptedFast } from './unix'

/** Backlog of the rungs' own listeners: Node's default for a TCP listen. */
export const LISTEN_BACKLOG = 511

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

/** What the chain asks a rung to reach. */
export interface RemoteConnectRequest {
  /** The host as the caller gave it, and its resolved addresses, in order. */
  host: string
  addresses: string[]
  port: number
  /** The whole attempt must end (connected or failed, resources released) within this. */
  timeoutMs: number
  /** True once the socket was destroyed: stop, release everything. */
  aborted: () => boolean
}

/** What a fastsock server asks a rung to listen on, beside its TCP listener. */
export interface RemoteListenRequest {
  /** The TCP listener's bound address as Node reports it ('0.0.0.0', '::', or a literal). */
  address: string
  port: number
  v6only: boolean
  /** A reason to turn the client away now (maxConnections, not accepting), or null. */
  busy: () => string | null
  /** Hands an established connection to the server. */
  accept: (a: AcceptedFast) => void
}

/** A rung's listener: closed with the server. */
export interface RemoteListener {
  close (): void
}

/** The module of one cross-host rung. */
export interface RemoteRung {
  name: TransportName
  /**
   * Connects, or rejects with an Error; `notOffered: true` on the error means "nobody answers
   * this rung there" (cached briefly), anything else is a failure (cached longer).
   */
  connect (req: RemoteConnectRequest): Promise<Established>
  /** Starts listening; null when this rung cannot serve that address (reason in FASTSOCK_DEBUG). */
  listen? (req: RemoteListenRequest): RemoteListener | null
  /**
   * For a rung whose listener must BE the TCP listener (smc: AF_SMC shares the TCP port space
   * and accepts plain TCP clients too): a bound, not yet listening, socket fd that Node's
   * listen then adopts in place of its own TCP socket, or null to leave Node's TCP listener.
   * Arguments are Node's _listen2 ones.
   */
  listenFd? (address: string, port: number, addressType: number, flags: number): number | null
  /**
   * For a rung with listenFd: called with each connection its listener accepted; returns the
   * transport the connection really runs on (smc: 'tcp' when the kernel served it over TCP).
   */
  accepted? (socket: import('net').Socket): TransportName
}

const registry = new Map<TransportName, RemoteRung>()

/** Registers a rung module (each lib/transports/<rung>.ts calls this once). */
export function registerRemoteRung (r: RemoteRung): void { registry.set(r.name, r) }

/** The module of a cross-host rung, if this build has one. */
export function remoteRung (name: TransportName): RemoteRung | undefined { return registry.get(name) }

/** Every registered cross-host rung. */
export function remoteRungs (): RemoteRung[] { return [...registry.values()] }
