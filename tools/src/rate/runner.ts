/**
 * One `fastsock rate` run, in Observatory's phases: initialization (peer processes, library,
 * cache size, pinning), connection (every peer listens on every channel; this process connects
 * once per peer and channel), then per cell preparation, warm-up and operation, interleaved
 * across the channels in rounds so that they share the machine's states; then the round-trip
 * percentiles (rtt.ts) and cleanup. Returns a RateResult; report.ts and plot.ts render it.
 *
 * A channel that fails is recorded and left out of the later cells, never the whole run. Every
 * wait is bounded (IPC requests, connects, the per-slice watchdog).
 */
import * as os from 'os'
import * as path from 'path'
import { libraryVersion, loadRungs, type RungInfo } from '../harness/library'
import { connect, labelFor, selectChannels } from '../harness/channels'
import { otherCpuLoad } from '../harness/cpu-load'
import { PeerProcess } from '../harness/peer-process'
import { allowedCpus, onCpu, pinSelf } from '../harness/pinning'
import type { Progress } from '../harness/progress'
import type { ChannelSpec } from '../harness/types'
import { formatBytes } from '../harness/units'
import { flushSize, lastLevelCache } from './cache'
import { mark, since } from './counters'
import { Hub, hubConn, type HubConn } from './hub'
import { directionOf, roles, type CpuReply, type PeerCell } from './protocol'
import { measureRtt } from './rtt'
import { derive, overheadNote } from './summary'
import { DIRECTIONS, type Direction, type RateConfig, type RatePattern, type RateResult, type RateRow } from './types'

/** One cell of the sweep: a pattern (and direction), a size, a number of peers, a cache state. */
export interface Cell {
  pattern: RatePattern
  direction: Direction
  bytes: number
  peers: number
  coldCache: boolean
}

/** The cells of `config`, in the order they are measured (bidirectional: warm only). */
export function cellsOf (config: RateConfig): Cell[] {
  const cells: Cell[] = []
  for (const pattern of config.patterns) {
    const directions = pattern === 'single-direction' ? DIRECTIONS.filter((d) => config.directions.includes(d)) : DIRECTIONS.slice(0, 1)
    for (const single of directions) {
      for (const coldCache of pattern === 'bidirectional' ? [false] : config.coldCache) {
        for (const peers of config.peers) {
          for (const bytes of config.sizes) cells.push({ pattern, direction: directionOf(pattern, single), bytes, peers, coldCache })
        }
      }
    }
  }
  return cells
}

/** `items` starting at index `by` (mod length): each round starts with another channel. */
function rotate<T> (items: T[], by: number): T[] {
  if (items.length === 0) return items
  const k = by % items.length
  return [...items.slice(k), ...items.slice(0, k)]
}

/** Frames sent by verbs endpoints (eager + rendezvous + credit), or null off verbs. */
function framesSent (conns: HubConn[]): number | null {
  let total = 0
  for (const c of conns) {
    const stats = (c.socket as { transportStats?: () => Record<string, unknown> | null }).transportStats?.()
    if (stats == null || typeof stats.eagerSent !== 'number') return null
    total += Number(stats.eagerSent) + Number(stats.rndvSent ?? 0) + Number(stats.creditMessages ?? 0)
  }
  return total
}

/** A channel's open connections (one per peer) and where its rows stand. */
interface Live {
  ch: ChannelSpec
  conns: HubConn[]
  transport: string
  label: string
}

/** What one channel accumulated in one cell. */
interface Tally {
  timedNs: number
  /** Of timedNs, the hub's posting of its sends. */
  postNs: number
  iterations: number
  planned: number
  cpuUs: number
  syscalls: number | null
  frames: number | null
  warmupMs: number
}

const nowMs = (): number => performance.now()

class RateRun {
  readonly result: RateResult
  private peers: PeerProcess[] = []
  private live: Live[] = []
  private readonly hub = new Hub()
  private readonly t0 = nowMs()
  private allowed: number[] = []

