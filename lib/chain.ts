/**
 * L5, the failover chain (JFS 3.1.4), a generic loop over the registry's rungs modelled on Node's
 * internalConnectMultiple: one attempt context, each attempt bounded by one timer and one
 * AbortSignal (ConnectRequest.signal), an event per attempt and per failure, the first rung that
 * connects wins. A rung that is Node's own connect (tcp) ends the chain there, errors included. Without it, exhausting the chain destroys the
 * socket with an AllTransportsFailedError (an AggregateError, code
 * ERR_FASTSOCK_ALL_TRANSPORTS_FAILED) of every attempt's error.
 *
 * Negative results are cached per rung and destination (lib/negative-cache.ts): "not offered"
 * briefly, failures longer, a busy server not at all; so a missing or broken rung costs its
 * timeout once, not on every connect.
 *
 * The chain runs over a ChainHost (the socket implements it), and names no rung: what a rung
 * does (skip a destination) is the rung's, and a set-up several rungs share (the side channel)
 * is their Connector's, which the chain calls for them with the connect's context.
 */
import * as net from 'net'
import * as dns from 'dns'
import { parseTransports, defaultTransports, TransportName } from './transports/names'
import { availability, rungOf, rankOf, NODE_TRANSPORT, PATH_TRANSPORT } from './transports/registry'
import type { AttemptContext, Channel, ConnectRequest, Rung } from './contract'
import { discardChannel } from './contract'
import { normalizeArgs } from './originals'
import { debug, debugEnabled } from './debug'
import { AllTransportsFailedError, AttemptTimeoutError } from './errors'
import { underFdPressure, FD_HEADROOM } from './transports/fd-pressure'
import { cachedFailure, cacheFailure, negativeTtlMs } from './negative-cache'
import { historyOf, lifetimeRoutingEnabled, predictsShort, LifetimeHistory } from './lifetime'

/** The ConnectRequest's signal until an attempt sets its own. */
const NEVER_ABORTED = new AbortController().signal

export { clearNegativeCache, NOT_OFFERED_TTL_MS, FAILURE_TTL_MS } from './negative-cache'

type AnyFn = (...args: any[]) => any // eslint-disable-line @typescript-eslint/no-explicit-any

/** What the chain needs of the socket it connects. */
export interface ChainHost {
  readonly destroyed: boolean
  /**
   * The attempt in flight: destroy() calls `stop()` (null: none). A direct call, not an
   * AbortSignal listener: an AbortController per socket and its EventTarget listeners cost
   * several µs per connect (bench/connect.js).
   */
  onDestroy (stop: (() => void) | null): void
  /** The socket's chain (its `transports` option, else the process's). */
  readonly transports: readonly TransportName[]
  /** Upper bound of one rung's attempt (ms). */
  readonly timeoutMs: number
  /** shm ring bytes per direction, for a rung that sets up rings. */
  readonly shmRingBytes: number
  /** The socket's `pollUs` (µs), undefined for the default: bounds a set-up's busy polling. */
  readonly pollUs: number | undefined
  /** A handle or a parent stream is already there (a TLSSocket's, a socket from an fd). */
  hasHandleOrParent (): boolean
  /** The socket's `blockList` (Node 22+) blocks this IP address: Node's connect refuses it. */
  blocks (address: string): boolean
  emit (event: string, payload: unknown): boolean
  once (event: 'connect', cb: AnyFn): unknown
  destroy (err?: Error): unknown
  /**
   * The connection's destination has this history (lib/lifetime.ts): the socket adds how long it
   * lived and how many bytes it moved to it when it closes.
   */
  track (history: LifetimeHistory): void
  /** Enters the connecting state (no handle yet): writes queue, timers refresh. */
  beginConnecting (): void
  /** Node's own connect on these normalized arguments; the socket reports `transport`. */
  nodeConnect (normalized: unknown[], transport: TransportName): void
  /**
   * Takes the channel over and emits 'lookup' (once per `lookups` entry: address, family, host),
   * 'connect', 'ready'; `attempted` becomes `autoSelectFamilyAttemptedAddresses` (when not null).
   */
  adopt (channel: Channel, lookups: LookupEvent[], attempted: string[] | null): void
}

