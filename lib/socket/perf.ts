/**
 * The `net` PerformanceEntry of a connect, for a socket a fast rung connected. Node's connect to
 * an IP address records one when a PerformanceObserver watches 'net' (lib/net.js: internalConnect
 * starts it once the handle's connect is under way, afterConnect ends it after 'connect' and
 * 'ready'): `{ name: 'connect', entryType: 'net', startTime, duration, detail: { host, port } }`,
 * `host` the address connected to. A connect Node carries out itself (tcp, a UNIX path) records
 * its own; one a fast rung carries ends in the chain's adoption instead, and records it here.
 *
 * Node's `startPerf`/`stopPerf`/`enqueue` are internal, so this works through the public class:
 * `PerformanceObserver.prototype.observe`/`disconnect` are wrapped once to know the observers
 * that asked for 'net' (Node's own `hasObserver('net')`), and an entry goes to each through
 * the observer's own buffering method (found by its description, `kMaybeBuffer`), which filters
 * by entry type and dispatches on a later turn as for Node's entries. The entry is a
 * `PerformanceEntry` (its prototype) carrying its fields as own properties (Node's constructor
 * is internal). Observers made before fastsock was loaded are not seen.
 */
import { performance, PerformanceEntry, PerformanceObserver } from 'perf_hooks'

type AnyFn = (...args: any[]) => any // eslint-disable-line @typescript-eslint/no-explicit-any
type Observer = PerformanceObserver & Record<symbol, AnyFn>

const kMaybeBuffer = Object.getOwnPropertySymbols(PerformanceObserver.prototype).find(s => s.description === 'kMaybeBuffer')
/** Where the wrapped prototype keeps the set (Symbol.for: a second copy of fastsock shares it). */
const kNetObservers = Symbol.for('fastsock.perf.netObservers')

function asksForNet (options: unknown): boolean {
  const o = options as { type?: unknown, entryTypes?: unknown } | null
  if (o === null || typeof o !== 'object') return false
  return o.type === 'net' || (Array.isArray(o.entryTypes) && o.entryTypes.includes('net'))
}

/** Wraps observe/disconnect once per process; returns the set of observers watching 'net'. */
function trackNetObservers (): Set<Observer> {
  const proto = PerformanceObserver.prototype as unknown as Record<string | symbol, unknown>
  const known = proto[kNetObservers] as Set<Observer> | undefined
  if (known !== undefined) return known
  const observers = new Set<Observer>()
  const observe = proto.observe as AnyFn
  const disconnect = proto.disconnect as AnyFn
  Object.defineProperty(proto, kNetObservers, { value: observers })
  // Names and lengths as Node's, so the wrappers look like the methods they wrap.
  Object.defineProperty(proto, 'observe', {
    ...Object.getOwnPropertyDescriptor(proto, 'observe'),
    value: { observe (this: Observer, ...args: unknown[]) {
      const r = observe.apply(this, args)
      if (asksForNet(args[0])) observers.add(this)
      else if (Array.isArray((args[0] as { entryTypes?: unknown } | undefined)?.entryTypes)) observers.delete(this) // replaces the types
      return r
    } }.observe
  })
  Object.defineProperty(proto, 'disconnect', {
    ...Object.getOwnPropertyDescriptor(proto, 'disconnect'),
    value: { disconnect (this: Observer, ...args: unknown[]) {
      observers.delete(this)
      return disconnect.apply(this, args)
    } }.disconnect
  })
  return observers
}

/** Observers watching 'net' (observe() asked for it, no disconnect() since); none where Node has no kMaybeBuffer. */
const netObservers: Set<Observer> = kMaybeBuffer !== undefined ? trackNetObservers() : new Set()

/** Whether a connect now would be recorded (Node's `hasObserver('net')`). */
function netObserved (): boolean {
  return netObservers.size > 0
}

/** A connect's start time (performance.now() ms), when an observer watches 'net'; else null. */
export function startConnectEntry (): number | null {
  return netObserved() ? performance.now() : null
}

/**
 * Records the connect that started at `startTime` (startConnectEntry) and just completed, to
 * `host` (the address, as Node's detail has it) and `port`, for the observers still watching.
 */
export function recordConnectEntry (startTime: number, host: unknown, port: unknown): void {
  if (kMaybeBuffer === undefined || !netObserved()) return
  const duration = performance.now() - startTime
  const detail = { host, port }
  const fields = { name: 'connect', entryType: 'net', startTime, duration, detail }
  const entry = Object.create(PerformanceEntry.prototype, {
    ...Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, { value: v, enumerable: true }])),
    toJSON: { value: () => ({ ...fields }) }
  }) as PerformanceEntry
  for (const obs of netObservers) obs[kMaybeBuffer](entry)
}