  constructor (private readonly config: RateConfig, private readonly progress: Progress) {
    const cpus = os.cpus()
    this.result = {
      tool: 'fastsock rate',
      version: libraryVersion(),
      startedAt: new Date().toISOString(),
      durationMs: 0,
      host: { hostname: os.hostname(), cpus: cpus.length, cpuModel: cpus[0]?.model ?? 'unknown', kernel: `${os.type()} ${os.release()}`, node: process.version, loadAvg1: os.loadavg()[0], otherCpuLoad: NaN },
      config,
      cache: { llcBytes: null, llcSource: '', flushBytes: 0, note: '' },
      pinning: { mode: 'none', hubCpu: null, peerCpus: [], note: '' },
      processes: { peers: Math.max(...config.peers), oversubscribed: Math.max(...config.peers) + 1 > os.availableParallelism() },
      fastsock: { loaded: false, loadError: null, rungs: [] },
      channels: [],
      phases: { initializationMs: 0, connectionMs: 0, preparationMs: 0, warmupMs: 0, operationMs: 0, cleanupMs: 0 },
      rows: [],
      rtt: [],
      targets: [],
      warnings: [],
      errors: []
    }
  }

  warn (message: string): void { this.progress.recordWarning(this.result, message) }

  error (what: string, err: unknown): void { this.progress.recordError(this.result, what, err) }

  async execute (): Promise<RateResult> {
    const { config, result } = this
    const cells = cellsOf(config)
    try {
      await this.initialize()
      const sizes = config.rttIterations > 0 ? config.sizes.length : 0
      this.progress.start(cells.length * result.channels.length + sizes * result.channels.length)
      await this.connectAll()
      if (cells.length > 0) await this.jitWarmup(cells[0])
      for (const cell of cells) await this.measure(cell)
      if (sizes > 0) {
        const peerCpu = result.pinning.peerCpus[0] ?? null
        result.rtt = await measureRtt(result.channels, config, peerCpu, this.progress, (what, err) => this.error(what, err))
      }
    } catch (err) {
      this.error('run', err)
    } finally {
      await this.cleanup()
    }
    this.progress.stop()
    derive(result)
    for (const c of result.channels) {
      if (c.actual !== null && c.kind === 'fastsock' && c.actual !== c.transport) {
        this.warn(`${c.id}: asked for '${c.transport}' but '${c.actual}' ran; its rows are labelled ${labelFor(c, c.actual)}`)
      }
    }
    result.durationMs = nowMs() - this.t0
    return result
  }

  /** Observatory's initialization: load, cache size, pinning, peer processes. */
  private async initialize (): Promise<void> {
    const { config, result } = this
    const t = nowMs()
    result.host.otherCpuLoad = await otherCpuLoad(config.quick ? 100 : 300)
    if (result.host.otherCpuLoad > 0.1) this.warn(`other processes kept the CPUs ${(result.host.otherCpuLoad * 100).toFixed(0)}% busy before the run: figures are disturbed`)
    if (result.processes.oversubscribed) this.warn(`${result.processes.peers} peers + this process on ${os.availableParallelism()} CPUs: processes share CPUs (what the cores allow is ${Math.max(1, os.availableParallelism() - 1)} peer(s))`)
    if (process.env.RDMAVM) this.warn('measured inside the RDMA guest: its CPU is emulated (TCG), compare rows of this run only')
    const { channels, warnings } = selectChannels(config.transports, this.loadRungs(), config.shmPollUs ?? undefined)
    for (const w of warnings) this.warn(w)
    result.channels = channels.map((c) => ({ ...c, actual: null, error: null, connectMs: null, jitWarmupIterations: 0 }))
    const llc = lastLevelCache()
    const flush = flushSize(config.cacheBytes, llc.bytes, config.maxCacheBytes)
    result.cache = { llcBytes: llc.bytes, llcSource: llc.source, flushBytes: flush.bytes, note: flush.note }
    this.pin()
    const script = path.join(__dirname, 'peer.js')
    this.peers = await Promise.all(result.pinning.peerCpus.map(async (cpu) => await PeerProcess.start(script, 10_000, cpu)))
    result.phases.initializationMs = nowMs() - t
  }