/** The arguments of one 'lookup' event after the error: address, family, host name. */
export type LookupEvent = [unknown, unknown, string]

interface ConnectOptions {
  port?: number | string
  host?: string
  path?: string
  localAddress?: string
  localPort?: number
  family?: number | string
  hints?: number
  lookup?: AnyFn
  autoSelectFamily?: unknown
  autoSelectFamilyAttemptTimeout?: unknown
  fd?: number
  transports?: unknown
}

/**
 * Why no fast rung may serve these options, or null. A caller asking for a local address or
 * port, or an fd, gets Node's own connect as it asked; a process near its fd limit gets TCP
 * (lib/transports/fd-pressure.ts).
 */
function declineReason (o: ConnectOptions): string | null {
  if (o.localAddress != null && (o.localAddress as unknown) !== '') return 'localAddress requested'
  if (o.localPort != null && (o.localPort as unknown) !== 0) return 'localPort requested'
  if (o.fd !== undefined) return 'fd given'
  // A family the host literal does not have: Node's connect decides, as without fastsock.
  const lit = typeof o.host === 'string' ? net.isIP(o.host) : 0
  if ((o.family === 4 || o.family === 6) && lit !== 0 && lit !== o.family) return `family ${o.family} requested for an IPv${lit} address`
  if (underFdPressure()) return `fewer than ${FD_HEADROOM} fds left below RLIMIT_NOFILE`
  return null
}

/** True when the port is one Node's connect accepts (so Node's synchronous errors stay Node's). */
function validPort (port: unknown): boolean {
  if (typeof port === 'number') return Number.isInteger(port) && port >= 0 && port <= 0xffff
  if (typeof port === 'string') return port.trim() !== '' && /^\d+$/.test(port.trim()) && Number(port) <= 0xffff
  return false
}

/**
 * True when Node's connect throws at once on these options (lookupAndConnect's checks before the
 * lookup): Node's connect then runs, so that the error thrown is Node's own.
 */
function nodeRejects (o: ConnectOptions, hostname: string): boolean {
  if (o.autoSelectFamily != null && typeof o.autoSelectFamily !== 'boolean') return true
  const t = o.autoSelectFamilyAttemptTimeout
  if (t != null && !(typeof t === 'number' && Number.isInteger(t) && t >= 1 && t <= 0x7fffffff)) return true
  return !net.isIP(hostname) && o.lookup != null && typeof o.lookup !== 'function'
}

/** The symbol Node's _normalizeArgs marks its result with (net.connect's call), if any. */
const kNormalized: symbol | undefined = Object.getOwnPropertySymbols(normalizeArgs([0]))[0]

/** True when `a` is an array Node's _normalizeArgs made. */
function isNormalized (a: unknown[]): boolean {
  if (kNormalized !== undefined) return (a as unknown as Record<symbol, unknown>)[kNormalized] !== undefined
  return Object.getOwnPropertySymbols(a).length > 0
}

/** A chain's rungs, its Node rung (tcp) if any, and whether it has any fast rung. */
interface KnownChain { rungs: Rung[], node: Rung | undefined, fast: boolean }
/** By chain (the process's default, a socket's parsed option): computed once per chain array. */
const knownChains = new WeakMap<readonly TransportName[], KnownChain>()

function rungsOf (chain: readonly TransportName[]): KnownChain {
  let k = knownChains.get(chain)
  if (k === undefined) {
    const rungs = chain.map(rungOf)
    k = { rungs, node: rungs.find(r => r.nodeConnect), fast: rungs.some(r => !r.nodeConnect) }
    knownChains.set(chain, k)
  }
  return k
}

/** The destination's lifetime history, which this connection is added to when it closes. */
function trackedHistory (host: ChainHost, o: ConnectOptions): LifetimeHistory {
  const history = historyOf(o.host || 'localhost', Number(o.port))
  host.track(history)
  return history
}

