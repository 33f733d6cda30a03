/**
 * Rung `verbs`: a byte stream over an RDMA reliable-connected queue pair (csrc/rdma/verbs.cc;
 * wire format in docs/wire-protocol.md, "verbs"). Short writes go eager (copied into
 * pre-registered buffers, SENT under credit-based flow control); writes of at least
 * `rndvThreshold` bytes go by rendezvous (the receiver RDMA READs them straight from the
 * writer's registered typed array into the reader's, zero copies). The socket has no kernel
 * handle: its Duplex hooks drive the native endpoint through the stream core shm uses too
 * (lib/stream/endpoint-stream.ts), so both rungs share stream semantics.
 *
 * Port spaces: a fastsock server listening on TCP port P listens with RDMA CM on port P of the
 * IB port space (RDMA_PS_IB) on every InfiniBand/RoCE address, and on port iwarpPort(P) of the
 * TCP port space on iWARP addresses (iWARP connections are kernel TCP connections, and the TCP
 * listener holds P there). The client dials whichever its route's device needs.
 *
 * Configuration (process environment, read once): FASTSOCK_VERBS_EAGER_BYTES (16384),
 * FASTSOCK_VERBS_CREDITS (32 receive buffers), FASTSOCK_RNDV_THRESHOLD (bytes; default chosen per
 * connection from the measured copy bandwidth and connection round trip),
 * FASTSOCK_VERBS_REG_CACHE_BYTES (64 MiB), FASTSOCK_VERBS_IWARP_PORT_OFFSET (10000). Busy polling
 * as on shm: `pollUs` (socket and server option) or FASTSOCK_POLL_US caps the window, 200 µs
 * unless set, 0 never polls.
 */
import * as net from 'net'
import { native, nativeMissingReason, VerbsEndpointNative, VerbsInfo } from '../native'
import { isLoopback, crossHostListenAddresses } from './remote'
import { channel, Capabilities, Channel, ConnectRequest, ListenRequest, RungListener, Rung, NO_CAPABILITIES, LISTEN_BACKLOG } from '../contract'
import { NotOfferedError, UnservedError } from '../errors'
import { debug } from '../debug'
import { familyName } from '../address'
import { rdmaMissing, activeDevices } from './rdma'

/** Native options of every verbs connection of this process. */
export interface VerbsOptions {
  eagerBytes?: number
  credits?: number
  /** 0: chosen per connection from measured attributes. */
  rndvThreshold?: number
  regCacheBytes?: number
  /** iWARP devices listen on port + this (FASTSOCK_VERBS_IWARP_PORT_OFFSET; not sent to native). */
  iwarpPortOffset?: number
}

function envInt (name: string, lo: number, hi: number): number | undefined {
  const raw = process.env[name]
  if (raw === undefined || raw === '') return undefined
  const v = Number(raw)
  if (!Number.isInteger(v) || v < lo || v > hi) {
    process.emitWarning(`${name}=${raw} ignored: expected an integer in [${lo}, ${hi}]`, { code: 'FASTSOCK_BAD_ENV' })
    return undefined
  }
  return v
}

let options: VerbsOptions | null = null
/** The process-wide verbs options, from the environment (read once). */
export function verbsOptions (): VerbsOptions {
  if (options === null) {
    options = {
      eagerBytes: envInt('FASTSOCK_VERBS_EAGER_BYTES', 256, 1 << 20),
      credits: envInt('FASTSOCK_VERBS_CREDITS', 4, 1024),
      rndvThreshold: envInt('FASTSOCK_RNDV_THRESHOLD', 1, 1 << 30),
      regCacheBytes: envInt('FASTSOCK_VERBS_REG_CACHE_BYTES', 0, 2 ** 40),
      iwarpPortOffset: envInt('FASTSOCK_VERBS_IWARP_PORT_OFFSET', 1, 65534) ?? 10000
    }
  }
  return options
}

/** The RDMA CM port an iWARP device serves TCP port `port` on (docs/transports.md). */
export function iwarpPort (port: number): number {
  const p = port + verbsOptions().iwarpPortOffset!
  return p <= 65535 ? p : p - 65535 + 1023 // wraps above the well-known ports
}

