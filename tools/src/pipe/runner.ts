/**
 * One `fastsock pipe` run: native limits and the placement probe, then a peer process, then per
 * mode and channel the measurements (ping-pong, stream, typed arrays), then NPtcp, the fits and
 * the headline ratios. Returns everything as a PipeResult; report.ts and plot.ts render it.
 *
 * Cells fail one by one (recorded in `errors`), never the whole run: a broken rung must not hide
 * the others. Every wait is bounded (connect, IPC, watchdogs), so a run always ends.
 */
import type { Socket } from 'net'
import * as os from 'os'
import { libraryVersion, loadRungs, type RungInfo } from '../harness/library'
import { connect, labelFor, selectChannels, type ChannelAddress } from '../harness/channels'
import { ELEMENT_TYPES } from './codecs'
import { Peer } from './control'
import { otherCpuLoad } from '../harness/cpu-load'
import { which } from '../harness/children'
import { floors, floorsUnavailable, measureMemcpy, nativeState, runNptcp } from './limits'
import { probePlacementIsolated } from './placement'
import { pinSelf, planPinning } from '../harness/pinning'
import { PingPongClient } from '../harness/pingpong'
import type { Progress } from '../harness/progress'
import { quantilesUs } from '../harness/stats'
import { fitAll, headline, typedSpeedups } from './summary'
import { StreamClient } from './stream'
import { runTyped } from './typed'
import type {
  ChannelSpec, PipeOptions, PipeResult, RowBase, StreamRow, TypedMethod, TypedRow
} from './types'
import { formatBytes, gbitPerSec, mbPerSec } from '../harness/units'

/** A channel's open connection during one mode. */
interface Live<C> {
  ch: ChannelSpec
  base: RowBase
  socket: Socket
  client: C
  /** CPU time (user + sys) of the timed runs of the current size, µs. */
  cpuClientUs: number
  cpuServerUs: number
  failed: boolean
}

/** `items` starting at index `by` (mod length): each round starts with another channel. */
function rotate<T> (items: T[], by: number): T[] {
  if (items.length === 0) return items
  const k = by % items.length
  return [...items.slice(k), ...items.slice(0, k)]
}

/** Methods typed mode runs over Node `net` TCP: what a Node user does today. */
const BASELINE_METHODS: TypedMethod[] = ['raw', 'v8', 'json']
const NET_TCP: ChannelSpec = { id: 'net:tcp', kind: 'net', transport: 'tcp' }

/** User + system CPU time since `since`, µs. */
function cpuSinceUs (since: NodeJS.CpuUsage): number {
  const d = process.cpuUsage(since)
  return d.user + d.system
}

