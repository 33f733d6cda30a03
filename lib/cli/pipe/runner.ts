/**
 * One `fastsock pipe` run: native limits and the placement probe, then a peer process, then per
 * mode and channel the measurements (ping-pong, stream, typed arrays), then NPtcp, the fits and
 * the headline ratios. Returns everything as a PipeResult; report.ts and plot.ts render it.
 *
 * Cells fail one by one (recorded in `errors`), never the whole run: a broken rung must not hide
 * the others. Every wait is bounded (connect, IPC, watchdogs), so a run always ends.
 */
import * as os from 'os'
import { loadError as nativeLoadError, native } from '../../native'
import { loadFastsock, type RungInfo } from '../fastsock'
import { connect, labelFor, selectChannels, type ChannelAddress } from './channels'
import { ELEMENT_TYPES } from './codecs'
import { Peer } from './control'
import { findNptcp, measureMemcpy, runNptcp } from './limits'
import { probePlacementIsolated } from './placement'
import { PingPongClient } from './pingpong'
import type { Progress } from './progress'
import { fitLinear, quantilesUs } from './stats'
import { StreamClient } from './stream'
import { runTyped } from './typed'
import type {
  ChannelSpec, FitRow, HeadlineRow, PingPongRow, PipeOptions, PipeResult, RowBase, StreamRow, TypedMethod, TypedRow
} from './types'
import { formatBytes, gbitPerSec, mbPerSec } from '../units'

/** Methods typed mode runs over Node `net` TCP: what a Node user does today. */
const BASELINE_METHODS: TypedMethod[] = ['raw', 'v8', 'json']
const NET_TCP: ChannelSpec = { id: 'net:tcp', kind: 'net', transport: 'tcp' }

