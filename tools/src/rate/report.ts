/**
 * Renders a RateResult: terminal tables in `fastsock pipe`'s style (one per pattern: msgrate's
 * message rate of every channel, the ratio to net:tcp, cold beside warm), the channels with
 * CPU, system calls and the transport that ran, the round-trip percentiles, the phases and the
 * targets; `--csv` (one row per measured cell, plus the RTT rows) and `--json` (everything).
 */
import { csvCell, table } from '../harness/table'
import { median } from '../harness/stats'
import { fmt, fmtRatio, formatBytes } from '../harness/units'
import { cellKey } from './summary'
import type { RateResult, RateRow } from './types'

function header (r: RateResult): string {
  const h = r.host
  const c = r.config
  const mib = (b: number | null): string => (b === null ? 'unknown' : `${fmt(b / 1048576)} MiB`)
  return [
    `fastsock rate ${r.version}: ${h.cpus} × ${h.cpuModel}, ${h.kernel}, node ${h.node}, ${r.startedAt}` +
      (Number.isFinite(h.otherCpuLoad) ? `; other load before the run ${(h.otherCpuLoad * 100).toFixed(0)}%` : ''),
    `processes: this one + ${r.processes.peers} peer(s)${r.processes.oversubscribed ? ' (more processes than CPUs)' : ''}; ${r.pinning.note}`,
    `window ${c.window} messages per peer and direction; cold cache: ${r.cache.flushBytes} B touched between iterations (${r.cache.note}; last-level cache ${mib(r.cache.llcBytes)}, ${r.cache.llcSource})`,
    'msg/s counts every send and every receive of every process (msgrate); delivered/s = msg/s ÷ 2 (osu_mbw_mr); MB = 10^6 bytes; CPU and system calls are per message delivered, all processes'
  ].join('\n')
}

/** "1.23 M" style message rates. */
function rate (x: number | undefined): string {
  if (x === undefined || !Number.isFinite(x)) return '—'
  return x >= 1e6 ? `${(x / 1e6).toFixed(2)} M` : x >= 1e3 ? `${(x / 1e3).toFixed(0)} k` : fmt(x)
}

/** One table per pattern and direction: rows are peers × size, columns the channels. */
function patternTables (r: RateResult): string[] {
  const labels = [...new Set(r.rows.map((x) => x.label))]
  const byKey = new Map<string, RateRow>()
  for (const x of r.rows) byKey.set(`${x.label}|${cellKey(x)}`, x)
  const groups = [...new Set(r.rows.map((x) => `${x.pattern}|${x.direction}`))]
  const out: string[] = []
  for (const g of groups) {
    const [pattern, direction] = g.split('|')
    const rows = r.rows.filter((x) => x.pattern === pattern && x.direction === direction)
    const cold = rows.some((x) => x.coldCache)
    const t = table(['peers', 'size', ...labels.map((l) => (l === 'net:tcp' ? `${l} msg/s` : `${l} msg/s (× net:tcp)`))])
    const cells = [...new Set(rows.map((x) => `${x.peers}|${x.bytes}`))]
    for (const cell of cells) {
      const [peers, bytes] = cell.split('|').map(Number)
      const warmCell = (label: string, coldCache: boolean): RateRow | undefined =>
        byKey.get(`${label}|${cellKey({ pattern: pattern as RateRow['pattern'], direction: direction as RateRow['direction'], bytes, peers, coldCache })}`)
      t.push([String(peers), formatBytes(bytes), ...labels.map((l) => {
        const w = warmCell(l, false)
        const c = warmCell(l, true)
        const warmText = w === undefined ? '—' : `${rate(w.msgPerSec)}${l === 'net:tcp' ? '' : ` (${fmtRatio(w.ratioVsNetTcp)})`}`
        return cold ? `${warmText} / ${c === undefined ? '—' : `${rate(c.msgPerSec)} (c/w ${fmt(c.coldOverWarm)})`}` : warmText
      })])
    }
    const what = direction === 'both' ? pattern : `${pattern} ${direction}`
    out.push(`${what}: message rate${cold ? ', warm / cold cache (c/w = cold ÷ warm)' : ''}\n${t.toString()}`)
  }
  return out
}

/** Per channel: what ran, connection time, medians of CPU and system calls per message, overhead. */
function channelTable (r: RateResult): string {
  const t = table(['channel', 'ran', 'connect ms', 'rows', 'median CPU µs/msg', 'median post µs/msg', 'median syscalls/msg', 'frames/msg', 'protocol overhead'], ['left', 'left', 'right', 'right', 'right', 'right', 'right', 'right', 'left'])
  for (const c of r.channels) {
    const rows = r.rows.filter((x) => x.channel === c.id)
    const frames = rows.map((x) => x.overhead.framesPerMsg).filter((x): x is number => x !== null)
    const syscalls = rows.map((x) => x.overhead.syscallsPerMsg).filter((x): x is number => x !== null)
    const post = rows.map((x) => x.postUsPerMsg).filter((x): x is number => x !== null && Number.isFinite(x))
    t.push([c.id, c.actual ?? (c.error !== null ? 'failed' : '—'), fmt(c.connectMs), String(rows.length), fmt(median(rows.map((x) => x.cpuUsPerMsg).filter(Number.isFinite))), fmt(median(post)),
      fmt(median(syscalls)), frames.length > 0 ? fmt(median(frames)) : '—', rows[0]?.overhead.note ?? (c.error ?? '')])
  }
  return 'Channels (medians over all their rows; the JSON has every row)\n' + t.toString()
}

