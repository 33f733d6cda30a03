/**
 * IP address helpers for the side channel: locality (decided after DNS), byte forms, and the
 * addresses both ends report for a connection that does not run over TCP.
 */
import * as net from 'net'
import * as os from 'os'

/** 4 or 6, and the address in network byte order (4 or 16 bytes). */
export interface AddressBytes { family: 4 | 6, bytes: Uint8Array }

/** Parses an IPv4 or IPv6 literal (zone index dropped) into bytes; null when it is not one. */
export function addressBytes (ip: string): AddressBytes | null {
  const pct = ip.indexOf('%')
  if (pct >= 0) ip = ip.slice(0, pct)
  const v = net.isIP(ip)
  if (v === 4) return { family: 4, bytes: Uint8Array.from(ip.split('.').map(Number)) }
  if (v !== 6) return null
  const out = new Uint8Array(16)
  let tail: number[] = []
  let s = ip
  const lastColon = s.lastIndexOf(':')
  if (s.indexOf('.', lastColon) >= 0) { // embedded IPv4 in the last 32 bits
    const v4 = s.slice(lastColon + 1).split('.').map(Number)
    s = s.slice(0, lastColon + 1) + '0:0'
    tail = v4
  }
  const [head, rest] = s.split('::') as [string, string | undefined]
  const h = head ? head.split(':') : []
  const r = rest !== undefined && rest !== '' ? rest.split(':') : []
  const groups = rest === undefined ? h : [...h, ...new Array(8 - h.length - r.length).fill('0'), ...r]
  for (let i = 0; i < 8; i++) {
    const g = parseInt(groups[i] ?? '0', 16)
    out[2 * i] = g >> 8
    out[2 * i + 1] = g & 0xff
  }
  if (tail.length === 4) out.set(tail, 12)
  return { family: 6, bytes: out }
}

/** Formats 4 or 16 bytes as Node prints addresses (IPv6 compressed, lower case). */
export function formatAddress (family: 4 | 6, bytes: Uint8Array): string {
  if (family === 4) return Array.from(bytes.subarray(0, 4)).join('.')
  return new net.SocketAddress({ address: formatV6Long(bytes), family: 'ipv6' }).address
}

function formatV6Long (b: Uint8Array): string {
  const g: string[] = []
  for (let i = 0; i < 16; i += 2) g.push(((b[i] << 8) | b[i + 1]).toString(16))
  return g.join(':')
}

let ifaceCache: { at: number, set: Set<string> } | null = null
const IFACE_CACHE_MS = 2000

function interfaceAddresses (): Set<string> {
  const now = Date.now()
  if (ifaceCache && now - ifaceCache.at < IFACE_CACHE_MS) return ifaceCache.set
  const set = new Set<string>()
  for (const list of Object.values(os.networkInterfaces())) {
    for (const a of list ?? []) set.add(a.address.split('%')[0])
  }
  ifaceCache = { at: now, set }
  return set
}

/** The IPv4 address inside an IPv4-mapped IPv6 address (::ffff:a.b.c.d), else null. */
export function unmapV4 (ip: string): string | null {
  const m = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip)
  return m ? m[1] : null
}

/**
 * True when a connection to `ip` stays on this host: 127.0.0.0/8, ::1, the wildcards 0.0.0.0 and
 * :: (which connect to loopback), IPv4-mapped forms of those, and any address of this host's
 * interfaces (os.networkInterfaces(), cached for 2 s).
 */
export function isLocalAddress (ip: string): boolean {
  const plain = ip.split('%')[0]
  const v4 = unmapV4(plain) ?? plain
  if (net.isIPv4(v4)) {
    if (v4.startsWith('127.') || v4 === '0.0.0.0') return true
    return interfaceAddresses().has(v4)
  }
  if (!net.isIPv6(plain)) return false
  const b = addressBytes(plain)!.bytes
  const zeros = b.subarray(0, 15).every(x => x === 0)
  if (zeros && (b[15] === 0 || b[15] === 1)) return true // :: and ::1
  return interfaceAddresses().has(formatAddress(6, b))
}

/** The address a connection to `ip` really reaches: 0.0.0.0 means 127.0.0.1, :: means ::1. */
export function dialedAddress (ip: string): string {
  if (ip === '0.0.0.0') return '127.0.0.1'
  if (ip === '::') return '::1'
  return ip.split('%')[0]
}

/** Node's family string for an address. */
export function familyName (ip: string): 'IPv4' | 'IPv6' {
  return net.isIPv4(ip) ? 'IPv4' : 'IPv6'
}

/**
 * True when `blockList` (a socket's or a server's `blockList` option, Node 22+; absent before)
 * blocks the IP address `address`, as Node's net checks it (`ipv4`/`ipv6` by the address's form).
 */
export function blocks (blockList: net.BlockList | null | undefined, address: unknown): boolean {
  if (blockList == null || typeof address !== 'string') return false
  const family = net.isIP(address)
  return family !== 0 && blockList.check(address, family === 6 ? 'ipv6' : 'ipv4')
}

export type { EndpointView, TcpView } from './contract'
