/**
 * The abstract UNIX names of the side channel (docs/wire-protocol.md): a fastsock server
 * listening on TCP addr:port also listens on `fastsock/1/<addr>/<port>`. Abstract names are
 * scoped to the network namespace, like TCP ports, and vanish with their socket.
 */
import { addressBytes, formatAddress, unmapV4 } from '../address'

/** The abstract name a listener bound to `address` (Node's form) and `port` uses. */
export function channelName (address: string, port: number, v6only = false): string {
  return `fastsock/1/${address}${v6only ? '%v6only' : ''}/${port}`
}

/**
 * Names a client tries for a dialed address, in order: the exact address, then the wildcards
 * that would accept it (0.0.0.0 and dual-stack :: for IPv4; :: and IPv6-only :: for IPv6).
 */
export function candidateNames (dialed: string, port: number): string[] {
  const b = addressBytes(dialed)
  if (!b) return []
  const canon = formatAddress(b.family, b.bytes)
  if (b.family === 4) return [channelName(canon, port), channelName('0.0.0.0', port), channelName('::', port)]
  if (unmapV4(canon)) return [channelName(canon, port), channelName('::', port)]
  return [channelName(canon, port), channelName('::', port), channelName('::', port, true)]
}
