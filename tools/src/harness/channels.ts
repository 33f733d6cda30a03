/**
 * The channels `fastsock pipe` measures: each fastsock rung, forced alone with the `transports`
 * option on both ends, and two plain `net` baselines (what a Node user has today): TCP loopback
 * and a UNIX path socket. This module selects them, opens the listener (peer side) and connects
 * (measuring side).
 */
import * as fs from 'fs'
import * as net from 'net'
import * as os from 'os'
import * as path from 'path'
import { envTransports, loadFastsock, type FastsockSocket, type RungInfo } from './library'
import type { ChannelSpec } from './types'

/** The plain `net` baselines, always measured unless `--transports` leaves them out. */
export const BASELINES: readonly ChannelSpec[] = [
  { id: 'net:tcp', kind: 'net', transport: 'tcp' },
  { id: 'net:unix', kind: 'net', transport: 'unix' }
]

/** Where a peer listens: TCP loopback port, or a UNIX socket path. */
export type ChannelAddress = { port: number, host: string } | { path: string }

const LOOPBACK = '127.0.0.1'
/**
 * Cross-host rungs (verbs, rsocket) cannot use loopback: their peer listens on every interface
 * and the measuring side dials this address, an RDMA device's (FASTSOCK_PIPE_RDMA_HOST, else the
 * RDMA guest's RDMAVM_IP).
 */
const CROSS_HOST = new Set(['verbs', 'rsocket'])
function rdmaHost (): string | null {
  return process.env.FASTSOCK_PIPE_RDMA_HOST || process.env.RDMAVM_IP || null
}
function listenHostFor (spec: ChannelSpec): string {
  return spec.kind === 'fastsock' && CROSS_HOST.has(spec.transport) && rdmaHost() !== null ? '0.0.0.0' : LOOPBACK
}
function dialHostFor (spec: ChannelSpec): string {
  return spec.kind === 'fastsock' && CROSS_HOST.has(spec.transport) ? rdmaHost() ?? LOOPBACK : LOOPBACK
}

/**
 * Normalizes one `--transports` entry: `unix` or `fastsock:unix` is the fastsock rung;
 * `net-tcp`, `net:tcp`, `net-unix`, `net:unix` are the baselines.
 */
export function parseSelector (text: string, shmPollUs?: number): ChannelSpec {
  const s = text.trim().toLowerCase()
  const m = /^net[-:](tcp|unix)$/.exec(s)
  if (m !== null) return { id: `net:${m[1]}`, kind: 'net', transport: m[1] }
  const rung = s.startsWith('fastsock:') ? s.slice('fastsock:'.length) : s
  if (rung === 'shm-nopoll' || rung === 'shm (no polling)') return SHM_NO_POLLING
  if (rung === 'shm') return shmDefault(shmPollUs)
  return { id: `fastsock:${rung}`, kind: 'fastsock', transport: rung }
}

/** The shm rung as a user gets it: no option set, unless --shm-poll-us says otherwise. */
function shmDefault (shmPollUs: number | undefined): ChannelSpec {
  return { id: 'fastsock:shm', kind: 'fastsock', transport: 'shm', ...(shmPollUs === undefined ? {} : { shmPollUs }) }
}

/** The shm rung with polling off on both ends (shmPollUs 0): every wait sleeps on the doorbell. */
const SHM_NO_POLLING: ChannelSpec = { id: 'fastsock:shm (no polling)', kind: 'fastsock', transport: 'shm', shmPollUs: 0 }

/**
 * The channels to measure, in order: fastsock rungs in chain order, then the baselines.
 * Without a selection: every rung `fastsock.transports()` reports available (and
 * FASTSOCK_TRANSPORTS lists, when set), and both baselines.
 * A selected rung that is unknown or unavailable is still tried (the row will say what ran), with
 * a warning.
 */
