/**
 * L5, the failover chain (JFS 3.1.4), a generic loop over the registry's rungs modelled on Node's
 * internalConnectMultiple: one attempt context, each attempt bounded by a timeout, an event per
 * attempt and per failure, the first rung that connects wins. A rung that is Node's own connect
 * (tcp) ends the chain there, errors included. Without it, exhausting the chain destroys the
 * socket with an AllTransportsFailedError (an AggregateError, code
 * ERR_FASTSOCK_ALL_TRANSPORTS_FAILED) of every attempt's error.
 *
 * Negative results are cached per rung and destination (lib/negative-cache.ts): "not offered"
 * briefly, failures longer, a busy server not at all; so a missing or broken rung costs its
 * timeout once, not on every connect.
 *
 * The chain runs over a ChainHost (the socket implements it), and names no rung: what a rung
 * does (skip a destination, share a set-up with another) is the rung's.
 */
import * as net from 'net'
import * as dns from 'dns'
import { parseTransports, TransportName } from './transports/names'
import { availability, rungOf, rankOf, NODE_TRANSPORT, PATH_TRANSPORT } from './transports/registry'
import type { AttemptContext, Channel, ConnectRequest, Rung } from './transports/contract'
import { discardChannel } from './transports/contract'
import { debug, debugEnabled } from './debug'
import { AllTransportsFailedError } from './errors'
import { underFdPressure, FD_HEADROOM } from './transports/fd-pressure'
import { cachedFailure, cacheFailure, negativeTtlMs } from './negative-cache'

export { clearNegativeCache, NOT_OFFERED_TTL_MS, FAILURE_TTL_MS } from './negative-cache'

type AnyFn = (...args: any[]) => any // eslint-disable-line @typescript-eslint/no-explicit-any
const normalizeArgs = (net as unknown as { _normalizeArgs: (args: unknown[]) => unknown[] })._normalizeArgs

/** What the chain needs of the socket it connects. */
export interface ChainHost {
  readonly destroyed: boolean
  /** The socket's chain (its `transports` option, else the process's). */
  readonly transports: readonly TransportName[]
  /** Upper bound of one rung's attempt (ms). */
  readonly timeoutMs: number
  /** shm ring bytes per direction, for a rung that sets up rings. */
  readonly shmRingBytes: number
  /** A handle or a parent stream is already there (a TLSSocket's, a socket from an fd). */
  hasHandleOrParent (): boolean
  emit (event: string, payload: unknown): boolean
  once (event: 'connect', cb: AnyFn): unknown
  destroy (err?: Error): unknown
  /** Enters the connecting state (no handle yet): writes queue, timers refresh. */
  beginConnecting (): void
  /** Node's own connect on these normalized arguments; the socket reports `transport`. */
  nodeConnect (normalized: unknown[], transport: TransportName): void
  /** Takes the channel over and emits 'lookup' (when given), 'connect', 'ready'. */
  adopt (channel: Channel, lookup: [string, number, string] | null): void
}