/**
 * For the preload's `net.connect` (lib/register.ts), before any socket exists: whether a connect
 * with these normalized options and the process's chain goes straight to Node's own TCP connect,
 * so that the socket can be Node's own `net.Socket` (no fastsock code on its data path, nothing
 * for the JIT to warm up beyond what Node's own sockets use). `true` when the process's chain is
 * Node's connect alone (FASTSOCK_TRANSPORTS=tcp); the destination's lifetime history when the
 * chain would start there because that destination's connections are short (lib/lifetime.ts: the
 * caller adds the connection to it when it closes); null otherwise (fastsock's Socket and the
 * chain: a path, any of fastsock's options, a port or host Node's connect would reject).
 */
export function nodeOnlyConnect (o: ConnectOptions & { transportTimeoutMs?: unknown, shmRingBytes?: unknown, pollUs?: unknown, shmPollUs?: unknown }): LifetimeHistory | true | null {
  if (o.path != null || o.transports !== undefined || o.transportTimeoutMs !== undefined || o.shmRingBytes !== undefined ||
      o.pollUs !== undefined || o.shmPollUs !== undefined) return null
  const known = rungsOf(defaultTransports())
  if (known.node === undefined) return null
  if (!known.fast) return known.rungs.length === 1 ? true : null
  if (!lifetimeRoutingEnabled() || !validPort(o.port)) return null
  const host = o.host
  if (host !== undefined && host !== null && typeof host !== 'string') return null
  const history = historyOf(host || 'localhost', Number(o.port))
  return predictsShort(history) ? history : null
}

/** The rung is available on this host (its probe, run once per process); debug says why not. */
function probed (r: Rung): boolean {
  const a = availability(r.name as TransportName)
  if (!a.available) debug('chain', 'skip %s: %s', r.name, a.reason)
  return a.available
}

function emitAttempt (host: ChainHost, transport: string): void {
  host.emit('transportAttempt', { transport })
}

/**
 * Implements Socket#connect (see its docstring): `args` as connect() got them, or an array Node
 * already normalized (net.connect's call).
 */
export function connectThroughChain (host: ChainHost, args: unknown[]): void {
  const pre = args[0]
  const normalized = Array.isArray(pre) && isNormalized(pre) ? pre : normalizeArgs(args)
  const options = normalized[0] as ConnectOptions
  const cb = normalized[1] as AnyFn | null
  if (options.path != null) return host.nodeConnect(normalized, PATH_TRANSPORT)
  const hostOk = options.host === undefined || options.host === null || typeof options.host === 'string'
  if (!validPort(options.port) || !hostOk || host.destroyed || host.hasHandleOrParent()) {
    // Node's own connect throws or handles these exactly as net does.
    return host.nodeConnect(normalized, NODE_TRANSPORT)
  }
  const chain = options.transports !== undefined ? parseTransports(options.transports) : host.transports
  const known = rungsOf(chain)
  // Short connections to this destination: the kernel's socket costs less to set up than any
  // fast rung can win back (lib/lifetime.ts), so the chain starts there, without looking at the
  // fast rungs at all. A connect that names its rungs gets them.
  let rungs: Rung[]
  if (known.fast && known.node !== undefined && options.transports === undefined && lifetimeRoutingEnabled() &&
      predictsShort(trackedHistory(host, options))) {
    debug('chain', '%s:%s: recent connections there were short: %s', options.host, options.port, known.node.name)
    rungs = [known.node]
  } else if (!known.fast) {
    // Only Node's own connect in the chain (FASTSOCK_TRANSPORTS=tcp): nothing to check.
    rungs = known.rungs
  } else {
    const decline = declineReason(options)
    if (decline) debug('chain', 'fast rungs declined: %s', decline)
    // The rungs of a connector (the side channel: its handshake offers the later ones) are
    // probed now. When one of them is there, the others are probed only if the chain reaches
    // them (runChain): a process's first connect does not pay for probing rungs (verbs' dlopen of
    // rdma-core, ~1 ms) that a connector's rung ahead of them serves.
    const viaConnector = known.rungs.filter(r => r.nodeConnect || (decline === null && r.connector !== undefined && probed(r)))
    if (decline !== null) rungs = viaConnector
    else if (viaConnector.some(r => !r.nodeConnect)) rungs = known.rungs.filter(r => r.connector === undefined || viaConnector.includes(r))
    else rungs = known.rungs.filter(r => r.nodeConnect || probed(r))
  }
  if (rungs.length === 1 && rungs[0].nodeConnect) {
    // After connect() returns, as Node emits 'connectionAttempt'.
    process.nextTick(emitAttempt, host, rungs[0].name)
    return host.nodeConnect(normalized, rungs[0].name as TransportName)
  }
  const hostname = options.host || 'localhost'
  if (nodeRejects(options, hostname)) return host.nodeConnect(normalized, NODE_TRANSPORT)
  // Resolved once, as Node's connect would (a throw, such as dns.lookup's for bad hints, is
  // connect()'s), for the fast rungs and for Node's connect if the chain reaches it.
  const dnsOpts = dnsOptions(options)
  const answer = net.isIP(hostname) ? null : lookupOnce(options, hostname, dnsOpts)
  if (cb !== null) host.once('connect', cb)
  host.beginConnecting()
  runChain(host, options, rungs, answer, dnsOpts.all === true).catch(err => {
    if (!host.destroyed) host.destroy(err)
  })
}

