/**
 * init / finalize / abort: the life of the process's device.
 *
 * init: bootstrap (rank, size, the store) → listen with fastsock's createServer (port 0, on the
 * address the store connection used) → publish this rank's endpoint card `card/<rank>` (JSON:
 * host key, address, port, pid) → read every card → the world communicator. Connections are
 * made lazily, on first use.
 *
 * finalize: waits for every send to complete, tells the store (finalizing: closing now is no
 * loss), synchronises all ranks through the store, says BYE on every connection and closes.
 */
import * as fs from 'fs'
import * as os from 'os'
import { Device, Card, DEFAULT_EAGER_BYTES } from './device'
import { Comm, CommShared } from './comm'
import { finalized, invalidArgType, isMpiError, mpiError, notInitialized, outOfRange } from './errors'
import { bootstrap } from './bootstrap'
import { DEFAULT_TIMEOUT_MS, type InitOptions as LaunchInitOptions } from './launch'
import { Watchdog, watchMsOf } from './watch'
import type { StoreClient, StoreServer } from './store'

/** Options of init(): the launcher's (launch.ts: rank, size, masterAddr, ..., transports) plus the device's. */
export interface InitOptions extends LaunchInitOptions {
  /** Messages up to this many bytes go eagerly (default FASTSOCK_MPI_EAGER_BYTES, else 65536, or 262144 with more ranks on the host than CPUs). */
  eagerThresholdBytes?: number
  /**
   * An uncaught exception or unhandled rejection aborts the whole job (default true, as mpi4py's
   * `mpi4py.run` and MPI_ERRORS_ARE_FATAL): every rank exits non-zero, saying which rank failed
   * and why. False: this rank only crashes (the others see it lost).
   */
  abortOnError?: boolean
  /**
   * A wait longer than this many ms (a receive, a collective, finalize) is reported once on
   * stderr with what the store knows of the ranks waited for (default FASTSOCK_MPI_WATCH_MS, else
   * 10000; 0: no reports). lib/mpi/watch.ts.
   */
  watchMs?: number
}

interface Session {
  world: Comm
  device: Device
  store: StoreClient | null
  server: StoreServer | null
  finalized: boolean
  watch: Watchdog
  /** Resolves when finalize is done (set by finalize). */
  finalizing: Promise<void> | null
  /** Unrefs the connections made since (connectionsRef). */
  unrefTimer?: NodeJS.Timeout
}

/**
 * (Un)refs the device's connections, so that they do not keep the process alive once the program
 * is done (onBeforeExit finalizes; while an operation is pending it holds the loop itself).
 * Connections are made lazily, so init's timer calls this every 200 ms. TODO(device): one line in
 * Device.adopt (`if (this.unrefConnections) sock.unref()`) would replace the timer and the cast.
 */
function connectionsRef (device: Device, ref: boolean): void {
  const conns = (device as unknown as { conns?: Array<{ socket?: { ref?: () => void, unref?: () => void } | null } | null> }).conns ?? []
  for (const c of conns) {
    const sock = c?.socket
    if (sock === null || sock === undefined) continue
    if (ref) sock.ref?.()
    else sock.unref?.()
  }
}

let session: Session | null = null
/** True once finalize() was called: init() and world() then throw ERR_MPI_FINALIZED (MPI allows one init per process). */
let everFinalized = false

/** This host's key: hostname and boot id (same string = same host). */
function hostKey (): string {
  let boot = ''
  try { boot = fs.readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim() } catch {}
  return `${os.hostname()}/${boot}`
}

/**
 * The eager threshold from options or FASTSOCK_MPI_EAGER_BYTES, null when neither sets it;
 * RangeError on a bad value.
 */
function eagerBytesOf (o: InitOptions): number | null {
  const v = o.eagerThresholdBytes ?? (process.env.FASTSOCK_MPI_EAGER_BYTES ? Number(process.env.FASTSOCK_MPI_EAGER_BYTES) : null)
  if (v === null) return null
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > 2 ** 30) throw outOfRange(`eagerThresholdBytes must be an integer in [0, 2^30], got ${String(v)}`)
  return v
}

