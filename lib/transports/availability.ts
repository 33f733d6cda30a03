/**
 * Which rungs this host offers, and why the others are off. Computed once per process: a rung
 * that is absent here is skipped by every connect without cost.
 */
import { native, loadError } from '../native'
import { TRANSPORT_NAMES, TransportName } from './names'
import * as util from 'util'

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
    case 'rsocket':
      return { name, available: false, reason: 'not in this build yet (RDMA rungs)' }
    case 'smc':
      return { name, available: false, reason: `not in this build yet; ${familyNote(AF_SMC, 'AF_SMC')}` }
    case 'sdp':
      return { name, available: false, reason: `not in this build yet; ${familyNote(AF_INET_SDP, 'AF_INET_SDP')}` }
  }
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