function rttTable (r: RateResult): string {
  const t = table(['channel', 'ran', 'size', 'samples', 'p50 µs', 'p90 µs', 'p99 µs', 'p99.9 µs', 'min µs'])
  for (const x of r.rtt) t.push([x.label, x.transport, formatBytes(x.bytes), String(x.samples), fmt(x.p50Us), fmt(x.p90Us), fmt(x.p99Us), fmt(x.p999Us), fmt(x.minUs)])
  return 'Round-trip time (full RTT of one message on a warm connection, one peer)\n' + t.toString()
}

function phases (r: RateResult): string {
  const p = r.phases
  return 'Phases (ms): ' + [
    `initialization ${fmt(p.initializationMs)}`, `connection ${fmt(p.connectionMs)}`, `preparation ${fmt(p.preparationMs)} (incl. cold-cache flushes and barriers)`,
    `warm-up ${fmt(p.warmupMs)}`, `operation ${fmt(p.operationMs)}`, `cleanup ${fmt(p.cleanupMs)}`
  ].join(', ')
}

function targets (r: RateResult): string {
  if (r.targets.length === 0) return ''
  return 'Targets\n' + r.targets.map((x) => `  [${x.met === null ? 'n/a' : x.met ? 'met' : 'NOT met'}] ${x.target}: ${x.detail}`).join('\n')
}

/** The human-readable report. */
export function renderReport (r: RateResult): string {
  const parts: string[] = [header(r), ...patternTables(r), channelTable(r)]
  if (r.rtt.length > 0) parts.push(rttTable(r))
  parts.push(phases(r), targets(r))
  if (r.warnings.length > 0) parts.push('Warnings:\n' + r.warnings.map((w) => `  - ${w}`).join('\n'))
  if (r.errors.length > 0) parts.push('Errors:\n' + r.errors.map((w) => `  - ${w}`).join('\n'))
  parts.push(`(${(r.durationMs / 1e3).toFixed(1)} s)`)
  return parts.filter((p) => p !== '').join('\n\n') + '\n'
}

/** The `--json` document (non-finite numbers as null). */
export function renderJson (r: RateResult): string {
  return JSON.stringify(r, (_k, v: unknown) => (typeof v === 'number' && !Number.isFinite(v) ? null : v), 2) + '\n'
}

const CSV_COLUMNS = [
  'section', 'channel', 'transport', 'label', 'pattern', 'direction', 'bytes', 'peers', 'window', 'cold_cache', 'iterations',
  'messages', 'delivered', 'elapsed_ms', 'msg_per_s', 'delivered_per_s', 'mb_per_s', 'cpu_us_per_msg', 'post_us_per_msg', 'post_share', 'syscalls_per_msg',
  'frames_per_msg', 'ratio_vs_net_tcp', 'cold_over_warm', 'samples', 'p50_us', 'p90_us', 'p99_us', 'p999_us'
] as const

/** The `--csv` table: a `section` column (rate, rtt), one line per row. */
export function renderCsv (r: RateResult): string {
  const lines: Array<Partial<Record<typeof CSV_COLUMNS[number], string | number | null>>> = []
  for (const x of r.rows) {
    lines.push({
      section: 'rate', channel: x.channel, transport: x.transport, label: x.label, pattern: x.pattern, direction: x.direction, bytes: x.bytes,
      peers: x.peers, window: x.window, cold_cache: String(x.coldCache), iterations: x.iterations, messages: x.messages, delivered: x.delivered,
      elapsed_ms: x.elapsedMs, msg_per_s: x.msgPerSec, delivered_per_s: x.deliveredPerSec, mb_per_s: x.mbPerSec, cpu_us_per_msg: x.cpuUsPerMsg, post_us_per_msg: x.postUsPerMsg, post_share: x.postShare,
      syscalls_per_msg: x.overhead.syscallsPerMsg, frames_per_msg: x.overhead.framesPerMsg, ratio_vs_net_tcp: x.ratioVsNetTcp, cold_over_warm: x.coldOverWarm
    })
  }
  for (const x of r.rtt) {
    lines.push({ section: 'rtt', channel: x.channel, transport: x.transport, label: x.label, bytes: x.bytes, samples: x.samples, p50_us: x.p50Us, p90_us: x.p90Us, p99_us: x.p99Us, p999_us: x.p999Us })
  }
  return [CSV_COLUMNS.join(','), ...lines.map((l) => CSV_COLUMNS.map((c) => csvCell(l[c])).join(','))].join('\n') + '\n'
}