function packageVersion (): string {
  try {
    // eslint-disable-next-line @typescript-eslint/no-var-requires
    return (require('../../../package.json') as { version: string }).version
  } catch {
    return 'unknown'
  }
}

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
  /** Channels that failed: later modes skip them (a stalled rung would cost a timeout per cell). */
  private readonly broken = new Map<string, string>()
  private readonly t0 = Date.now()

  constructor (private readonly opts: PipeOptions, private readonly progress: Progress) {
    const cpus = os.cpus()
    this.result = {
      tool: 'fastsock pipe',
      version: packageVersion(),
      startedAt: new Date().toISOString(),
      durationMs: 0,
      host: { hostname: os.hostname(), cpus: cpus.length, cpuModel: cpus[0]?.model ?? 'unknown', kernel: `${os.type()} ${os.release()}`, node: process.version },
      options: opts,
      native: { loaded: native !== null, loadError: nativeLoadError?.message ?? null, spinHalfRttNs: null, memcpy: [] },
      placement: { before: null, after: null },
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

  warn (message: string): void {
    this.result.warnings.push(message)
    this.progress.warn(message)
  }

  error (what: string, err: unknown): void {
    const message = `${what}: ${(err as Error)?.message ?? String(err)}`
    this.result.errors.push(message)
    this.progress.warn(message)
  }

  async execute (): Promise<PipeResult> {
    const { opts, result } = this
    // Native limits first, while the machine is quiet (no peer yet).
    result.placement.before = await probePlacementIsolated()
    result.native.spinHalfRttNs = result.placement.before?.halfRttNs ?? null
    result.native.memcpy = measureMemcpy([...opts.sizes, ...opts.streamSizes, ...opts.typedBytes])
    for (const m of result.native.memcpy) this.memcpyNs.set(m.bytes, m.ns)
    if (native === null) this.warn(`native addon not loaded (${nativeLoadError?.message ?? 'unknown'}): no memcpy or busy-poll limits`)

    const rungs = this.loadRungs()
    const { channels, warnings } = selectChannels(opts.transports, rungs)
    for (const w of warnings) this.warn(w)
    result.channels = channels.map((c) => ({ ...c, actual: null, error: null }))
    const fastChannels = channels.filter((c) => c.kind === 'fastsock')

    const nptcpExe = this.nptcpPlan()
    this.progress.start(
      (opts.modes.includes('pingpong') ? channels.length * opts.sizes.length : 0) +
      (opts.modes.includes('stream') ? channels.length * opts.streamSizes.length : 0) +
      (opts.modes.includes('typed') ? opts.typedTypes.length * opts.typedBytes.length * (fastChannels.length + BASELINE_METHODS.length) : 0) +
      (nptcpExe !== null ? 1 : 0))

    try {
      this.peer = await Peer.start(10_000)
      if (opts.modes.includes('pingpong')) for (const ch of channels) await this.channelCell(ch, 'ping-pong', async (a) => await this.pingpong(ch, a), opts.sizes.length)
      if (opts.modes.includes('stream')) for (const ch of channels) await this.channelCell(ch, 'stream', async (a) => await this.stream(ch, a), opts.streamSizes.length)
      if (opts.modes.includes('typed')) await this.typed(fastChannels)
    } catch (err) {
      this.error('peer', err)
    } finally {
      await this.peer?.stop()
      this.peer = null
    }

    if (nptcpExe !== null) await this.nptcp(nptcpExe)
    // In a fresh process: this one's GC and compiler threads would read as a far placement.
    result.placement.after = await probePlacementIsolated()
    this.progress.stop()
    if (result.placement.before !== null && result.placement.after !== null &&
        result.placement.before.state !== result.placement.after.state) {
      this.warn(`cross-core placement changed during the run: ${result.placement.before.state} → ${result.placement.after.state}`)
    }
    result.fits = this.fits()
    result.headline = this.headline()
    for (const [i, ch] of channels.entries()) {
      const actual = result.channels[i].actual
      if (actual !== null && ch.kind === 'fastsock' && actual !== ch.transport) {
        this.warn(`${ch.id}: asked for '${ch.transport}' but '${actual}' ran; its rows are labelled ${labelFor(ch, actual)}`)
      }
    }
    result.durationMs = Date.now() - this.t0
    return result
  }

  private loadRungs (): RungInfo[] | null {
    const lib = loadFastsock()
    if (lib.mod === null) {
      this.result.fastsock.loadError = lib.error?.message ?? 'unknown'
      this.warn(`fastsock library not loaded from ${lib.from} (${this.result.fastsock.loadError}): measuring the net baselines only`)
      return null
    }
    try {
      const rungs = lib.mod.transports()
      this.result.fastsock = { loaded: true, loadError: null, rungs: rungs.map((r) => ({ name: r.name, available: r.available, reason: r.reason })) }
      return rungs
    } catch (err) {
      this.result.fastsock.loadError = `transports() threw: ${(err as Error).message}`
      this.warn(this.result.fastsock.loadError)
      return null
    }
  }

  /** NPtcp's path when it should run, else null (with the reason in result.nptcp.note). */
  private nptcpPlan (): string | null {
    const { opts, result } = this
    if (opts.nptcp === false) { result.nptcp.note = 'not run (--no-nptcp)'; return null }
    if (!opts.modes.includes('pingpong')) { result.nptcp.note = 'not run (ping-pong mode not selected)'; return null }
    const exe = findNptcp()
    if (exe === null) { result.nptcp.note = 'NPtcp not found on PATH (Debian: apt-get install netpipe-tcp); skipped'; return null }
    if (opts.nptcp === null && opts.quick) { result.nptcp.note = 'not run with --quick (pass --nptcp to force)'; return null }
    return exe
  }

  /** Listens for `ch` once (lazily), then runs `body`; a failure marks the channel's cells done. */
  private async channelCell (ch: ChannelSpec, what: string, body: (address: ChannelAddress) => Promise<void>, cells: number): Promise<void> {
    const before = this.progressCount
    try {
      if (this.skipBroken(ch, what)) return
      await body(await this.address(ch))
    } catch (err) {
      this.error(`${ch.id} ${what}`, err)
      this.markBroken(ch, err)
    } finally {
      // Cells a failed channel did not reach still count as done for the bar.
      while (this.progressCount < before + cells) this.tick()
    }
  }

  /**
   * Records the channel's first error; a failure that cost a timeout (a stall) also makes later
   * cells of the channel be skipped, so a dead rung costs one timeout, not one per cell.
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
  private async open (ch: ChannelSpec, address: ChannelAddress): Promise<{ socket: import('net').Socket, base: RowBase }> {
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

  private async pingpong (ch: ChannelSpec, address: ChannelAddress): Promise<void> {
    const { opts } = this
    const peer = this.peer as Peer
    const maxBytes = Math.max(...opts.sizes)
    await peer.configure({ mode: 'pingpong', bytes: 1 })
    const { socket, base } = await this.open(ch, address)
    const client = new PingPongClient(socket, maxBytes, Math.max(opts.maxIters, opts.warmupIters))
    try {
      this.progress.step(`${base.label} warm-up`)
      // JIT and connection warm-up (JFS: 10,000 round trips), bounded in time.
      await client.run(1, { budgetNs: BigInt(opts.warmupMs) * 1_000_000n, minIters: 1, maxIters: opts.warmupIters }, opts.timeoutMs)
      for (const bytes of opts.sizes) {
        this.progress.step(`${base.label} ping-pong ${formatBytes(bytes)}`)
        await peer.configure({ mode: 'pingpong', bytes })
        // A few untimed round trips at this size (buffers, socket windows).
        await client.run(bytes, { budgetNs: BigInt(Math.round(opts.budgetMs * 1e5)), minIters: 2, maxIters: Math.min(50, opts.maxIters) }, opts.timeoutMs)
        await peer.cpuMark()
        const cpu0 = process.cpuUsage()
        const count = await client.run(bytes, { budgetNs: BigInt(Math.round(opts.budgetMs * 1e6)), minIters: opts.minIters, maxIters: opts.maxIters }, opts.timeoutMs)
        const cpuClientUs = cpuSinceUs(cpu0)
        const cpuServerUs = await peer.cpuRead()
        const halfRttUs = quantilesUs(client.samplesNs, count, 0.5)
        const row: PingPongRow = {
          ...base,
          bytes,
          iterations: count,
          halfRttUs,
          mbPerSec: mbPerSec(bytes, halfRttUs.median * 1e3),
          gbitPerSec: gbitPerSec(bytes, halfRttUs.median * 1e3),
          cpuUsPerMsg: (cpuClientUs + cpuServerUs) / (2 * count),
          cpuClientUs,
          cpuServerUs,
          ...this.memcpy(bytes)
        }
        this.result.pingpong.push(row)
        this.tick()
      }
    } finally {
      socket.destroy()
    }
  }

  private async stream (ch: ChannelSpec, address: ChannelAddress): Promise<void> {
    const { opts } = this
    const peer = this.peer as Peer
    await peer.configure({ mode: 'stream', expectBytes: 0 })
    const { socket, base } = await this.open(ch, address)
    const client = new StreamClient(socket, Math.max(...opts.streamSizes))
    const timeoutMs = opts.timeoutMs + 4 * opts.streamMs
    try {
      for (const bytes of opts.streamSizes) {
        this.progress.step(`${base.label} stream ${formatBytes(bytes)}`)
        // Calibration (and warm-up): ~256 KiB worth of writes, then size the timed run to streamMs.
        const probeMessages = Math.min(100_000, Math.max(8, Math.ceil(256 * 1024 / bytes)))
        await peer.configure({ mode: 'stream', expectBytes: probeMessages * bytes })
        const probeNs = await client.run(bytes, probeMessages, timeoutMs)
        const messages = Math.min(5_000_000, Math.max(8, Math.round(probeMessages * opts.streamMs * 1e6 / probeNs)))
        await peer.configure({ mode: 'stream', expectBytes: messages * bytes })
        await peer.cpuMark()
        const cpu0 = process.cpuUsage()
        const ns = await client.run(bytes, messages, timeoutMs)
        const cpuUs = cpuSinceUs(cpu0) + await peer.cpuRead()
        const row: StreamRow = {
          ...base,
          bytes,
          messages,
          elapsedMs: ns / 1e6,
          mbPerSec: mbPerSec(bytes * messages, ns),
          gbitPerSec: gbitPerSec(bytes * messages, ns),
          msgPerSec: messages / (ns / 1e9),
          cpuUsPerMsg: cpuUs / messages
        }
        this.result.stream.push(row)
        this.tick()
      }
    } finally {
      socket.destroy()
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
        const json = rows.find((r) => r.method === 'json')?.perArrayUs.median
        const v8 = rows.find((r) => r.method === 'v8')?.perArrayUs.median
        for (const r of rows) {
          r.speedupVsJson = json === undefined ? null : json / r.perArrayUs.median
          r.speedupVsV8 = v8 === undefined ? null : v8 / r.perArrayUs.median
        }
        this.result.typed.push(...rows)
      }
    }
  }

  private async nptcp (exe: string): Promise<void> {
    const { opts, result } = this
    const repeats = opts.quick ? 20 : 100
    this.progress.step('NPtcp')
    try {
      const rows = await runNptcp(exe, Math.max(...opts.sizes), repeats, 60_000)
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

  private fits (): FitRow[] {
    const byLabel = new Map<string, PingPongRow[]>()
    for (const r of this.result.pingpong) byLabel.set(r.label, [...(byLabel.get(r.label) ?? []), r])
    const fits: FitRow[] = []
    for (const rows of byLabel.values()) {
      const { channel, transport, label } = rows[0]
      const fit = fitLinear({ channel, transport, label }, rows.map((r): [number, number] => [r.bytes, r.halfRttUs.median]))
      if (fit !== null) fits.push(fit)
    }
    return fits
  }

  private headline (): HeadlineRow[] {
    const { pingpong, stream } = this.result
    const sizes = [...new Set(pingpong.map((r) => r.bytes))].sort((a, b) => a - b)
    const isFast = (r: { channel: string }): boolean => r.channel.startsWith('fastsock:')
    const rows: HeadlineRow[] = []
    for (const bytes of sizes) {
      const fast = pingpong.filter((r) => r.bytes === bytes && isFast(r))
      if (fast.length === 0) continue
      const best = fast.reduce((a, b) => (b.halfRttUs.median < a.halfRttUs.median ? b : a))
      const netTcp = pingpong.find((r) => r.bytes === bytes && r.channel === 'net:tcp')
      const netUnix = pingpong.find((r) => r.bytes === bytes && r.channel === 'net:unix')
      const fastStream = stream.filter((r) => r.bytes === bytes && isFast(r))
      const netStream = stream.find((r) => r.bytes === bytes && r.channel === 'net:tcp')
      const bestStream = fastStream.length === 0 ? null : Math.max(...fastStream.map((r) => r.mbPerSec))
      rows.push({
        bytes,
        best: best.label,
        latencyRatio: netTcp === undefined ? null : netTcp.halfRttUs.median / best.halfRttUs.median,
        latencyRatioVsUnix: netUnix === undefined ? null : netUnix.halfRttUs.median / best.halfRttUs.median,
        streamBandwidthRatio: bestStream === null || netStream === undefined ? null : bestStream / netStream.mbPerSec
      })
    }
    return rows
  }
}

/** Runs `fastsock pipe` with `opts`; progress is drawn on stderr by `progress`. */
export async function runPipe (opts: PipeOptions, progress: Progress): Promise<PipeResult> {
  return await new Run(opts, progress).execute()
}