interface ConnectOptions {
  port?: number | string
  host?: string
  path?: string
  localAddress?: string
  localPort?: number
  family?: number
  hints?: number
  lookup?: AnyFn
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
 * Implements Socket#connect (see its docstring): `args` as connect() got them, or an array Node
 * already normalized (net.connect's call).
 */
export function connectThroughChain (host: ChainHost, args: unknown[]): void {
  const pre = args[0]
  const normalized = Array.isArray(pre) && Object.getOwnPropertySymbols(pre).length > 0 ? pre : normalizeArgs(args)
  const options = normalized[0] as ConnectOptions
  const cb = normalized[1] as AnyFn | null
  if (options.path != null) return host.nodeConnect(normalized, PATH_TRANSPORT)
  const hostOk = options.host === undefined || options.host === null || typeof options.host === 'string'
  if (!validPort(options.port) || !hostOk || host.destroyed || host.hasHandleOrParent()) {
    // Node's own connect throws or handles these exactly as net does.
    return host.nodeConnect(normalized, NODE_TRANSPORT)
  }
  const decline = declineReason(options)
  if (decline) debug('chain', 'fast rungs declined: %s', decline)
  const chain = options.transports !== undefined ? parseTransports(options.transports) : host.transports
  const rungs = chain.map(rungOf).filter(r => {
    if (r.nodeConnect) return true
    if (decline) return false
    const a = availability(r.name as TransportName)
    if (!a.available) debug('chain', 'skip %s: %s', r.name, a.reason)
    return a.available
  })
  if (rungs.length === 1 && rungs[0].nodeConnect) {
    // After connect() returns, as Node emits 'connectionAttempt'.
    process.nextTick(() => host.emit('transportAttempt', { transport: rungs[0].name }))
    return host.nodeConnect(normalized, rungs[0].name as TransportName)
  }
  if (cb !== null) host.once('connect', cb)
  host.beginConnecting()
  runChain(host, options, rungs).catch(err => {
    if (!host.destroyed) host.destroy(err)
  })
}

/**
 * Lookups with the default resolver in flight, by host, family and hints: connects to one name
 * in the same tick share one answer, so they reach their first rung in the order they were
 * opened (separate lookups complete in the thread pool's order, not the callers'), and the
 * server accepts them in that order, as loopback TCP does. A custom `lookup` is called per
 * connect, as Node does.
 */
const inFlight = new Map<string, Promise<string[]>>()

function lookupAll (options: ConnectOptions): Promise<string[]> {
  const host = options.host || 'localhost'
  if (net.isIP(host)) return Promise.resolve([host])
  if (options.lookup !== undefined) return lookupOnce(options, host, options.lookup)
  const key = `${host}|${options.family ?? 0}|${options.hints ?? 0}`
  let p = inFlight.get(key)
  if (p === undefined) {
    p = lookupOnce(options, host, dns.lookup)
    inFlight.set(key, p)
    const forget = (): void => { inFlight.delete(key) }
    p.then(forget, forget)
  }
  return p
}

function lookupOnce (options: ConnectOptions, host: string, lookup: AnyFn): Promise<string[]> {
  return new Promise((resolve, reject) => {
    lookup(host, { all: true, family: options.family, hints: options.hints },
      (err: Error | null, addrs: string | Array<{ address: string }>) => {
        if (err) return reject(err)
        resolve(typeof addrs === 'string' ? [addrs] : addrs.map(a => a.address))
      })
  })
}

/** The DNS answer for a fast rung's request; none when the lookup fails (only Node's connect remains). */
async function resolveAddresses (options: ConnectOptions, host: string): Promise<string[]> {
  try {
    return await lookupAll(options)
  } catch (err) {
    debug('chain', 'lookup of %s failed (%s): fast rungs skipped', host, (err as Error).message)
    return []
  }
}

async function runChain (host: ChainHost, options: ConnectOptions, rungs: Rung[]): Promise<void> {
  const port = Number(options.port)
  const hostname = options.host || 'localhost'
  const ctx: AttemptContext = { rungs, index: 0, errors: [], rank: rankOf }
  let req: ConnectRequest | null = null
  await new Promise<void>(resolve => process.nextTick(resolve)) // events after connect() returns
  for (; ctx.index < rungs.length; ctx.index++) {
    const rung = rungs[ctx.index]
    if (host.destroyed) return
    if (rung.nodeConnect) {
      debug('chain', '%s:%d -> %s', hostname, port, rung.name)
      host.emit('transportAttempt', { transport: rung.name })
      host.nodeConnect(normalizeArgs([options]), rung.name as TransportName)
      return
    }
    if (req === null) {
      const addresses = await resolveAddresses(options, hostname)
      if (host.destroyed) return
      req = { host: hostname, addresses, port, timeoutMs: host.timeoutMs, shmRingBytes: host.shmRingBytes, aborted: () => host.destroyed }
    }
    const ch = await attempt(host, rung, req, ctx)
    if (ch === null) continue
    if (host.destroyed) return discardChannel(ch)
    const remoteAddress = ch.view?.remote.address ?? req.addresses[0]
    debug('chain', '%s:%d -> %s (%s)', hostname, port, ch.transport, remoteAddress)
    const lookup: [string, number, string] | null = net.isIP(hostname) ? null : [remoteAddress, net.isIP(remoteAddress), hostname]
    // Adoption runs the application's 'lookup'/'connect'/'ready' listeners and write callbacks:
    // outside this promise, so that a throw there is the application's uncaught exception, as
    // from Node's afterConnect, and not a failure of this connect (which would destroy the socket).
    queueMicrotask(() => host.adopt(ch, lookup))
    return
  }
  if (host.destroyed) return
  const tried = rungs.map(r => r.name).join(', ')
  const agg = new AllTransportsFailedError(ctx.errors, `fastsock: no transport connected to ${hostname}:${port} (chain: ${tried})`)
  if (debugEnabled) debug('chain', agg.message)
  host.destroy(agg)
}

/**
 * One attempt of `rung` with its events and the negative cache: the channel, or null when the
 * rung was skipped or failed (its error then goes to ctx.errors and 'transportAttemptFailed').
 */
async function attempt (host: ChainHost, rung: Rung, req: ConnectRequest, ctx: AttemptContext): Promise<Channel | null> {
  if (req.addresses.length === 0 || !rung.connect) return null
  const skip = rung.skip?.(req, ctx) ?? null
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
  try {
    return await rung.connect(req, ctx)
  } catch (err) {
    const e = err as Error
    debug('chain', '%s failed for %s:%d after %d ms: %s', rung.name, req.host, req.port, Date.now() - started, e.message)
    ctx.errors.push(e)
    const ttl = negativeTtlMs(e)
    if (ttl > 0) cacheFailure(key, ttl, e.message)
    host.emit('transportAttemptFailed', { transport: rung.name, error: e })
    return null
  }
}
