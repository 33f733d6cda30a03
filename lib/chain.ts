/**
 * The failover chain (JFS 3.1.4), modelled on Node's internalConnectMultiple: walk the rungs in
 * order, bound each attempt by a timeout, emit an event per attempt and per failure, and end on
 * the first rung that connects. TCP, when in the chain, is the last attempt and is Node's own
 * connect, errors included. Without TCP, exhausting the chain destroys the socket with an
 * AggregateError (code ERR_FASTSOCK_ALL_TRANSPORTS_FAILED) of every attempt's error.
 *
 * Negative results are cached per rung and destination: a destination without a side channel for
 * NOT_OFFERED_TTL_MS, a failed attempt (timeout, unverified peer, bad handshake) for
 * FAILURE_TTL_MS, so a missing or broken rung costs its timeout once, not on every connect.
 */
import * as net from 'net'
import * as dns from 'dns'
import type { Socket } from './socket'
import { TransportName, parseTransports } from './transports/names'
import { availability } from './transports/availability'
import { connectUnix, NotOffered, Established } from './transports/unix'
import { remoteRung, RemoteRung } from './transports/remote'
import './transports/rungs'
import { isLocalAddress } from './address'
import { debug, debugEnabled } from './debug'
import { FastsockError } from './errors'
import { RejectReason, CAP_SHM, CAP_UNIX } from './wire'

/** How long (ms) a rung's "not offered" answer (nobody serves it there) is cached per destination. */
export const NOT_OFFERED_TTL_MS = 1000
/** How long (ms) a rung's failure (timeout, error) is cached per destination. */
export const FAILURE_TTL_MS = 30000

const negativeCache = new Map<string, { until: number, reason: string }>()

/** Forgets every cached negative result (tests; or after changing the local servers). */
export function clearNegativeCache (): void { negativeCache.clear() }

function cached (key: string): string | null {
  const e = negativeCache.get(key)
  if (!e) return null
  if (e.until <= Date.now()) {
    negativeCache.delete(key)
    return null
  }
  return e.reason
}

type AnyFn = (...args: any[]) => any // eslint-disable-line @typescript-eslint/no-explicit-any
const normalizeArgs = (net as unknown as { _normalizeArgs: (args: unknown[]) => unknown[] })._normalizeArgs

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
}

/**
 * Why no fast rung may serve these options (the side channel cannot honour them), or null.
 * A caller asking for a local address or port, or an fd, gets TCP as it asked.
 */
function declineReason (o: ConnectOptions): string | null {
  if (o.localAddress != null && (o.localAddress as unknown) !== '') return 'localAddress requested'
  if (o.localPort != null && (o.localPort as unknown) !== 0) return 'localPort requested'
  if (o.fd !== undefined) return 'fd given'
  // A family the host literal does not have: Node's connect decides (TCP), as without fastsock.
  const lit = typeof o.host === 'string' ? net.isIP(o.host) : 0
  if ((o.family === 4 || o.family === 6) && lit !== 0 && lit !== o.family) return `family ${o.family} requested for an IPv${lit} address`
  return null
}

/** True when the port is one Node's connect accepts (so Node's synchronous errors stay Node's). */
function validPort (port: unknown): boolean {
  if (typeof port === 'number') return Number.isInteger(port) && port >= 0 && port <= 0xffff
  if (typeof port === 'string') return port.trim() !== '' && /^\d+$/.test(port.trim()) && Number(port) <= 0xffff
  return false
}

