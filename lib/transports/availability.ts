/**
 * Which rungs this host offers, and why the others are off. Computed once per process: a rung
 * that is absent here is skipped by every connect without cost.
 */
import { native, loadError, RdmaProbe } from '../native'
import { remoteRung } from './remote'
import './rungs'
import { TRANSPORT_NAMES, TransportName } from './names'
import * as util from 'util'

/** One rung as transports() reports it: `available` here, and `reason` in a sentence either way. */
export interface TransportAvailability {
  name: TransportName
  available: boolean
  /** Why the rung is (or is not) usable on this host. */
  reason: string
}

const AF_SMC = 43
const AF_INET_SDP = 27

function familyNote (family: number, label: string): string {
  if (!native) return `${label}: native addon not loaded`
  const r = native.probeSocketFamily(family)
  return r === 0 ? `${label} sockets exist in this kernel` : `no ${label} in this kernel (${util.getSystemErrorName(r)})`
}

function compute (name: TransportName): TransportAvailability {
  const nativeMissing = `native addon not loaded: ${loadError?.message.split('\n')[0] ?? 'unknown'}`
  switch (name) {
    case 'tcp':
      return { name, available: true, reason: "Node's own TCP, always available" }
    case 'unix':
      if (!native) return { name, available: false, reason: nativeMissing }
      if (process.platform !== 'linux') return { name, available: false, reason: 'abstract UNIX sockets need Linux' }
      return { name, available: true, reason: 'verified side channel on an abstract UNIX socket (same host, same uid)' }
    case 'shm':
      if (!native) return { name, available: false, reason: nativeMissing }
      if (process.platform !== 'linux' || typeof native.ShmEndpoint !== 'function') return { name, available: false, reason: 'needs Linux (memfd, eventfd)' }
      return { name, available: true, reason: 'shared-memory rings (memfd + eventfd doorbells) negotiated over the side channel' }
    case 'verbs':
    case 'rsocket': {
      if (!native) return { name, available: false, reason: nativeMissing }
      const why = rdmaMissing()
      if (why) return { name, available: false, reason: why }
      const devs = activeDevices()
      if (name === 'rsocket' && !rdma()!.rsocket) return { name, available: false, reason: 'librdmacm has no rsocket API' }
      if (!remoteRung(name)) return { name, available: false, reason: `not in this build (devices: ${devs})` }
      if (name === 'verbs') return { name, available: true, reason: `RC queue pairs over RDMA CM on ${devs}` }
      const r = rdma()!
      const limit = r.rsocketSvcBug ? `; librdmacm ${r.rdmacmVersion || '(release unknown)'} predates rdma-core's rsocket service-thread fix (53, 44.7...): worked around, up to 67 rsocket connections and 67 listeners per process` : ''
      return { name, available: true, reason: `rsockets (librdmacm) on ${devs}${limit}` }
    }
    case 'smc':
    case 'sdp': {
      const [family, label] = name === 'smc' ? [AF_SMC, 'AF_SMC'] : [AF_INET_SDP, 'AF_INET_SDP']
      const note = familyNote(family, label)
      if (!native || native.probeSocketFamily(family) !== 0) return { name, available: false, reason: note }
      if (!remoteRung(name)) return { name, available: false, reason: `not in this build; ${note}` }
      return { name, available: true, reason: note }
    }
  }
}

let probe: RdmaProbe | null | undefined

/** rdma-core as the addon found it (null without the addon). Probed once per process. */
export function rdma (): RdmaProbe | null {
  if (probe === undefined) probe = native ? native.rdmaProbe() : null
  return probe
}

/** Why no RDMA rung can run here, or null. */
function rdmaMissing (): string | null {
  const p = rdma()
  if (!p) return 'native addon not loaded'
  if (!p.loaded) return `rdma-core not available: ${p.error}`
  if (p.devices.length === 0) return `no RDMA devices${p.error ? ` (${p.error})` : ''}`
  if (!p.devices.some(d => d.ports.some(x => x.active))) return `no active RDMA port (devices: ${p.devices.map(d => d.name).join(', ')})`
  return null
}

/** 'rxe0 (ib), siw0 (iwarp)': the devices with an active port. */
function activeDevices (): string {
  return rdma()!.devices.filter(d => d.ports.some(x => x.active)).map(d => `${d.name} (${d.transport})`).join(', ')
}

let cache: Map<TransportName, TransportAvailability> | null = null

/** Availability of one rung on this host (cached for the life of the process). */
export function availability (name: TransportName): TransportAvailability {
  if (!cache) cache = new Map()
  let a = cache.get(name)
  if (!a) {
    a = compute(name)
    cache.set(name, a)
  }
  return a
}

/** Every rung in chain order, available or not, and why: what `fastsock probe` prints. */
export function transports (): TransportAvailability[] {
  return TRANSPORT_NAMES.map(availability)
}