/**
 * The eager threshold when neither option nor environment sets it, bytes, with more ranks on this
 * host than CPUs: a rendezvous's RTS and CTS each wait for a rank that may be off its CPU, so a
 * message costs a context switch more per hop, which outweighs the extra copy of an unexpected
 * eager one. Measured (P = 4 on 2 vCPUs, `node bench/mpi.js --rounds 1 --only bcast-large`, two
 * runs each way, 2026-11-28): bcast 128 KiB 2.77-3.69x Open MPI at 64 KiB, 0.75-0.79x at
 * 256 KiB; 256 KiB 1.53x against 0.65-0.70x; other sizes and the allreduce within the spread.
 * The sender alone decides (EAGER or RTS): ranks with different thresholds interoperate.
 */
export const OVERSUBSCRIBED_EAGER_BYTES = 256 * 1024

/** The eager threshold this rank uses: `set` if given, else by whether this host is oversubscribed. */
function eagerThreshold (set: number | null, localSize: number): number {
  if (set !== null) return set
  return localSize > os.availableParallelism() ? OVERSUBSCRIBED_EAGER_BYTES : DEFAULT_EAGER_BYTES
}

/**
 * The receive fast path's polling: its window, µs (FASTSOCK_MPI_SPIN_US, else DEFAULT_SPIN_US),
 * and whether its spin yields the CPU between polls (FASTSOCK_MPI_YIELD=1/0, else yes when this
 * host has fewer CPUs than ranks: a spinning rank would otherwise hold the CPU of the rank it
 * waits for until its time slice ends; Open MPI's mpi_yield_when_idle, which mpirun sets when
 * oversubscribed). Measured (P = 4 on 2 vCPUs, `fastsock osu <name> --np 4 -m 8:8`): without
 * spinning (the choice until 2026-11-28; FASTSOCK_MPI_SPIN_US=0) allreduce 72.9 µs, barrier 95.6,
 * bcast 38.6; spinning without yielding (FASTSOCK_MPI_YIELD=0) 397, 345, 207; spinning with
 * sched_yield() 22.7-23.6, 13.8-22.8, 11.7-29.9 (docs/mpi.md, "Polling").
 */
function pollingOf (env: PollingEnv, localSize: number): { spinUs: number, yieldSpin: boolean } {
  return { spinUs: env.spinUs, yieldSpin: env.yieldSpin ?? localSize > os.availableParallelism() }
}

/** FASTSOCK_MPI_SPIN_US and FASTSOCK_MPI_YIELD (null: unset), read before init starts anything. */
interface PollingEnv { spinUs: number, yieldSpin: boolean | null }

/** Reads and checks the polling variables; ERR_OUT_OF_RANGE on a bad value. */
function pollingEnv (): PollingEnv {
  const v = process.env.FASTSOCK_MPI_SPIN_US
  let spinUs = DEFAULT_SPIN_US
  if (v !== undefined && v !== '') {
    spinUs = Number(v)
    if (!(spinUs >= 0 && spinUs <= 1e6)) throw outOfRange(`FASTSOCK_MPI_SPIN_US must be a number of µs in [0, 1e6], got '${v}'`)
  }
  const y = process.env.FASTSOCK_MPI_YIELD
  if (y !== undefined && y !== '' && y !== '0' && y !== '1') throw outOfRange(`FASTSOCK_MPI_YIELD must be 0 or 1, got '${y}'`)
  return { spinUs, yieldSpin: y === '1' ? true : y === '0' ? false : null }
}

/**
 * The default polling window of the fast path, µs: its longest synchronous spin (a wait polls in
 * slices of at most this, up to a learned budget of 25 of them; docs/mpi.md, "Polling").
 */
const DEFAULT_SPIN_US = 200

/**
 * MPI_Init: joins the job and resolves with the world communicator. Rejects with
 * ERR_MPI_INIT_TIMEOUT when the store cannot be reached in `timeoutMs`; throws
 * ERR_INVALID_ARG_TYPE / ERR_OUT_OF_RANGE on bad options. A second call resolves the same world.
 */