/** Implements Socket#connect: see its docstring. */
export function connectThroughChain (socket: Socket, args: unknown[]): Socket {
  // connect(normalizedArgs) as net.connect() calls it: an array Node has already normalized.
  const pre = args[0]
  const normalized = Array.isArray(pre) && Object.getOwnPropertySymbols(pre).length > 0 ? pre : normalizeArgs(args)
  const options = normalized[0] as ConnectOptions
  const cb = normalized[1] as AnyFn | null
  if (options.path != null) {
    const s = socket._fsNodeConnect(normalized)
    s.transport = 'unix'
    return s
  }
  const hostOk = options.host === undefined || options.host === null || typeof options.host === 'string'
  const preset = socket as unknown as { _parent: Socket | null, _handle: unknown }
  // A socket that already has a handle (a TLSSocket's TLSWrap, a socket made from an fd) or a
  // parent stream connects that handle: Node's own connect.
  if (!validPort(options.port) || !hostOk || socket.destroyed || preset._parent || preset._handle) {
    // Node's own connect throws or handles these exactly as net does.
    return socket._fsNodeConnect(normalized)
  }
  const decline = declineReason(options)
  if (decline) debug('chain', 'fast rungs declined: %s', decline)
  const chain = (options as { transports?: unknown }).transports !== undefined
    ? parseTransports((options as { transports?: unknown }).transports)
    : socket._fsTransports
  const rungs = chain.filter(t => {
    if (t === 'tcp') return true
    if (decline) return false
    const a = availability(t)
    if (!a.available) debug('chain', 'skip %s: %s', t, a.reason)
    return a.available
  })
  if (rungs.length === 1 && rungs[0] === 'tcp') {
    // After connect() returns, as Node emits 'connectionAttempt'.
    process.nextTick(() => socket.emit('transportAttempt', { transport: 'tcp' }))
    return socket._fsNodeConnect(normalized)
  }
  if (cb !== null) socket.once('connect', cb)
  socket._fsWriteImpl = null
  ;(socket as unknown as { connecting: boolean }).connecting = true
  socket._fsUnrefTimer()
  runChain(socket, options, rungs).catch(err => {
    if (!socket.destroyed) socket.destroy(err)
  })
  return socket
}

function lookupAll (options: ConnectOptions): Promise<string[]> {
  const host = options.host || 'localhost'
  if (net.isIP(host)) return Promise.resolve([host])
  const lookup = options.lookup ?? dns.lookup
  return new Promise((resolve, reject) => {
    lookup(host, { all: true, family: options.family, hints: options.hints },
      (err: Error | null, addrs: string | Array<{ address: string }>) => {
        if (err) return reject(err)
        resolve(typeof addrs === 'string' ? [addrs] : addrs.map(a => a.address))
      })
  })
}

/**
 * One attempt on a cross-host rung (lib/transports/remote.ts), with its events and the negative
 * cache. The established connection, or null (the error is pushed to `errors`).
 */
async function tryRemote (socket: Socket, remote: RemoteRung, host: string, addresses: string[], port: number,
  errors: Error[]): Promise<Established | null> {
  const rung = remote.name
  const key = `${rung}|${addresses.join(',')}|${port}`
  const hit = cached(key)
  if (hit !== null) {
    debug('chain', 'skip %s for %s:%d: cached (%s)', rung, host, port, hit)
    return null
  }
  socket.emit('transportAttempt', { transport: rung })
  const started = Date.now()
  try {
    const est = await remote.connect({ host, addresses, port, timeoutMs: socket._fsTimeoutMs, aborted: () => socket.destroyed })
    debug('chain', '%s:%d -> %s in %d ms', host, port, rung, Date.now() - started)
    return est
  } catch (err) {
    const e = err as Error & { notOffered?: boolean }
    debug('chain', '%s failed for %s:%d after %d ms: %s', rung, host, port, Date.now() - started, e.message)
    errors.push(e)
    negativeCache.set(key, { until: Date.now() + (e.notOffered ? NOT_OFFERED_TTL_MS : FAILURE_TTL_MS), reason: e.message })
    socket.emit('transportAttemptFailed', { transport: rung, error: e })
    return null
  }
}

/** Releases a connection established for a socket destroyed meanwhile. */
function discard (est: Established): void {
  est.probe?.destroy()
  est.shm?.close(true)
}