  private loadRungs (): RungInfo[] | null {
    return loadRungs(this.result.fastsock, (m) => this.warn(m))
  }

  /**
   * split: this process on the first allowed CPU, peer i on the (i+1)-th (mod the CPUs), with
   * util-linux taskset as `fastsock pipe` does; none: the scheduler places them.
   */
  private pin (): void {
    const n = this.result.processes.peers
    const none = (note: string): void => { this.result.pinning = { mode: 'none', hubCpu: null, peerCpus: new Array(n).fill(null), note } }
    this.allowed = allowedCpus()
    if (this.config.pin === 'none') return none('not pinned (pin: none): the scheduler places the processes')
    if (onCpu(0).length === 0) return none('not pinned: taskset (util-linux) not found')
    if (this.allowed.length < 2) return none(`not pinned: only ${this.allowed.length} CPU available`)
    const cpus = this.allowed
    const peerCpus = Array.from({ length: n }, (_x, i) => cpus[(i + 1) % cpus.length])
    try {
      pinSelf([cpus[0]])
      this.result.pinning = { mode: 'split', hubCpu: cpus[0], peerCpus, note: `pinned: measuring process on CPU ${cpus[0]}, peers on CPUs ${peerCpus.join(', ')}` }
    } catch (err) {
      none(`not pinned: taskset failed (${(err as Error).message})`)
      this.warn(this.result.pinning.note)
    }
  }

  /** Observatory's connection phase: every peer listens on every channel; one connection each. */
  private async connectAll (): Promise<void> {
    const t = nowMs()
    for (const entry of this.result.channels) {
      const { actual: _a, error: _e, connectMs: _c, ...ch } = entry
      const conns: HubConn[] = []
      const tc = nowMs()
      try {
        let transport: string | null = null
        for (const peer of this.peers) {
          const { address } = await peer.request<{ ok: true, address: Parameters<typeof connect>[1] }>({ cmd: 'listen', channel: ch })
          const c = await connect(ch, address, this.config.timeoutMs)
          conns.push(hubConn(c.socket))
          if (transport !== null && transport !== c.transport) this.warn(`${ch.id}: peers connected over '${transport}' and '${c.transport}'`)
          transport ??= c.transport
        }
        entry.actual = transport
        entry.connectMs = nowMs() - tc
        this.live.push({ ch, conns, transport: transport ?? 'unknown', label: labelFor(ch, transport ?? 'unknown') })
      } catch (err) {
        for (const c of conns) c.socket.destroy()
        entry.error = (err as Error).message
        this.error(`${ch.id} connect`, err)
      }
    }
    this.result.phases.connectionMs = nowMs() - t
  }

  /** Takes a channel out of the run after `err` (its streams' state is unknown now). */
  private drop (l: Live, what: string, err: unknown): void {
    this.live = this.live.filter((x) => x !== l)
    for (const c of l.conns) c.socket.destroy()
    const entry = this.result.channels.find((c) => c.id === l.ch.id)
    if (entry !== undefined) entry.error ??= (err as Error)?.message ?? String(err)
    this.error(`${l.ch.id} ${what}`, err)
  }

  /** What the peers and this process run for `cell`: one window per iteration (bidirectional: a long run). */
  private peerCell (cell: Cell): PeerCell {
    const { config } = this
    return {
      pattern: cell.pattern,
      direction: cell.direction,
      bytes: cell.bytes,
      messages: cell.pattern === 'bidirectional' ? config.bidirectionalMessages : config.window,
      window: config.window,
      coldCache: cell.coldCache,
      cacheBytes: this.result.cache.flushBytes
    }
  }

  /** Configures `peers` and this process's send buffers for `cell`. */
  private async prepareCell (cell: PeerCell, peers: PeerProcess[]): Promise<void> {
    await Promise.all(peers.map(async (p) => await p.request({ cmd: 'cell', cell })))
    this.hub.prepare(cell)
  }