export async function init (options: InitOptions = {}): Promise<Comm> {
  if (options === null || typeof options !== 'object') throw invalidArgType('options must be an object')
  if (everFinalized) throw finalized('mpi.init()')
  if (session !== null && !session.finalized) return session.world
  const eagerBytes = eagerBytesOf(options)
  const polling = pollingEnv()
  const watchMs = watchMsOf(options.watchMs)
  if (options.abortOnError !== undefined && typeof options.abortOnError !== 'boolean') throw invalidArgType(`abortOnError must be a boolean, got ${typeof options.abortOnError}`)
  const { eagerThresholdBytes: _e, watchMs: _w, abortOnError: _a, ...launchOptions } = options
  const boot = await bootstrap(launchOptions)
  const info = boot.info
  const b = { rank: info.rank, size: info.size, localRank: info.localRank, localSize: info.localSize, store: boot.store, server: boot.server, localAddress: boot.store?.localAddress ?? '127.0.0.1' }
  const device = new Device({ rank: b.rank, size: b.size, jobId: info.jobId, eagerBytes: eagerThreshold(eagerBytes, b.localSize), ...pollingOf(polling, b.localSize), transports: options.transports, secret: boot.secret })
  const host = hostKey()
  const hosts: string[] = new Array(b.size).fill(host)
  try {
    await join(b, device, hosts, host, options.timeoutMs ?? DEFAULT_TIMEOUT_MS)
  } catch (err) {
    // A failed init leaves nothing open (the process can exit).
    await device.close().catch(() => {})
    await b.store?.close().catch(() => {})
    await b.server?.close({ graceMs: 0 }).catch(() => {})
    throw err
  }
  const shared: CommShared = { device, hosts, maxId: 0 }
  const world = new Comm(shared, Array.from({ length: b.size }, (_, r) => r), 0, b.localRank, b.localSize)
  const watch = new Watchdog(device, b.store, watchMs, r => `fin/${r}`)
  session = { world, device, store: b.store, server: b.server, finalized: false, watch, finalizing: null }
  // The store's handles no longer keep the process alive: a rank whose program is done
  // finalizes by itself ('beforeExit'), as mpi4py's atexit MPI_Finalize.
  b.store?.unref()
  b.server?.unref()
  connectionsRef(device, false)
  session.unrefTimer = setInterval(() => connectionsRef(device, false), 200)
  session.unrefTimer.unref()
  process.on('beforeExit', onBeforeExit)
  if (options.abortOnError !== false) process.on('uncaughtExceptionMonitor', onUncaught)
  return world
}

/** The store part of init: publish this rank's card, read every card, meet every rank, listen for losses and aborts. */
async function join (b: { rank: number, size: number, store: StoreClient | null, localAddress: string }, device: Device, hosts: string[], host: string, timeoutMs: number): Promise<void> {
  if (b.store !== null) {
    const addr = b.localAddress || '127.0.0.1'
    const port = await device.listen(addr)
    const card: Card = { host, addr, port, pid: process.pid }
    await b.store.set(`card/${b.rank}`, JSON.stringify(card))
    const cards = await cardsOf(b.store, b.rank, b.size, timeoutMs)
    // Rank 0 serves the store from its event loop, which a blocking call (recvSync, waitSync)
    // stops: it leaves init only once every other rank has had the last reply of its init, so
    // that no rank still waits on the store when rank 0 may block (docs/mpi.md, "Blocking calls").
    if (b.rank === 0) await b.store.wait(Array.from({ length: b.size - 1 }, (_, i) => `inited/${i + 1}`), { timeoutMs: timeoutMs })
    else await b.store.set(`inited/${b.rank}`, '1')
    device.cards = cards.map(c => JSON.parse(Buffer.from(c).toString()) as Card)
    device.cards.forEach((c, r) => { hosts[r] = c.host })
    b.store.on('rankLost', (r: number) => device.lose(r, 'the store reported it lost'))
    // Another rank called abort(code): the job ends with that code.
    b.store.on('abort', (code: number, from: number, why: string) => abortedBy(b.rank, code, from, why))
    // ... also when it came before these listeners (and so did the losses).
    if (b.store.abortCode !== null) abortedBy(b.rank, b.store.abortCode, b.store.abortFrom?.rank ?? -1, b.store.abortFrom?.why ?? '')
    for (const r of b.store.lostRanks) device.lose(r, 'the store reported it lost')
  }
}

