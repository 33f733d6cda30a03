/**
 * Rung `tcp`: Node's own TCP, always available and always last, so that a fastsock endpoint
 * still talks to a plain `net` peer byte for byte. The chain hands the socket to Node's own
 * connect (its DNS, happy eyeballs, 'lookup' and errors); the server's TCP listener is Node's.
 */
import type { Rung } from '../contract'

export const tcp: Rung<'tcp'> = {
  name: 'tcp',
  nodeConnect: true,
  tlsOnHandle: true,
  probe: () => ({ available: true, reason: "Node's own TCP, always available" })
}