/** Rejects after `ms` unless `promise` settled: the outer bound of one cell. */
async function bounded<T> (promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: gave up after ${ms} ms`)), ms)
  })
  try {
    return await Promise.race([promise, timeout])
  } finally {
    clearTimeout(timer)
  }
}

class Run {
  readonly result: PipeResult
  private peer: Peer | null = null
  private readonly addresses = new Map<string, ChannelAddress>()
  private readonly memcpyNs = new Map<number, number>()
  /** Channels that stalled in the current mode: its later cells skip them (a timeout each otherwise). */
  private readonly broken = new Map<string, string>()
  private readonly t0 = Date.now()

  constructor (private readonly opts: PipeOptions, private readonly progress: Progress) {
    const cpus = os.cpus()
    this.result = {
      tool: 'fastsock pipe',
      version: libraryVersion(),
      startedAt: new Date().toISOString(),
      durationMs: 0,
      host: { hostname: os.hostname(), cpus: cpus.length, cpuModel: cpus[0]?.model ?? 'unknown', kernel: `${os.type()} ${os.release()}`, node: process.version, loadAvg1: os.loadavg()[0], otherCpuLoad: NaN },
      options: opts,
      native: { ...nativeState(), spinHalfRttNs: null, memcpy: [] },
      placement: { before: null, after: null },
      pinning: { requested: opts.pin, mode: 'none', selfCpu: null, peerCpu: null, note: '' },
      fastsock: { loaded: false, loadError: null, rungs: [] },
      channels: [],
      pingpong: [],
      fits: [],
      stream: [],
      typed: [],
      nptcp: { ran: false, note: '', repeats: 0, rows: [] },
      headline: [],
      warnings: [],
      errors: []
    }
  }

  warn (message: string): void { this.progress.recordWarning(this.result, message) }

  error (what: string, err: unknown): void { this.progress.recordError(this.result, what, err) }

  async execute (): Promise<PipeResult> {
    const { opts, result } = this
    // Native limits first, while the machine is quiet (no peer yet).
    result.placement.before = await probePlacementIsolated()
    // The floor is a lower bound: the best of the probe's runs (the median tells the placement).
    result.native.spinHalfRttNs = result.placement.before === null ? null : Math.min(...result.placement.before.runsNs)
    result.host.otherCpuLoad = await otherCpuLoad()
    if (result.host.otherCpuLoad > 0.1) this.warn(`other processes kept the CPUs ${(result.host.otherCpuLoad * 100).toFixed(0)}% busy before the run: figures are disturbed`)
    if (result.placement.before?.state === 'busy') this.warn('the busy-poll probe was preempted: other processes use the CPUs, figures are disturbed')
    result.native.memcpy = measureMemcpy([...opts.sizes, ...opts.streamSizes, ...opts.typedBytes])
    for (const m of result.native.memcpy) this.memcpyNs.set(m.bytes, m.ns)
    if (floors() === null) this.warn(`${floorsUnavailable() ?? 'no native floors'}: no memcpy or busy-poll limits`)

    const rungs = this.loadRungs()
    const { channels, warnings } = selectChannels(opts.transports, rungs, opts.shmPollUs)
    for (const w of warnings) this.warn(w)
    if (process.env.RDMAVM) this.warn('measured inside the RDMA guest (../shared/tools/rdma-vm): its CPU is emulated (TCG), so these figures are for comparing rows of this run only, not real RDMA performance')
    result.channels = channels.map((c) => ({ ...c, actual: null, error: null }))
    const fastChannels = channels.filter((c) => c.kind === 'fastsock')

    const nptcpExe = this.nptcpPlan()
    this.progress.start(
      (opts.modes.includes('pingpong') ? channels.length * opts.sizes.length : 0) +
      (opts.modes.includes('stream') ? channels.length * opts.streamSizes.length : 0) +
      (opts.modes.includes('typed') ? opts.typedTypes.length * opts.typedBytes.length * (fastChannels.length + BASELINE_METHODS.length) : 0) +
      (nptcpExe !== null ? 1 : 0))

    this.pin()
    try {
      this.peer = await Peer.startPipe(10_000, result.pinning.peerCpu)
      if (opts.modes.includes('pingpong')) await this.section(channels.length * opts.sizes.length, async () => await this.pingpongAll(channels))
      if (opts.modes.includes('stream')) await this.section(channels.length * opts.streamSizes.length, async () => await this.streamAll(channels))
      if (opts.modes.includes('typed')) {
        const cells = opts.typedTypes.length * opts.typedBytes.length * (fastChannels.length + BASELINE_METHODS.length)
        await this.section(cells, async () => await this.typed(fastChannels))
      }
    } catch (err) {
      this.error('peer', err)
    } finally {
      await this.peer?.stop()
      this.peer = null
    }

    if (nptcpExe !== null) await this.nptcp(nptcpExe)
    this.unpin()
    // In a fresh process: this one's GC and compiler threads would read as a far placement.
    result.placement.after = await probePlacementIsolated()
    this.progress.stop()
    if (result.placement.before !== null && result.placement.after !== null &&
        result.placement.before.state !== result.placement.after.state && result.placement.after.state !== 'busy') {
      this.warn(`cross-core placement changed during the run: ${result.placement.before.state} → ${result.placement.after.state}`)
    }
    result.fits = fitAll(result.pingpong)
    result.headline = headline(result.pingpong, result.stream)
    for (const [i, ch] of channels.entries()) {
      const actual = result.channels[i].actual
      if (actual !== null && ch.kind === 'fastsock' && actual !== ch.transport) {
        this.warn(`${ch.id}: asked for '${ch.transport}' but '${actual}' ran; its rows are labelled ${labelFor(ch, actual)}`)
      }
    }
    result.durationMs = Date.now() - this.t0
    return result
  }

  /** Pins this process (the peer is pinned when forked) as planned; falls back to none. */
  private pin (): void {
    const plan = planPinning(this.opts.pin)
    this.allowedCpus = plan.allowed
    const { requested, mode, selfCpu, peerCpu, note } = plan
    this.result.pinning = { requested, mode, selfCpu, peerCpu, note }
    if (selfCpu === null) {
      if (this.opts.pin !== 'none') this.warn(note)
      return
    }
    try {
      pinSelf([selfCpu])
    } catch (err) {
      this.result.pinning = { requested, mode: 'none', selfCpu: null, peerCpu: null, note: `not pinned: taskset failed (${(err as Error).message})` }
      this.warn(this.result.pinning.note)
    }
  }

  private allowedCpus: number[] = []

  /** Gives this process its CPUs back (the placement probe after the run needs two). */
  private unpin (): void {
    if (this.result.pinning.selfCpu === null) return
    try { pinSelf(this.allowedCpus) } catch { /* the probe then reports unknown */ }
  }

  private loadRungs (): RungInfo[] | null {
    return loadRungs(this.result.fastsock, (m) => this.warn(m))
  }

  /** NPtcp's path when it should run, else null (with the reason in result.nptcp.note). */
  private nptcpPlan (): string | null {
    const { opts, result } = this
    if (opts.nptcp === false) { result.nptcp.note = 'not run (--no-nptcp)'; return null }
    if (!opts.modes.includes('pingpong')) { result.nptcp.note = 'not run (ping-pong mode not selected)'; return null }
    const exe = which('NPtcp')
    if (exe === null) { result.nptcp.note = 'NPtcp not found on PATH (Debian: apt-get install netpipe-tcp); skipped'; return null }
    if (opts.nptcp === null && opts.quick) { result.nptcp.note = 'not run with --quick (pass --nptcp to force)'; return null }
    return exe
  }

  /** Runs one mode; whatever happens, its `cells` count as done for the progress bar. */
  private async section (cells: number, body: () => Promise<void>): Promise<void> {
    const before = this.progressCount
    // A channel that stalled in one mode gets another chance in the next (a stall under
    // streaming says little about a ping-pong of arrays); within a mode it is skipped.
    this.broken.clear()
    try {
      await body()
    } finally {
      while (this.progressCount < before + cells) this.tick()
    }
  }

  /**
   * Records the channel's first error; a failure that cost a timeout (a stall) also makes the
   * channel's later cells in this mode be skipped, so a dead rung costs one timeout per mode.
   */
  private markBroken (ch: ChannelSpec, err: unknown): void {
    const message = (err as Error)?.message ?? String(err)
    const entry = this.result.channels.find((c) => c.id === ch.id)
    if (entry !== undefined && entry.error === null) entry.error = message
    if (/stalled|no reply|not acked|timed out|gave up/.test(message)) this.broken.set(ch.id, message)
  }

  /** True (with a warning) when `ch` failed before and `what` is skipped. */
  private skipBroken (ch: ChannelSpec, what: string): boolean {
    const reason = this.broken.get(ch.id)
    if (reason === undefined) return false
    this.warn(`${ch.id} ${what}: skipped, the channel failed earlier (${reason})`)
    return true
  }

  private progressCount = 0
  private tick (): void {
    this.progressCount++
    this.progress.tick()
  }

  private async address (ch: ChannelSpec): Promise<ChannelAddress> {
    let a = this.addresses.get(ch.id)
    if (a === undefined) {
      a = await (this.peer as Peer).listen(ch)
      this.addresses.set(ch.id, a)
    }
    return a
  }

  /** Connects and records which transport actually ran. */
  private async open (ch: ChannelSpec, address: ChannelAddress): Promise<{ socket: Socket, base: RowBase }> {
    const { socket, transport } = await connect(ch, address, this.opts.timeoutMs)
    const entry = this.result.channels.find((c) => c.id === ch.id)
    if (entry !== undefined) {
      if (entry.actual !== null && entry.actual !== transport) this.warn(`${ch.id}: connected over '${transport}' this time, '${entry.actual}' before`)
      entry.actual ??= transport
    }
    return { socket, base: { channel: ch.id, transport, label: labelFor(ch, transport) } }
  }

  private memcpy (bytes: number): { memcpyNs: number | null, memcpyMbPerSec: number | null } {
    const ns = this.memcpyNs.get(bytes)
    return ns === undefined ? { memcpyNs: null, memcpyMbPerSec: null } : { memcpyNs: ns, memcpyMbPerSec: mbPerSec(bytes, ns) }
  }

  /**
   * Opens one connection per channel (skipping channels that stalled before) with `make` and
   * returns those that connected; failures are recorded.
   */
  private async openAll<C> (channels: ChannelSpec[], what: string, make: (socket: Socket, base: RowBase) => Promise<C>): Promise<Array<Live<C>>> {
    const live: Array<Live<C>> = []
    for (const ch of channels) {
      if (this.skipBroken(ch, what)) continue
      let socket: Socket | null = null
      try {
        const opened = await this.open(ch, await this.address(ch))
        socket = opened.socket
        live.push({ ch, base: opened.base, socket, client: await make(socket, opened.base), cpuClientUs: 0, cpuServerUs: 0, failed: false })
      } catch (err) {
        socket?.destroy()
        this.error(`${ch.id} ${what}`, err)
        this.markBroken(ch, err)
      }
    }
    return live
  }

  /** Takes a channel out of the current mode after `err`. */
  private drop (l: Live<unknown>, what: string, err: unknown): void {
    l.failed = true
    l.socket.destroy()
    this.error(`${l.ch.id} ${what}`, err)
    this.markBroken(l.ch, err)
  }

  /**
   * Ping-pong over every channel. Sizes go up one by one; at each size every channel gets the
   * same number of slices of the time budget, in rotating order, so that all channels sample
   * the same machine states (on a VM they drift within a second).
   */
  private async pingpongAll (channels: ChannelSpec[]): Promise<void> {
    const { opts } = this
    const peer = this.peer as Peer
    const maxBytes = Math.max(...opts.sizes)
    const rounds = Math.max(1, opts.rounds)
    await peer.configure({ mode: 'pingpong', bytes: 1 })
    const live = await this.openAll(channels, 'ping-pong', async (socket, base) => {
      const client = new PingPongClient(socket, maxBytes, opts.maxIters)
      this.progress.step(`${base.label} warm-up`)
      // JIT and connection warm-up (JFS: 10,000 round trips), bounded in time.
      await client.run(1, { budgetNs: BigInt(opts.warmupMs) * 1_000_000n, minIters: 1, maxIters: opts.warmupIters }, opts.timeoutMs, false)
      return client
    })
    const slice = {
      budgetNs: BigInt(Math.round(opts.budgetMs * 1e6 / rounds)),
      minIters: Math.ceil(opts.minIters / rounds),
      maxIters: Math.ceil(opts.maxIters / rounds)
    }
    try {
      for (const bytes of opts.sizes) {
        await peer.configure({ mode: 'pingpong', bytes })
        for (const l of live.filter((x) => !x.failed)) {
          l.client.reset()
          l.cpuClientUs = l.cpuServerUs = 0
          // A few untimed round trips at this size (buffers, socket windows).
          try {
            await l.client.run(bytes, { budgetNs: slice.budgetNs / 10n, minIters: 2, maxIters: 50 }, opts.timeoutMs, false)
          } catch (err) {
            this.drop(l, `ping-pong ${formatBytes(bytes)}`, err)
          }
        }
        for (let round = 0; round < rounds; round++) {
          for (const l of rotate(live, round)) {
            if (l.failed) continue
            this.progress.step(`ping-pong ${formatBytes(bytes)}, round ${round + 1}/${rounds}: ${l.base.label}`)
            try {
              await peer.cpuMark()
              const cpu0 = process.cpuUsage()
              await l.client.run(bytes, slice, opts.timeoutMs)
              l.cpuClientUs += cpuSinceUs(cpu0)
              l.cpuServerUs += await peer.cpuRead()
            } catch (err) {
              this.drop(l, `ping-pong ${formatBytes(bytes)}`, err)
            }
          }
        }
        for (const l of live) {
          if (l.failed || l.client.count === 0) continue
          const count = l.client.count
          const halfRttUs = quantilesUs(l.client.samplesNs, count, 0.5)
          this.result.pingpong.push({
            ...l.base,
            bytes,
            iterations: count,
            halfRttUs,
            mbPerSec: mbPerSec(bytes, halfRttUs.median * 1e3),
            gbitPerSec: gbitPerSec(bytes, halfRttUs.median * 1e3),
            cpuUsPerMsg: (l.cpuClientUs + l.cpuServerUs) / (2 * count),
            cpuClientUs: l.cpuClientUs,
            cpuServerUs: l.cpuServerUs,
            ...this.memcpy(bytes)
          })
        }
        for (let i = 0; i < channels.length; i++) this.tick()
      }
    } finally {
      for (const l of live) l.socket.destroy()
    }
  }

  /**
   * Streaming bandwidth over every channel: per size, a calibration run per channel, then
   * `rounds` timed runs per channel in rotating order, pooled (bytes / time).
   */
  private async streamAll (channels: ChannelSpec[]): Promise<void> {
    const { opts } = this
    const peer = this.peer as Peer
    const rounds = Math.max(1, opts.rounds)
    const timeoutMs = opts.timeoutMs + 4 * opts.streamMs
    await peer.configure({ mode: 'stream', expectBytes: 0 })
    const maxBytes = Math.max(...opts.streamSizes)
    const live = await this.openAll(channels, 'stream', async (socket) => new StreamClient(socket, maxBytes))
    try {
      for (const bytes of opts.streamSizes) {
        const perRound = new Map<Live<StreamClient>, number>()
        const totals = new Map<Live<StreamClient>, { ns: number, messages: number }>()
        for (const l of live.filter((x) => !x.failed)) {
          this.progress.step(`stream ${formatBytes(bytes)}, calibration: ${l.base.label}`)
          try {
            // Calibration (and warm-up): ~256 KiB worth of writes sizes the timed runs.
            const probeMessages = Math.min(100_000, Math.max(8, Math.ceil(256 * 1024 / bytes)))
            await peer.configure({ mode: 'stream', expectBytes: probeMessages * bytes })
            const probeNs = await l.client.run(bytes, probeMessages, timeoutMs)
            perRound.set(l, Math.min(5_000_000, Math.max(4, Math.round(probeMessages * opts.streamMs * 1e6 / rounds / probeNs))))
            totals.set(l, { ns: 0, messages: 0 })
            l.cpuClientUs = l.cpuServerUs = 0
          } catch (err) {
            this.drop(l, `stream ${formatBytes(bytes)}`, err)
          }
        }
        for (let round = 0; round < rounds; round++) {
          for (const l of rotate(live, round)) {
            const messages = perRound.get(l)
            const total = totals.get(l)
            if (l.failed || messages === undefined || total === undefined) continue
            this.progress.step(`stream ${formatBytes(bytes)}, round ${round + 1}/${rounds}: ${l.base.label}`)
            try {
              await peer.configure({ mode: 'stream', expectBytes: messages * bytes })
              await peer.cpuMark()
              const cpu0 = process.cpuUsage()
              total.ns += await l.client.run(bytes, messages, timeoutMs)
              total.messages += messages
              l.cpuClientUs += cpuSinceUs(cpu0)
              l.cpuServerUs += await peer.cpuRead()
            } catch (err) {
              this.drop(l, `stream ${formatBytes(bytes)}`, err)
            }
          }
        }
        for (const l of live) {
          const total = totals.get(l)
          if (l.failed || total === undefined || total.messages === 0) continue
          const row: StreamRow = {
            ...l.base,
            bytes,
            messages: total.messages,
            elapsedMs: total.ns / 1e6,
            rounds,
            mbPerSec: mbPerSec(bytes * total.messages, total.ns),
            gbitPerSec: gbitPerSec(bytes * total.messages, total.ns),
            msgPerSec: total.messages / (total.ns / 1e9),
            cpuUsPerMsg: (l.cpuClientUs + l.cpuServerUs) / total.messages
          }
          this.result.stream.push(row)
        }
        for (let i = 0; i < channels.length; i++) this.tick()
      }
    } finally {
      for (const l of live) l.socket.destroy()
    }
  }

  private async typed (fastChannels: ChannelSpec[]): Promise<void> {
    const { opts } = this
    const peer = this.peer as Peer
    const plan: Array<{ ch: ChannelSpec, method: TypedMethod }> = [
      ...fastChannels.map((ch) => ({ ch, method: 'fastsock' as TypedMethod })),
      ...BASELINE_METHODS.map((method) => ({ ch: NET_TCP, method }))
    ]
    const skipped = new Set<string>()
    for (const elementType of opts.typedTypes) {
      for (const bytes of opts.typedBytes) {
        const elements = Math.floor(bytes / ELEMENT_TYPES[elementType].BYTES_PER_ELEMENT)
        const rows: TypedRow[] = []
        if (elements < 1) {
          this.warn(`typed ${elementType} ${formatBytes(bytes)}: smaller than one element, skipped`)
          for (let i = 0; i < plan.length; i++) this.tick()
          continue
        }
        for (const { ch, method } of plan) {
          const what = `${ch.id} ${method} ${elementType} ${formatBytes(bytes)}`
          this.progress.step(what)
          if (ch.kind === 'fastsock' && this.broken.has(ch.id)) {
            if (!skipped.has(ch.id)) this.skipBroken(ch, 'typed')
            skipped.add(ch.id)
            this.tick()
            continue
          }
          try {
            await peer.configure({ mode: 'typed', method, elementType, elements })
            const { socket, base } = await this.open(ch, await this.address(ch))
            try {
              let cpu0 = process.cpuUsage()
              const run = await bounded(runTyped(socket, method, elementType, elements, {
                budgetMs: opts.typedMs,
                minIters: opts.typedMinIters,
                maxIters: 5000,
                warmup: opts.quick ? 3 : 20,
                stallMs: opts.timeoutMs,
                onTimedStart: async () => { await peer.cpuMark(); cpu0 = process.cpuUsage() }
              }), opts.timeoutMs * 3 + opts.typedMs * 4, what)
              const cpuUs = cpuSinceUs(cpu0) + await peer.cpuRead()
              const perArrayUs = quantilesUs(run.samplesNs, run.count, 0.5)
              rows.push({
                ...base,
                label: method === 'fastsock' ? `${base.label} direct` : `${base.label} ${method}`,
                method,
                elementType,
                elements,
                bytes: elements * ELEMENT_TYPES[elementType].BYTES_PER_ELEMENT,
                iterations: run.count,
                perArrayUs,
                mbPerSec: mbPerSec(bytes, perArrayUs.median * 1e3),
                speedupVsJson: null,
                speedupVsV8: null,
                cpuUsPerArray: cpuUs / (2 * run.count)
              })
            } finally {
              socket.destroy()
            }
          } catch (err) {
            this.error(what, err)
            if (ch.kind === 'fastsock') this.markBroken(ch, err)
          }
          this.tick()
        }
        typedSpeedups(rows)
        this.result.typed.push(...rows)
      }
    }
  }

  private async nptcp (exe: string): Promise<void> {
    const { opts, result } = this
    const repeats = opts.quick ? 20 : 100
    this.progress.step('NPtcp')
    try {
      const rows = await runNptcp(exe, Math.max(...opts.sizes), repeats, 60_000, this.result.pinning.peerCpu)
      const wanted = new Set(opts.sizes)
      result.nptcp = {
        ran: true,
        note: `${exe}: mean of ${repeats} round trips per size, best of NPtcp's trials`,
        repeats,
        rows: rows.filter((r) => wanted.has(r.bytes))
      }
    } catch (err) {
      result.nptcp.note = `NPtcp failed: ${(err as Error).message}`
      this.warn(result.nptcp.note)
    }
    this.tick()
  }
}

/** Runs `fastsock pipe` with `opts`; progress is drawn on stderr by `progress`. */
export async function runPipe (opts: PipeOptions, progress: Progress): Promise<PipeResult> {
  return await new Run(opts, progress).execute()
}