/**
 * Every rank's endpoint card, waiting until `timeoutMs`; ERR_MPI_STORE_TIMEOUT naming the ranks
 * that never joined (published no card) when time runs out.
 */
async function cardsOf (store: StoreClient, me: number, size: number, timeoutMs: number): Promise<Uint8Array[]> {
  try {
    return await Promise.all(Array.from({ length: size }, (_, r) => store.get(`card/${r}`, { timeoutMs })))
  } catch (err) {
    if (!isMpiError(err, 'ERR_MPI_STORE_TIMEOUT')) throw err
    const missing: number[] = []
    for (let r = 0; r < size; r++) if (!await store.check([`card/${r}`]).catch(() => false)) missing.push(r)
    const shown = missing.length > 16 ? `${missing.slice(0, 16).join(', ')}, ... (${missing.length} ranks)` : missing.join(', ')
    throw mpiError('ERR_MPI_STORE_TIMEOUT', `init: rank ${me} waited ${timeoutMs} ms for every rank of ${size}: ${missing.length === 1 ? 'rank' : 'ranks'} ${shown} never joined (did ${missing.length === 1 ? 'it' : 'they'} call mpi.init()?)`,
      { rank: missing[0], cause: err })
  }
}

/** What busy() reads of a device connection (device-conn.ts's Conn). */
interface ConnView { ready: boolean, lost: boolean, departed: boolean, sends: Map<number, unknown>, recvs: Map<number, unknown>, sink: unknown, queued?: unknown[], socket: { writableLength?: number } | null }

/**
 * Work that keeps this rank in its program: posted receives, probes, unfinished sends, store
 * requests, and on any connection a rendezvous in flight (either side), a message being read into
 * its receive, queued or unwritten bytes, or a dial not answered yet. TODO(device): a
 * `Device.pending` count of unfinished requests would replace the casts.
 */
function busy (s: Session): boolean {
  const d = s.device as unknown as { matcher: { anyPosted: boolean, probes: unknown[] }, unfinished?: Set<unknown>, conns?: Array<ConnView | null> }
  if (d.matcher.anyPosted || d.matcher.probes.length > 0 || (d.unfinished?.size ?? 0) > 0 || (s.store?.busy ?? false)) return true
  for (const c of d.conns ?? []) {
    if (c === null || c.lost || c.departed) continue
    if (!c.ready || c.sends.size > 0 || c.recvs.size > 0 || c.sink !== null || (c.queued?.length ?? 0) > 0 || (c.socket?.writableLength ?? 0) > 0) return true
  }
  return false
}

/**
 * The event loop drained: the program is done unless it awaits a message (its connections may
 * not hold the loop open). Busy: look again in 50 ms (this timer keeps the loop alive meanwhile);
 * idle twice in a row, 100 ms apart: finalize, as if the program had called it.
 */
let idleSeen = 0

function onBeforeExit (): void {
  const s = session
  if (s === null || s.finalized) { process.removeListener('beforeExit', onBeforeExit); return }
  if (busy(s)) { idleSeen = 0; setTimeout(() => {}, 50); return }
  // Idle twice, 100 ms apart (bytes in flight on an unref'd connection get that long to show).
  if (idleSeen++ === 0) { setTimeout(() => {}, 100); return }
  finalize().catch(err => { process.stderr.write(`fastsock/mpi: rank ${s.device.rank}: finalize at exit failed: ${String(err)}\n`); process.exitCode = 1 })
}

/**
 * An uncaught exception (or unhandled rejection) in a rank: tell the job (the store relays the
 * abort with this rank and the error's first line to every rank, which exit with status 1), then
 * let Node report it and exit as it does. Synchronous: the abort frame is written at once.
 */