/** The options Node's connect passes to the lookup function (lookupAndConnect). */
interface DnsOptions { family: unknown, hints: number, all?: true }

/**
 * Node's lookup options for this connect: the family (4, 6, 'IPv4'/'IPv6' mapped), the hints
 * (ADDRCONFIG when neither is given), and `all` when Node would try every address (happy
 * eyeballs: no family, no localAddress, autoSelectFamily on or by default).
 */
function dnsOptions (o: ConnectOptions): DnsOptions {
  const family = o.family === 'IPv4' ? 4 : o.family === 'IPv6' ? 6 : o.family
  const oneFamily = family === 4 || family === 6
  const opts: DnsOptions = { family, hints: o.hints || 0 }
  if (process.platform !== 'win32' && !oneFamily && opts.hints === 0) opts.hints = dns.ADDRCONFIG
  const auto = o.autoSelectFamily ?? net.getDefaultAutoSelectFamily()
  if (!oneFamily && !o.localAddress && auto === true) opts.all = true
  return opts
}

/** A lookup's answer as its callback gave it: (err, address, family), or (err, [{ address, family }]) with `all`. */
interface Answer { err: Error | null, address: unknown, family: unknown }

/**
 * Lookups with the default resolver in flight, by host and lookup options: connects to one name
 * in the same tick share one answer, so they reach their first rung in the order they were
 * opened (separate lookups complete in the thread pool's order, not the callers'), and the
 * server accepts them in that order, as loopback TCP does. A custom `lookup` is called per
 * connect, as Node does.
 */
const inFlight = new Map<string, Promise<Answer>>()

/**
 * Looks `hostname` up now, with the lookup function (the option, else dns.lookup, shared while
 * in flight): once per connect. A throw (dns.lookup's check of `hints`) is the caller's.
 */
function lookupOnce (o: ConnectOptions, hostname: string, opts: DnsOptions): Promise<Answer> {
  const key = o.lookup == null ? `${hostname}|${String(opts.family)}|${opts.hints}|${opts.all === true}` : null
  const shared = key === null ? undefined : inFlight.get(key)
  if (shared !== undefined) return shared
  let settle!: (a: Answer) => void
  const answer = new Promise<Answer>(resolve => { settle = resolve })
  const lookup = o.lookup ?? dns.lookup
  lookup(hostname, { ...opts }, (err: Error | null, address: unknown, family: unknown) => settle({ err, address, family }))
  if (key !== null) {
    inFlight.set(key, answer)
    answer.then(() => inFlight.delete(key))
  }
  return answer
}

/** The answer as a list of { address, family } (whatever shape the lookup function chose). */
function entriesOf (a: Answer): Array<{ address: unknown, family: unknown }> {
  if (a.err) return []
  if (Array.isArray(a.address)) return a.address as Array<{ address: unknown, family: unknown }>
  return [{ address: a.address, family: a.family }]
}

/**
 * The addresses Node's connect would try, in its order: only the first without `all`; with it,
 * the valid ones once each, alternating families from the first one's (internalConnectMultiple).
 */