function view (info: VerbsInfo, localPort: number | null, remotePort: number | null) {
  return {
    local: { address: info.localAddress, family: familyName(info.localAddress), port: localPort ?? info.localPort },
    remote: { address: info.remoteAddress, family: familyName(info.remoteAddress), port: remotePort ?? info.remotePort }
  }
}

/**
 * Protocol counters (the endpoint's `stats()`: capability `stats`), no shared ring; a waiting connection is busy-polled (its
 * completion queue) by its loop's progress engine before it sleeps, as shm's ring is
 * (`pollUs` caps the window, docs/polling.md).
 */
const CAPS: Capabilities = Object.freeze({ ...NO_CAPABILITIES, adaptivePolling: true })

function verbsChannel (ep: VerbsEndpointNative, info: VerbsInfo, dialedPort: number | null, listenPort: number | null): Channel {
  return channel({ transport: 'verbs', endpoint: ep, view: view(info, listenPort, dialedPort), caps: CAPS })
}

function connectOne (addr: string, port: number, timeoutMs: number): Promise<Channel> {
  return new Promise((resolve, reject) => {
    native!.verbsConnect(addr, port, iwarpPort(port), { ...verbsOptions(), timeoutMs }, (err, ep, info) => {
      if (err) {
        // REJECTED: an RDMA CM answered but nobody listens there (not a fastsock server, or one
        // without verbs): the briefly cached "not offered".
        const e = err as NodeJS.ErrnoException
        return reject(e.code === 'ECONNREFUSED' ? UnservedError.from(e) : e)
      }
      debug('verbs', 'connected %s:%d -> %s:%d on %s', info!.localAddress, info!.localPort, info!.remoteAddress, info!.remotePort, info!.device)
      resolve(verbsChannel(ep!, info!, port, null))
    })
  })
}

async function connect (req: ConnectRequest): Promise<Channel> {
  const candidates = req.addresses.filter(a => net.isIP(a) && !isLoopback(a))
  if (candidates.length === 0) {
    throw new NotOfferedError(`verbs: ${req.host} is a loopback address (no RDMA device serves it)`)
  }
  let last: Error | null = null
  for (const addr of candidates) {
    if (req.signal.aborted) throw req.signal.reason
    let c: Channel
    try {
      c = await connectOne(addr, req.port, Math.max(1, req.deadline - Date.now()))
    } catch (err) {
      last = err as Error
      continue
    }
    if (req.signal.aborted) {
      c.endpoint!.close(true)
      throw req.signal.reason
    }
    return c
  }
  throw last!
}

function listen (req: ListenRequest): RungListener | null {
  const listeners: Array<{ close: () => void }> = []
  for (const addr of crossHostListenAddresses(req)) {
    try {
      const l = new native!.VerbsListener(addr, req.port, iwarpPort(req.port), LISTEN_BACKLOG, { ...verbsOptions() }, (ep, info) => {
        const why = req.busy()
        if (why) {
          debug('verbs', 'turning away %s:%d: %s', info.remoteAddress, info.remotePort, why)
          ep.close(true)
          return
        }
        req.accept(verbsChannel(ep, info, null, req.port))
      })
      debug('verbs', 'listening on %s port %d (%s, %s)', addr, l.port, l.device, l.transport)
      listeners.push(l)
    } catch (err) {
      debug('verbs', 'no verbs listener on %s:%d: %s', addr, req.port, (err as Error).message)
    }
  }
  if (listeners.length === 0) return null
  return { close: () => { for (const l of listeners) l.close() } }
}

export const verbs: Rung<'verbs'> = {
  name: 'verbs',
  handleless: true,
  probe () {
    if (!native) return { available: false, reason: nativeMissingReason() }
    const why = rdmaMissing()
    if (why) return { available: false, reason: why }
    return { available: true, reason: `RC queue pairs over RDMA CM on ${activeDevices()}` }
  },
  connect,
  listen
}
