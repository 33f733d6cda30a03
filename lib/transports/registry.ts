/**
 * L4, the registry: every rung of the failover chain, fastest first (JFS 3.1.4). This list is
 * the chain's order, the servers' order of preference, and what `fastsock probe` prints. A new
 * rung is one file or folder under lib/transports/ exporting one Rung, plus one line here
 * (docs/design.md, "Adding a rung"). `tcp` stays last: it is always available, so a fastsock
 * endpoint still talks to a plain `net` peer byte for byte.
 */
import type { Rung } from '../contract'
import { shm } from './shm'
import { unix } from './unix'
import { verbs } from './verbs'
import { rsocket } from './rsocket'
import { smc } from './smc'
import { sdp } from './sdp'
import { tcp } from './tcp'

/** The rungs, in chain order. */
export const RUNGS = [shm, unix, verbs, rsocket, smc, sdp, tcp] as const

type Names<T extends readonly Rung[]> = { readonly [K in keyof T]: T[K] extends Rung<infer N> ? N : never }

/** A rung's name: 'shm' | 'unix' | 'verbs' | 'rsocket' | 'smc' | 'sdp' | 'tcp'. */
export type TransportName = typeof RUNGS[number]['name']

/** Every rung's name, in chain order. */
export const TRANSPORT_NAMES = RUNGS.map(r => r.name) as unknown as Names<typeof RUNGS>

/** The rung Node's own connect is (tcp): what sockets report for Node's TCP. */
export const NODE_TRANSPORT: TransportName = RUNGS.find(r => (r as Rung).nodeConnect)!.name

/** The rung a connect to a UNIX path (Node's own) reports (unix). */
export const PATH_TRANSPORT: TransportName = RUNGS.find(r => (r as Rung).unixPath)!.name

const byName = new Map<string, Rung>(RUNGS.map(r => [r.name, r]))

/** The rung called `name`. */
export function rungOf (name: TransportName): Rung {
  return byName.get(name)!
}

/**
 * `names` in the order a socket that Node's TLS or HTTP/2 will wrap prefers: the rungs with a
 * kernel handle first (TLSWrap and nghttp2 then drive the handle natively), then the handle-less
 * ones (reached through JSStreamSocket), then Node's own TCP; stable within each group.
 */
export function kernelHandleFirst<T extends string> (names: readonly T[]): T[] {
  const group = (n: T): number => {
    const r = byName.get(n)
    return r === undefined || r.nodeConnect ? 2 : r.handleless ? 1 : 0
  }
  return [...names].sort((a, b) => group(a) - group(b))
}

/** True when TLS may be moved onto the kernel handle of the rung called `name` (Rung.tlsOnHandle). */
export function tlsOnHandle (name: string | null | undefined): boolean {
  return name != null && byName.get(name as TransportName)?.tlsOnHandle === true
}

/** A rung's position in the chain (the order servers prefer). */
export function rankOf (r: Rung): number {
  return RUNGS.indexOf(r as typeof RUNGS[number])
}

/** One rung as transports() reports it: `available` here, and `reason` in a sentence either way. */
export interface TransportAvailability {
  name: TransportName
  available: boolean
  /** Why the rung is (or is not) usable on this host. */
  reason: string
}

const probed = new Map<string, TransportAvailability>()

/** Availability of one rung on this host, from its probe (cached for the life of the process). */
export function availability (name: TransportName): TransportAvailability {
  let a = probed.get(name)
  if (!a) {
    a = { name, ...rungOf(name).probe() }
    probed.set(name, a)
  }
  return a
}

/** Every rung in chain order, available or not, and why: what `fastsock probe` prints. */
export function transports (): TransportAvailability[] {
  return TRANSPORT_NAMES.map(availability)
}