function attemptOrder (a: Answer, all: boolean): string[] {
  const entries = entriesOf(a)
  const valid = entries.filter(e => typeof e.address === 'string' && net.isIP(e.address) !== 0 && (e.family === 4 || e.family === 6))
  if (!all) return entries.length > 0 && valid[0] === entries[0] ? [valid[0].address as string] : []
  const byFamily: string[][] = [[], []]
  const firstFamily = valid[0]?.family
  for (const e of valid) {
    const list = byFamily[e.family === firstFamily ? 0 : 1]
    if (!list.includes(e.address as string)) list.push(e.address as string)
  }
  const order: string[] = []
  for (let i = 0; i < Math.max(byFamily[0].length, byFamily[1].length); i++) {
    if (i < byFamily[0].length) order.push(byFamily[0][i])
    if (i < byFamily[1].length) order.push(byFamily[1][i])
  }
  return order
}

/**
 * A lookup function for Node's connect that answers with `a` (already resolved): no second DNS
 * query, no second call of the caller's lookup. Calls back on a later tick, as dns.lookup does,
 * in the shape asked for.
 */
function replayLookup (a: Answer): AnyFn {
  return (_host: string, opts: { all?: boolean } | undefined, cb: AnyFn) => {
    process.nextTick(() => {
      if (a.err) return cb(a.err)
      const list = entriesOf(a)
      if (opts?.all === true) return cb(null, list)
      if (Array.isArray(a.address)) return cb(null, list[0]?.address, list[0]?.family)
      cb(null, a.address, a.family)
    })
  }
}

/**
 * The chain's loop (see the module comment). `answer`: the lookup of a host name, made once in
 * connect() (null for an IP literal); `all`: it was asked for every address (happy eyeballs).
 */
async function runChain (host: ChainHost, options: ConnectOptions, rungs: Rung[], answer: Promise<Answer> | null, all: boolean): Promise<void> {
  const port = Number(options.port)
  const hostname = options.host || 'localhost'
  const ctx: AttemptContext = { rungs, index: 0, errors: [], rank: rankOf, tried: new Set() }
  let req: ConnectRequest | null = null
  await new Promise<void>(resolve => process.nextTick(resolve)) // events after connect() returns
  const resolved = answer === null ? null : await answer
  if (resolved?.err) debug('chain', 'lookup of %s failed (%s): fast rungs skipped', hostname, resolved.err.message)
  for (; ctx.index < rungs.length; ctx.index++) {
    const rung = rungs[ctx.index]
    if (host.destroyed) return
    if (!rung.nodeConnect && rung.connector === undefined && !probed(rung)) continue
    if (rung.nodeConnect) {
      debug('chain', '%s:%d -> %s', hostname, port, rung.name)
      host.emit('transportAttempt', { transport: rung.name })
      // Node's connect, on the addresses already resolved (its own 'lookup' events and errors).
      const opts = resolved === null ? options : { ...options, lookup: replayLookup(resolved) }
      host.nodeConnect(normalizeArgs([opts]), rung.name as TransportName)
      return
    }
    if (req === null) {
      const addresses = resolved === null ? [hostname] : attemptOrder(resolved, all)
      if (addresses.some(a => host.blocks(a))) {
        // The socket's blockList names an address it would try: Node's connect decides (its
        // ERR_IP_BLOCKED, as net), whatever rungs the chain lists; no rung is tried.
        debug('chain', '%s:%d: an address is in the socket\'s blockList: Node\'s connect', hostname, port)
        const opts = resolved === null ? options : { ...options, lookup: replayLookup(resolved) }
        host.nodeConnect(normalizeArgs([opts]), NODE_TRANSPORT)
        return
      }
      req = { host: hostname, addresses, port, timeoutMs: host.timeoutMs, signal: NEVER_ABORTED, deadline: 0, shmRingBytes: host.shmRingBytes, pollUs: host.pollUs }
    }
    const ch = await attempt(host, rung, req, ctx)
    if (ch === null) continue
    if (host.destroyed) return discardChannel(ch)
    const remoteAddress = ch.view?.remote.address ?? req.addresses[0]
    debug('chain', '%s:%d -> %s (%s)', hostname, port, ch.transport, remoteAddress)
    // The 'lookup' events Node's connect emits for this answer: one per address with `all`.
    const lookups: LookupEvent[] = resolved === null ? [] : (all ? entriesOf(resolved) : [resolved]).map(e => [e.address, e.family, hostname])
    let attempted: string[] | null = null
    if (all && req.addresses.length > 1) {
      const at = req.addresses.indexOf(remoteAddress)
      attempted = req.addresses.slice(0, at < 0 ? req.addresses.length : at + 1).map(a => `${a}:${port}`)
    }
    // Adoption runs the application's 'lookup'/'connect'/'ready' listeners and write callbacks:
    // outside this promise, so that a throw there is the application's uncaught exception, as
    // from Node's afterConnect, and not a failure of this connect (which would destroy the socket).
    queueMicrotask(() => host.adopt(ch, lookups, attempted))
    return
  }
  if (host.destroyed) return
  const tried = rungs.filter(r => r.nodeConnect || availability(r.name as TransportName).available).map(r => r.name).join(', ')
  const agg = new AllTransportsFailedError(ctx.errors, `fastsock: no transport connected to ${hostname}:${port} (chain: ${tried})`)
  if (debugEnabled) debug('chain', agg.message)
  host.destroy(agg)
}

