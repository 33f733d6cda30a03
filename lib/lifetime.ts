/**
 * How long connections to one destination live, learned per process: the chain starts a
 * connection on the kernel's socket (the chain's Node rung, TCP) when most of the last
 * connections to its destination were short, because a fast rung's set-up (the side channel's
 * verification and round trip, a segment to map on both ends: ~0.4-1 ms on this class of host,
 * docs/transports.md "Set-up time") costs more than a short connection can win back, while a
 * loopback TCP connect completes in the kernel without the server process running.
 *
 * A connection is short when it closed within SHORT_LIFETIME_MS of connect() having moved fewer
 * than SHORT_BYTES bytes (both directions together). Every connection the chain made is recorded
 * when it closes, whatever its rung, so TCP connections that turn out long move the destination
 * back to the fast rungs (the policy corrects itself both ways). The last HISTORY outcomes are
 * kept per destination (host as given to connect(), and port); the kernel rung is chosen when at
 * least MIN_EVIDENCE outcomes are known and a strict majority of them were short. At most
 * MAX_DESTINATIONS destinations are remembered (the oldest is forgotten first).
 *
 * FASTSOCK_SHORT_CONNECTIONS=fast (read once) turns the policy off: every connect walks the
 * whole chain as before. The model is the per-destination learned choice of TCP Fast Open's
 * cookie cache and of HTTP clients' connection reuse: decide from what the destination did
 * before, never block on it.
 */

/**
 * A connection that lived less than this (ms, from connect() to close) may be short. Generous:
 * it counts the set-up, which in a cold process (modules loading, code not compiled yet) or on a
 * loaded host takes tens of ms.
 */
export const SHORT_LIFETIME_MS = 250
/**
 * A connection that moved fewer bytes than this (read + written) may be short: ~50 HTTP
 * request/response exchanges, about where a fast rung's per-exchange gain (tens of µs) pays back
 * its set-up (docs/benchmarks.md, "Short connections").
 */
export const SHORT_BYTES = 16 * 1024
/** Outcomes kept per destination. */
export const HISTORY = 8
/** Outcomes needed before the kernel rung is preferred. */
export const MIN_EVIDENCE = 2
/** Destinations remembered. */
export const MAX_DESTINATIONS = 1024

/** One destination's outcomes: the last `n` (at most HISTORY) as bits, 1 = short, newest lowest. */
export interface LifetimeHistory { short: number, n: number }

/**
 * Histories by host, then port: no key string is built per connect (a host given as a literal
 * keeps its hash; a port is a small-integer key). `count` is the number of histories kept.
 */
const byDestination = new Map<string, Map<number, LifetimeHistory>>()
let count = 0
let enabled: boolean | null = null

/** False when FASTSOCK_SHORT_CONNECTIONS=fast (the fast rungs for every connection). */
export function lifetimeRoutingEnabled (): boolean {
  if (enabled === null) enabled = (process.env.FASTSOCK_SHORT_CONNECTIONS ?? '').trim().toLowerCase() !== 'fast'
  return enabled
}

/**
 * The history of the destination `host` (as connect() got it), `port`; made empty when new (the
 * oldest destination is forgotten first once MAX_DESTINATIONS are kept).
 */
export function historyOf (host: string, port: number): LifetimeHistory {
  let ports = byDestination.get(host)
  let h = ports?.get(port)
  if (h !== undefined) return h
  if (count >= MAX_DESTINATIONS) forgetOldest()
  if (ports === undefined) {
    ports = new Map()
    byDestination.set(host, ports)
  }
  h = { short: 0, n: 0 }
  ports.set(port, h)
  count++
  return h
}

/** Forgets one destination: the oldest port of the host first remembered. */
function forgetOldest (): void {
  const [host, ports] = byDestination.entries().next().value as [string, Map<number, LifetimeHistory>]
  ports.delete(ports.keys().next().value as number)
  if (ports.size === 0) byDestination.delete(host)
  count--
}

/** True when connections with this history are predicted short (see the module comment). */
export function predictsShort (h: LifetimeHistory): boolean {
  return h.n >= MIN_EVIDENCE && popcount(h.short) * 2 > h.n
}

/**
 * Adds one closed connection to `h`: `bytes` moved (read + written), `lifetimeMs` from
 * connect() to close.
 */
export function recordLifetime (h: LifetimeHistory, bytes: number, lifetimeMs: number): void {
  const isShort = lifetimeMs < SHORT_LIFETIME_MS && bytes < SHORT_BYTES ? 1 : 0
  h.short = ((h.short << 1) | isShort) & ((1 << HISTORY) - 1)
  if (h.n < HISTORY) h.n++
}

/** Forgets every destination's history (tests; `clearNegativeCache()` calls it too). */
export function clearLifetimes (): void {
  byDestination.clear()
  count = 0
}

function popcount (v: number): number {
  let c = 0
  for (; v !== 0; v &= v - 1) c++
  return c
}
