/**
 * The chain's negative cache: per rung (or shared set-up) and destination, "this failed here,
 * do not try again before `until`", so that a missing or broken rung costs its timeout once, not
 * on every connect. One map per process; `clearNegativeCache()` (public) forgets everything.
 */
import { isNotOffered, ServerBusyError } from './errors'
import { clearLifetimes } from './lifetime'

/** How long (ms) a "not offered" answer (nobody serves the rung there) is cached per destination. */
export const NOT_OFFERED_TTL_MS = 1000
/** How long (ms) a failure (timeout, unverified peer, bad handshake) is cached per destination. */
export const FAILURE_TTL_MS = 30000

const entries = new Map<string, { until: number, reason: string }>()

/** The cached reason for `key`, or null when nothing (or only an expired entry) is cached. */
export function cachedFailure (key: string): string | null {
  const e = entries.get(key)
  if (!e) return null
  if (e.until <= Date.now()) {
    entries.delete(key)
    return null
  }
  return e.reason
}

/** Caches `reason` under `key` for `ttlMs`. */
export function cacheFailure (key: string, ttlMs: number, reason: string): void {
  entries.set(key, { until: Date.now() + ttlMs, reason })
}

/**
 * Forgets every cached negative result, and the connection lifetimes learned per destination
 * (lib/lifetime.ts) (tests; or after changing the local servers).
 */
export function clearNegativeCache (): void {
  entries.clear()
  clearLifetimes()
}

/**
 * How long a rung's failure is cached, by its class: "not offered" (NotOfferedError,
 * UnservedError) briefly, a busy server (ServerBusyError) not at all, anything else longer.
 */
export function negativeTtlMs (err: unknown): number {
  if (err instanceof ServerBusyError) return 0
  return isNotOffered(err) ? NOT_OFFERED_TTL_MS : FAILURE_TTL_MS
}