  /**
   * The run's warm-up: `jitWarmupMs` of untimed iterations per channel, of the first cell's
   * pattern (warm, with every peer process), cycling through every message size of the run.
   * V8 compiles the data path (the stream core, the writes, the counting) only after some
   * thousands of calls, and recompiles a function when a later cell takes a branch it has not
   * seen (a larger message, another way through the writev); without this the first cells of
   * each size time the interpreter, on some channels more than others, and the compiler's
   * threads share the pinned CPUs.
   */
  private async jitWarmup (first: Cell): Promise<void> {
    const { config, result } = this
    if (config.jitWarmupMs <= 0) return
    const t = nowMs()
    const pairwise = first.pattern === 'pair-based'
    const perSize = config.jitWarmupMs / config.sizes.length
    for (const bytes of config.sizes) {
      // One window per iteration, also for bidirectional (its long runs are for the timing).
      const cell = { ...this.peerCell({ ...first, bytes, coldCache: false }), messages: config.window }
      // Every peer process, also those only the later cells use (each compiles its own code).
      await this.prepareCell(cell, this.peers)
      for (const l of [...this.live]) {
        this.progress.step(`JIT warm-up: ${l.label}, ${formatBytes(bytes)}`)
        const entry = result.channels.find((c) => c.id === l.ch.id)
        const until = nowMs() + perSize
        try {
          do {
            await this.hub.run(l.conns, 10, pairwise, config.timeoutMs)
            if (entry !== undefined) entry.jitWarmupIterations += 10
          } while (nowMs() < until)
        } catch (err) {
          this.drop(l, 'JIT warm-up', err)
        }
      }
    }
    result.phases.warmupMs += nowMs() - t
  }

  /** Preparation, warm-up and the interleaved operation of one cell on every live channel. */
  private async measure (cell: Cell): Promise<void> {
    const { config, result } = this
    const name = `${cell.pattern}${cell.direction === 'both' ? '' : ` ${cell.direction}`} ${formatBytes(cell.bytes)} × ${cell.peers} peer${cell.peers > 1 ? 's' : ''}${cell.coldCache ? ' cold' : ''}`
    const channels = [...this.live]
    const bidirectional = cell.pattern === 'bidirectional'
    const peerCell = this.peerCell(cell)
    const pairwise = cell.pattern === 'pair-based'
    const peers = this.peers.slice(0, cell.peers)
    const t = nowMs()
    await this.prepareCell(peerCell, peers)
    const preparationMs = nowMs() - t
    result.phases.preparationMs += preparationMs

    const tallies = new Map<Live, Tally>()
    for (const l of channels) {
      this.progress.step(`${name}: ${l.label} warm-up`)
      const tw = nowMs()
      try {
        const conns = l.conns.slice(0, cell.peers)
        const warmups = Math.max(bidirectional ? 1 : 0, config.warmupIterations)
        const ns = warmups === 0 ? 0 : (await this.hub.run(conns, warmups, pairwise, config.timeoutMs)).timedNs
        const perIterationNs = warmups === 0 ? 0 : ns / warmups
        const min = bidirectional ? 1 : config.minIterations
        const planned = cell.coldCache
          ? config.coldIterations
          : perIterationNs <= 0 ? config.iterations : Math.max(min, Math.min(config.iterations, Math.round(config.budgetMs * 1e6 / perIterationNs)))
        const warmupMs = nowMs() - tw
        result.phases.warmupMs += warmupMs
        tallies.set(l, { timedNs: 0, postNs: 0, iterations: 0, planned, cpuUs: 0, syscalls: 0, frames: 0, warmupMs })
      } catch (err) {
        this.drop(l, `${name} warm-up`, err)
      }
    }

    const rounds = Math.max(1, config.rounds)
    for (let round = 0; round < rounds; round++) {
      for (const l of rotate(channels, round)) {
        const tally = tallies.get(l)
        if (tally === undefined || !this.live.includes(l)) continue
        const n = Math.ceil(tally.planned / rounds)
        this.progress.step(`${name}, round ${round + 1}/${rounds}: ${l.label}`)
        try {
          const conns = l.conns.slice(0, cell.peers)
          await Promise.all(peers.map(async (p) => await p.request({ cmd: 'cpu-mark' })))
          const frames0 = framesSent(conns)
          const m = mark()
          const ts = nowMs()
          const { timedNs, postNs } = await this.hub.run(conns, n, pairwise, config.timeoutMs)
          const wallMs = nowMs() - ts
          const own = since(m)
          const frames1 = framesSent(conns)
          const reads = await Promise.all(peers.map(async (p) => await p.request<CpuReply>({ cmd: 'cpu-read' })))
          tally.timedNs += timedNs
          tally.postNs += postNs
          tally.iterations += n
          tally.cpuUs += own.cpuUs + reads.reduce((a, r) => a + r.cpuUs, 0)
          tally.syscalls = tally.syscalls === null || own.syscalls === null || reads.some((r) => r.syscalls === null)
            ? null
            : tally.syscalls + own.syscalls + reads.reduce((a, r) => a + (r.syscalls as number), 0)
          tally.frames = tally.frames === null || frames0 === null || frames1 === null ? null : tally.frames + frames1 - frames0
          result.phases.operationMs += timedNs / 1e6
          result.phases.preparationMs += Math.max(0, wallMs - timedNs / 1e6) // barriers and cache flushes
        } catch (err) {
          tallies.delete(l)
          this.drop(l, name, err)
        }
      }
    }

    for (const l of channels) {
      const tally = tallies.get(l)
      if (tally === undefined || tally.iterations === 0 || tally.timedNs <= 0) continue
      result.rows.push(this.row(l, cell, peerCell, tally, preparationMs))
    }
    for (let i = 0; i < channels.length; i++) this.progress.tick()
  }