function onUncaught (err: unknown, origin: string): void {
  const s = session
  if (s === null || s.finalized) return
  s.finalized = true
  const first = err instanceof Error ? `${err.name}${(err as { code?: string }).code !== undefined ? ` [${(err as { code?: string }).code as string}]` : ''}: ${err.message}` : String(err)
  const why = `${origin === 'unhandledRejection' ? 'unhandled rejection' : 'uncaught exception'}: ${first.split('\n')[0]}`
  process.stderr.write(`fastsock/mpi: rank ${s.device.rank} failed (${why}); aborting the job\n`)
  if (s.server !== null) s.server.relayAbort(1, s.device.rank, why)
  else if (s.store !== null) s.store.abort(1, why).catch(() => {})
}

/** Another rank aborted the job: say so, exit with its code. */
function abortedBy (me: number, code: number, from: number, why: string): never {
  process.stderr.write(`fastsock/mpi: rank ${me} exits: ${from >= 0 ? `rank ${from}` : 'a client'} aborted the job with code ${code}${why !== '' ? ` (${why})` : ''}\n`)
  process.exit(code === 0 ? 1 : code)
}

/**
 * MPI_Finalize: drains pending sends, tells the store, waits for every rank (but lost ones),
 * closes the connections. Later operations fail. Resolves when done (no-op when not initialized).
 */
export async function finalize (): Promise<void> {
  const s = session
  if (s === null) return
  if (s.finalizing !== null) return await s.finalizing
  if (s.finalized) return
  s.finalized = true
  everFinalized = true
  s.finalizing = finalizeSession(s)
  await s.finalizing
}

async function finalizeSession (s: Session): Promise<void> {
  // Until the end, the store and this timer keep the process alive (init unref'd them).
  const hold = setInterval(() => {}, 1 << 30)
  if (s.unrefTimer !== undefined) clearInterval(s.unrefTimer)
  connectionsRef(s.device, true)
  s.store?.ref()
  s.server?.ref()
  try {
    await s.device.drain()
    const store = s.store
    if (store !== null) {
      const size = s.device.size
      const me = s.device.rank
      try {
        await store.finalizing()
        await store.set(`fin/${me}`, '1')
        // The barrier: every rank's key, except for ranks lost (before or during the wait); the
        // watchdog reports the ranks still awaited after its bound.
        const waiting = new Set<number>()
        for (let r = 0; r < size; r++) if (r !== me) waiting.add(r)
        s.watch.finalizeWaiting = { ranks: waiting, since: Date.now(), reported: false }
        await Promise.all([...waiting].map(async r => {
          if (s.device.lostReason(r) === undefined) await Promise.race([store.wait([`fin/${r}`], { timeoutMs: Infinity }), s.device.untilLost(r)])
          waiting.delete(r)
        }))
      } catch {
        // The store is gone (rank 0 died): nothing left to synchronise with; close locally.
      }
      s.watch.finalizeWaiting = null
      s.watch.stop()
      await s.device.close()
      await store.close()
      // Rank 0 serves the store: it waits for the other ranks to disconnect.
      if (s.server !== null) await s.server.close()
    } else {
      s.watch.stop()
      await s.device.close()
    }
  } finally {
    clearInterval(hold)
    process.removeListener('beforeExit', onBeforeExit)
    process.removeListener('uncaughtExceptionMonitor', onUncaught)
  }
}

/**
 * MPI_Abort: ends the job: the store relays the abort to every rank, each exits with `code`
 * (default 1); this process exits with it at once after (at most 1 s). A rank the relay misses
 * sees this one lost (ERR_MPI_PEER_LOST).
 */
export async function abort (code = 1): Promise<never> {
  if (!Number.isInteger(code)) throw invalidArgType('code must be an integer')
  const store = session?.store
  if (store) {
    // The store relays it to every rank (each exits with `code`); bounded, then exit anyway.
    await Promise.race([store.abort(code, `mpi.abort(${code}) called`).catch(() => {}), new Promise(resolve => setTimeout(resolve, 1000))])
  }
  process.exit(code)
}

/** The world communicator, or throws ERR_MPI_NOT_INITIALIZED. */
export function world (): Comm {
  if (everFinalized) throw finalized('mpi.world()')
  if (session === null || session.finalized) throw notInitialized('mpi.world()')
  return session.world
}