async function runChain (socket: Socket, options: ConnectOptions, rungs: TransportName[]): Promise<void> {
  const port = Number(options.port)
  const host = options.host || 'localhost'
  const errors: Error[] = []
  let addresses: string[] | null = null
  let sideChannelTried = false
  await new Promise<void>(resolve => process.nextTick(resolve)) // events after connect() returns
  for (const rung of rungs) {
    if (socket.destroyed) return
    if (rung === 'tcp') {
      debug('chain', '%s:%d -> tcp', host, port)
      socket.emit('transportAttempt', { transport: 'tcp' })
      socket._fsNodeConnect(normalizeArgs([options]))
      return
    }
    if (addresses === null) {
      try {
        addresses = await lookupAll(options)
      } catch (err) {
        debug('chain', 'lookup of %s failed (%s): fast rungs skipped', host, (err as Error).message)
        addresses = []
      }
      if (socket.destroyed) return
    }
    if (rung !== 'unix' && rung !== 'shm') {
      const remote = remoteRung(rung)
      if (remote === undefined || addresses.length === 0) continue
      const est = await tryRemote(socket, remote, host, addresses, port, errors)
      if (est === null) continue
      if (socket.destroyed) return discard(est)
      const lookup: [string, number, string] | null = net.isIP(host) ? null : [addresses[0], net.isIP(addresses[0]), host]
      socket._fsAdopt(est, lookup)
      return
    }
    const local = addresses.filter(isLocalAddress)
    if (local.length === 0) {
      debug('chain', 'skip %s: %s is not on this host', rung, host)
      continue
    }
    // shm and unix share the side channel: one attempt offers both, the server picks.
    const sideKey = `side|${local.join(',')}|${port}`
    const shmKey = `shm|${local.join(',')}|${port}`
    const hit = cached(sideKey) ?? (rung === 'shm' ? cached(shmKey) : null)
    if (hit !== null) {
      debug('chain', 'skip %s for %s:%d: cached (%s)', rung, host, port, hit)
      continue
    }
    if (sideChannelTried) {
      debug('chain', 'skip %s: the side channel was already tried', rung)
      continue
    }
    const laterUnix = rung === 'shm' && rungs.indexOf('unix') > rungs.indexOf('shm') && cached(sideKey) === null
    const capabilities = rung === 'shm' ? CAP_SHM | (laterUnix ? CAP_UNIX : 0) : CAP_UNIX
    socket.emit('transportAttempt', { transport: rung })
    try {
      const est = await connectUnix({
        addresses: local, port, timeoutMs: socket._fsTimeoutMs, aborted: () => socket.destroyed,
        capabilities, shmRingBytes: socket._fsShmRingBytes
      })
      if (socket.destroyed) return discard(est)
      const remoteAddress = est.view!.remote.address
      debug('chain', '%s:%d -> %s (%s)', host, port, est.transport, remoteAddress)
      const lookup: [string, number, string] | null = net.isIP(host) ? null : [remoteAddress, net.isIP(remoteAddress), host]
      socket._fsAdopt(est, lookup)
      return
    } catch (err) {
      const shmSetup = (err as { shmSetup?: boolean }).shmSetup === true
      const e = err instanceof NotOffered
        ? new FastsockError('ERR_FASTSOCK_NOT_OFFERED', `${rung}: ${err.message}`)
        : err as Error & { reason?: number }
      debug('chain', '%s failed for %s:%d: %s', rung, host, port, e.message)
      errors.push(e)
      if (err instanceof NotOffered) {
        negativeCache.set(sideKey, { until: Date.now() + NOT_OFFERED_TTL_MS, reason: err.message })
      } else if ((e as { reason?: number }).reason !== RejectReason.Busy) {
        negativeCache.set(shmSetup ? shmKey : sideKey, { until: Date.now() + FAILURE_TTL_MS, reason: e.message })
      }
      if (!shmSetup) sideChannelTried = true
      socket.emit('transportAttemptFailed', { transport: rung, error: e })
    }
  }
  if (socket.destroyed) return
  const tried = rungs.join(', ')
  const agg = new AggregateError(errors, `fastsock: no transport connected to ${host}:${port} (chain: ${tried})`) as AggregateError & { code: string }
  agg.code = 'ERR_FASTSOCK_ALL_TRANSPORTS_FAILED'
  if (debugEnabled) debug('chain', agg.message)
  socket.destroy(agg)
}