  private row (l: Live, cell: Cell, peerCell: PeerCell, tally: Tally, preparationMs: number): RateRow {
    const perDirection = cell.peers * peerCell.messages * tally.iterations
    const delivered = cell.direction === 'both' ? 2 * perDirection : perDirection
    const seconds = tally.timedNs / 1e9
    return {
      channel: l.ch.id,
      transport: l.transport,
      label: l.label,
      pattern: cell.pattern,
      direction: cell.direction,
      bytes: cell.bytes,
      peers: cell.peers,
      window: peerCell.window,
      coldCache: cell.coldCache,
      iterations: tally.iterations,
      messages: 2 * delivered,
      delivered,
      elapsedMs: tally.timedNs / 1e6,
      msgPerSec: (2 * delivered) / seconds,
      deliveredPerSec: delivered / seconds,
      mbPerSec: (delivered * cell.bytes) / seconds / 1e6,
      cpuUsPerMsg: tally.cpuUs / delivered,
      postUsPerMsg: roles(cell.direction).hubSends ? tally.postNs / 1e3 / (cell.peers * peerCell.messages * tally.iterations) : null,
      postShare: tally.postNs / tally.timedNs,
      overhead: {
        syscallsPerMsg: tally.syscalls === null ? null : tally.syscalls / delivered,
        framesPerMsg: tally.frames === null ? null : tally.frames / delivered,
        note: overheadNote(l.transport, l.ch.kind)
      },
      ratioVsNetTcp: null,
      coldOverWarm: null,
      preparationMs,
      warmupMs: tally.warmupMs
    }
  }

  /** Observatory's cleanup: close every connection, stop the peers, give the CPUs back. */
  private async cleanup (): Promise<void> {
    const t = nowMs()
    for (const l of this.live) for (const c of l.conns) c.socket.destroy()
    this.live = []
    await Promise.all(this.peers.map(async (p) => await p.stop()))
    this.peers = []
    if (this.result.pinning.hubCpu !== null) {
      try { pinSelf(this.allowed) } catch { /* the process ends soon anyway */ }
    }
    this.result.phases.cleanupMs = nowMs() - t
  }
}

/** Runs `fastsock rate` with `config`; progress is drawn on stderr by `progress`. */
export async function runRate (config: RateConfig, progress: Progress): Promise<RateResult> {
  return await new RateRun(config, progress).execute()
}
