/**
 * rdma-core as the addon found it, shared by the RDMA rungs' probes (verbs, rsocket) and smc's
 * listener decision. Probed once per process.
 */
import { native, RdmaProbe } from '../native'

let probed: RdmaProbe | null | undefined

/** rdma-core as the addon found it (null without the addon). Probed once per process. */
export function rdma (): RdmaProbe | null {
  if (probed === undefined) probed = native ? native.rdmaProbe() : null
  return probed
}

/** Why no RDMA rung can run here, or null. */
export function rdmaMissing (): string | null {
  const p = rdma()
  if (!p) return 'native addon not loaded'
  if (!p.loaded) return `rdma-core not available: ${p.error}`
  if (p.devices.length === 0) return `no RDMA devices${p.error ? ` (${p.error})` : ''}`
  if (!p.devices.some(d => d.ports.some(x => x.active))) return `no active RDMA port (devices: ${p.devices.map(d => d.name).join(', ')})`
  return null
}

/** 'rxe0 (ib), siw0 (iwarp)': the devices with an active port. */
export function activeDevices (): string {
  return rdma()!.devices.filter(d => d.ports.some(x => x.active)).map(d => `${d.name} (${d.transport})`).join(', ')
}