/**
 * One attempt of `rung` with its events and the negative cache: the channel, or null when the
 * rung was skipped or failed (its error then goes to ctx.errors and 'transportAttemptFailed').
 */
async function attempt (host: ChainHost, rung: Rung, connect: ConnectRequest, ctx: AttemptContext): Promise<Channel | null> {
  const req: ConnectRequest = { ...connect }
  if (req.addresses.length === 0 || !(rung.connect || rung.connector)) return null
  const via = rung.connector
  const skip = (via ? via.skip(rung, req, ctx) : rung.skip?.(req, ctx)) ?? null
  if (skip !== null) {
    debug('chain', 'skip %s for %s:%d: %s', rung.name, req.host, req.port, skip)
    return null
  }
  const key = `${rung.name}|${req.addresses.join(',')}|${req.port}`
  const hit = cachedFailure(key)
  if (hit !== null) {
    debug('chain', 'skip %s for %s:%d: cached (%s)', rung.name, req.host, req.port, hit)
    return null
  }
  host.emit('transportAttempt', { transport: rung.name })
  const started = Date.now()
  // The attempt's one timer and one AbortSignal: the timer or the socket's destroy aborts it;
  // every wait of the rung ends then, and the chain waits no longer (a channel the rung brings
  // later is discarded). Both call `stop` directly: no EventTarget listener on the hot path.
  const abort = new AbortController()
  let bail: ((reason: unknown) => void) | null = null
  const stop = (reason?: unknown): void => {
    if (abort.signal.aborted) return
    abort.abort(reason) // no reason: the socket's destroy, an AbortError
    bail?.(abort.signal.reason)
  }
  host.onDestroy(stop)
  const timer = setTimeout(() => stop(new AttemptTimeoutError(
    `${rung.name}: no connection to ${req.host}:${req.port} within ${req.timeoutMs} ms (transportTimeoutMs)`)), req.timeoutMs)
  req.signal = abort.signal
  req.deadline = started + req.timeoutMs
  try {
    return await new Promise<Channel>((resolve, reject) => {
      bail = reject
      ;(via ? via.connect(rung, req, ctx) : rung.connect!(req, ctx)).then(ch => {
        if (abort.signal.aborted) discardChannel(ch)
        else resolve(ch)
      }, reject)
    })
  } catch (err) {
    const e = err as Error
    // Abandoned because the socket was destroyed: not a failure of the rung there, nothing to report.
    if (host.destroyed) return null
    debug('chain', '%s failed for %s:%d after %d ms: %s', rung.name, req.host, req.port, Date.now() - started, e.message)
    ctx.errors.push(e)
    const ttl = negativeTtlMs(e)
    if (ttl > 0) cacheFailure(key, ttl, e.message)
    host.emit('transportAttemptFailed', { transport: rung.name, error: e })
    return null
  } finally {
    clearTimeout(timer)
    host.onDestroy(null)
  }
}