export function selectChannels (selectors: string[] | null, rungs: RungInfo[] | null, shmPollUs?: number): { channels: ChannelSpec[], warnings: string[] } {
  const warnings: string[] = []
  if (selectors === null) {
    const env = envTransports()
    const fast = (rungs ?? []).filter((r) => r.available && (env === null || env.includes(r.name)))
      .flatMap((r): ChannelSpec[] => r.name === 'shm'
        ? [shmDefault(shmPollUs), SHM_NO_POLLING]
        : [{ id: `fastsock:${r.name}`, kind: 'fastsock', transport: r.name }])
    return { channels: [...fast, ...BASELINES], warnings }
  }
  const picked = new Map<string, ChannelSpec>()
  for (const sel of selectors) {
    const spec = parseSelector(sel, shmPollUs)
    if (spec.kind === 'fastsock') {
      const rung = rungs?.find((r) => r.name === spec.transport)
      if (rungs === null) warnings.push(`${spec.id}: the fastsock library did not load`)
      else if (rung === undefined) warnings.push(`${spec.id}: fastsock has no rung named '${spec.transport}' (rungs: ${rungs.map((r) => r.name).join(', ')})`)
      else if (!rung.available) warnings.push(`${spec.id}: reported unavailable here (${rung.reason}); trying it anyway`)
    }
    picked.set(spec.id, spec)
  }
  const order = (c: ChannelSpec): number => {
    if (c.kind === 'net') return 1000 + BASELINES.findIndex((b) => b.id === c.id)
    const i = rungs?.findIndex((r) => r.name === c.transport) ?? -1
    return i < 0 ? 500 : i + (c.shmPollUs === 0 ? 0.5 : 0)
  }
  return { channels: [...picked.values()].sort((a, b) => order(a) - order(b)), warnings }
}

/** `{ shmPollUs }` when the channel sets it, else nothing (the library's default). */
function pollOption (spec: ChannelSpec): { shmPollUs?: number } {
  return spec.shmPollUs === undefined ? {} : { shmPollUs: spec.shmPollUs }
}

let pathCounter = 0

/**
 * Opens a listener for `spec` (peer side) and resolves with its address. `onConnection` receives
 * each accepted socket with Nagle disabled (a ping-pong must not wait for delayed ACKs).
 */
export async function listen (spec: ChannelSpec, onConnection: (socket: net.Socket) => void): Promise<{ server: net.Server, address: ChannelAddress }> {
  const accept = (socket: net.Socket): void => {
    socket.setNoDelay(true)
    onConnection(socket)
  }
  let server: net.Server
  let address: ChannelAddress
  if (spec.kind === 'fastsock') {
    const lib = loadFastsock()
    if (lib.mod === null) throw new Error(`fastsock did not load: ${lib.error?.message ?? 'unknown'}`)
    server = lib.mod.createServer({ transports: [spec.transport], ...pollOption(spec) }, accept)
    address = { port: 0, host: listenHostFor(spec) }
  } else if (spec.transport === 'tcp') {
    server = net.createServer(accept)
    address = { port: 0, host: LOOPBACK }
  } else {
    const file = path.join(os.tmpdir(), `fastsock-pipe-${process.pid}-${pathCounter++}.sock`)
    fs.rmSync(file, { force: true })
    server = net.createServer(accept)
    address = { path: file }
  }
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    const done = (): void => { server.off('error', reject); resolve() }
    if ('path' in address) server.listen(address.path, done)
    else server.listen(address.port, address.host, done)
  })
  if (!('path' in address)) {
    const bound = server.address()
    if (bound === null || typeof bound === 'string') throw new Error(`${spec.id}: listener has no TCP address`)
    address = { port: bound.port, host: dialHostFor(spec) }
  }
  return { server, address }
}

/**
 * Connects to a peer listening for `spec` (measuring side). Resolves with the socket and the
 * transport that actually connected: `socket.transport` for fastsock, the family for `net`.
 */
export async function connect (spec: ChannelSpec, address: ChannelAddress, timeoutMs: number): Promise<{ socket: FastsockSocket, transport: string }> {
  let socket: FastsockSocket
  if (spec.kind === 'fastsock') {
    const lib = loadFastsock()
    if (lib.mod === null) throw new Error(`fastsock did not load: ${lib.error?.message ?? 'unknown'}`)
    if ('path' in address) throw new Error(`${spec.id}: fastsock listens on TCP, got a path`)
    socket = lib.mod.connect({ port: address.port, host: address.host, transports: [spec.transport], transportTimeoutMs: timeoutMs, ...pollOption(spec) })
  } else {
    socket = 'path' in address ? net.connect({ path: address.path }) : net.connect({ port: address.port, host: address.host })
  }
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      socket.destroy()
      reject(new Error(`${spec.id}: connect timed out after ${timeoutMs} ms`))
    }, timeoutMs)
    socket.once('error', (err) => { clearTimeout(timer); reject(err) })
    socket.once('connect', () => { clearTimeout(timer); resolve() })
  })
  socket.setNoDelay(true)
  const transport = spec.kind === 'fastsock' ? String(socket.transport ?? 'unknown') : spec.transport
  return { socket, transport }
}

/** The row label: the channel, plus `→actual` when another transport ran. */
export function labelFor (spec: ChannelSpec, actual: string): string {
  return spec.kind === 'fastsock' && actual !== spec.transport ? `${spec.id}→${actual}` : spec.id
}
