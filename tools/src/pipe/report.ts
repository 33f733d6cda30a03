/**
 * Renders a PipeResult: terminal tables (cli-table3, an optional dependency loaded on first use),
 * CSV (one flat table with a `section` column) and JSON. Latency is always the half round trip
 * (RTT/2); MB = 10^6 bytes.
 */
import { jsonDocument } from '../harness/output'
import { csvCell, table } from '../harness/table'
import { fmt, fmtRatio, formatBytes } from '../harness/units'
import { describePlacement } from './limits'
import type { PingPongRow, PipeResult } from './types'

function labels (rows: Array<{ label: string }>): string[] {
  return [...new Set(rows.map((r) => r.label))]
}

function sizesOf (rows: Array<{ bytes: number }>): number[] {
  return [...new Set(rows.map((r) => r.bytes))].sort((a, b) => a - b)
}

function header (r: PipeResult): string {
  const lines: string[] = []
  const h = r.host
  lines.push(`fastsock pipe ${r.version}: ${h.cpus} × ${h.cpuModel}, ${h.kernel}, node ${h.node}, ${r.startedAt}`)
  lines.push(`cross-core placement: ${describePlacement(r.placement.before)}` +
    (r.placement.after !== null && r.placement.after.state !== r.placement.before?.state ? `; after the run: ${describePlacement(r.placement.after)}` : ''))
  lines.push(`native limits: ${r.native.spinHalfRttNs === null ? 'addon not loaded' : `busy-poll shared-memory floor ${fmt(r.native.spinHalfRttNs)} ns RTT/2; memcpy per size beside each table`}` +
    `; NPtcp: ${r.nptcp.ran ? 'ran (column NPtcp)' : r.nptcp.note}`)
  lines.push(`processes: ${r.pinning.note}`)
  const ch = r.channels.map((c) => {
    const notes = [
      ...(c.actual !== null && c.kind === 'fastsock' ? [`ran ${c.actual}`] : []),
      ...(c.shmPollUs !== undefined && c.shmPollUs > 0 ? [`polls up to ${c.shmPollUs} µs`] : []),
      ...(c.error !== null ? ['failed'] : [])
    ]
    return notes.length > 0 ? `${c.id} (${notes.join(', ')})` : c.id
  })
  lines.push(`channels: ${ch.join(', ')}`)
  lines.push('units: latency = half round trip RTT/2 in µs; MB/s with MB = 10^6 bytes; Gbit/s = 10^9 bit/s; sizes in B/KiB/MiB')
  return lines.join('\n')
}

function pingpongSummary (r: PipeResult): string {
  const cols = labels(r.pingpong)
  const nptcp = new Map(r.nptcp.rows.map((x) => [x.bytes, x.halfRttUs]))
  const memcpy = new Map(r.native.memcpy.map((m) => [m.bytes, m.ns]))
  const t = table(['size', ...cols, ...(r.nptcp.ran ? ['NPtcp (C)'] : []), 'memcpy', 'floor+memcpy'])
  for (const bytes of sizesOf(r.pingpong)) {
    const cells = cols.map((l) => fmt(r.pingpong.find((x) => x.label === l && x.bytes === bytes)?.halfRttUs.median))
    const m = memcpy.get(bytes)
    const floor = r.native.spinHalfRttNs === null || m === undefined ? null : (r.native.spinHalfRttNs + m) / 1e3
    t.push([formatBytes(bytes), ...cells, ...(r.nptcp.ran ? [fmt(nptcp.get(bytes))] : []), m === undefined ? '—' : fmt(m / 1e3), fmt(floor)])
  }
  return 'Ping-pong: median half round-trip latency (µs). memcpy = one copy of the message (µs); floor+memcpy = busy-poll floor + one copy, the native limit\n' + t.toString()
}

function pingpongDetail (rows: PingPongRow[]): string {
  const first = rows[0]
  const t = table(['size', 'ran', 'iters', 'median µs', 'sextile µs', 'p99 µs', 'MB/s', 'Gbit/s', 'CPU µs/msg', 'memcpy MB/s'])
  for (const x of rows) {
    t.push([formatBytes(x.bytes), x.transport, x.iterations, fmt(x.halfRttUs.median), fmt(x.halfRttUs.sextile), fmt(x.halfRttUs.p99),
      fmt(x.mbPerSec), fmt(x.gbitPerSec), fmt(x.cpuUsPerMsg), fmt(x.memcpyMbPerSec)])
  }
  return `${first.label}: ping-pong, RTT/2 (CPU = user+sys of both processes per message)\n${t.toString()}`
}

function fits (r: PipeResult): string {
  const t = table(['channel', 'ran', 'ts µs', 'tb ns/B', '1/tb MB/s', 'R²', 'ts µs (rel.)', 'tb ns/B (rel.)'])
  for (const f of r.fits) {
    t.push([f.label, f.transport, fmt(f.tsUs), fmt(f.tbNsPerByte), fmt(1e3 / f.tbNsPerByte), fmt(f.r2), fmt(f.tsUsRelative), fmt(f.tbNsPerByteRelative)])
  }
  return 'Fit of T(n) = ts + tb·n to median RTT/2: least squares (and weighted by 1/T², "rel.", which keeps the small sizes in view)\n' + t.toString()
}

function streamTable (r: PipeResult): string {
  const cols = labels(r.stream)
  const memcpy = new Map(r.native.memcpy.map((m) => [m.bytes, m.mbPerSec]))
  const t = table(['size', ...cols, 'memcpy MB/s'])
  for (const bytes of sizesOf(r.stream)) {
    t.push([formatBytes(bytes), ...cols.map((l) => {
      const x = r.stream.find((s) => s.label === l && s.bytes === bytes)
      return x === undefined ? '—' : `${fmt(x.mbPerSec)} (${fmt(x.cpuUsPerMsg)} µs)`
    }), fmt(memcpy.get(bytes))])
  }
  return 'Stream: one-way bandwidth, MB/s (CPU µs per write, both processes)\n' + t.toString()
}

function typedTable (r: PipeResult): string {
  const t = table(['array', 'payload', 'method', 'ran', 'iters', 'µs/array', 'sextile µs', 'MB/s', 'CPU µs', 'vs JSON', 'vs v8'])
  for (const x of r.typed) {
    t.push([`${x.elementType}[${x.elements}]`, formatBytes(x.bytes), x.label, x.transport, x.iterations, fmt(x.perArrayUs.median),
      fmt(x.perArrayUs.sextile), fmt(x.mbPerSec), fmt(x.cpuUsPerArray), fmtRatio(x.speedupVsJson), fmtRatio(x.speedupVsV8)])
  }
  return 'Typed arrays end to end (into the receiver\'s own typed array): one-way time per array = RTT/2; "vs" = how many times faster than JSON / v8.serialize\n' + t.toString()
}

function headline (r: PipeResult): string {
  const lines: string[] = []
  if (r.headline.length > 0) {
    const t = table(['size', 'best fastsock rung', 'latency × vs net:tcp', '× vs net:unix', 'best without polling', '× vs net:tcp', 'stream bandwidth × vs net:tcp'])
    for (const h of r.headline) {
      t.push([formatBytes(h.bytes), h.best, fmtRatio(h.latencyRatio), fmtRatio(h.latencyRatioVsUnix), h.bestNoPoll ?? '—', fmtRatio(h.latencyRatioNoPoll), fmtRatio(h.streamBandwidthRatio)])
    }
    lines.push('Headline: fastsock\'s best rung vs Node net (× > 1: fastsock faster; ping-pong bandwidth ratio = latency ratio)')
    lines.push(t.toString())
  } else if (r.pingpong.length > 0) {
    lines.push('Headline: no fastsock rung was measured, no ratios')
  }
  const direct = r.typed.filter((x) => x.method === 'fastsock')
  const keys = [...new Set(direct.map((x) => `${x.elementType} ${x.bytes}`))]
  for (const key of keys) {
    const cells = direct.filter((x) => `${x.elementType} ${x.bytes}` === key)
    const best = cells.reduce((a, b) => (b.perArrayUs.median < a.perArrayUs.median ? b : a))
    lines.push(`  ${best.elementType} ${formatBytes(best.bytes)}: ${best.label} ${fmt(best.perArrayUs.median)} µs/array, ` +
      `${fmtRatio(best.speedupVsJson)} faster than JSON, ${fmtRatio(best.speedupVsV8)} than v8.serialize`)
  }
  return lines.join('\n')
}

/** The human-readable report. */
export function renderReport (r: PipeResult): string {
  const parts: string[] = [header(r)]
  if (r.pingpong.length > 0) {
    parts.push(pingpongSummary(r))
    for (const l of labels(r.pingpong)) parts.push(pingpongDetail(r.pingpong.filter((x) => x.label === l)))
    if (r.fits.length > 0) parts.push(fits(r))
  }
  if (r.stream.length > 0) parts.push(streamTable(r))
  if (r.typed.length > 0) parts.push(typedTable(r))
  parts.push(headline(r))
  if (r.warnings.length > 0) parts.push('Warnings:\n' + r.warnings.map((w) => `  - ${w}`).join('\n'))
  if (r.errors.length > 0) parts.push('Errors:\n' + r.errors.map((w) => `  - ${w}`).join('\n'))
  parts.push(`(${(r.durationMs / 1e3).toFixed(1)} s)`)
  return parts.filter((p) => p !== '').join('\n\n') + '\n'
}

/** The `--json` document. */
export function renderJson (r: PipeResult): string {
  return jsonDocument(r)
}

const CSV_COLUMNS = [
  'section', 'channel', 'transport', 'label', 'method', 'element_type', 'bytes', 'iterations',
  'median_us', 'sextile_us', 'p99_us', 'min_us', 'mean_us', 'mb_per_s', 'gbit_per_s', 'cpu_us_per_msg',
  'memcpy_ns', 'memcpy_mb_per_s', 'messages', 'elapsed_ms', 'speedup_vs_json', 'speedup_vs_v8',
  'ts_us', 'tb_ns_per_byte', 'r2'
] as const
type CsvRow = Partial<Record<typeof CSV_COLUMNS[number], string | number | null>>

/** The `--csv` table: every measured row, one `section` column telling which kind it is. */
export function renderCsv (r: PipeResult): string {
  const rows: CsvRow[] = []
  for (const x of r.pingpong) {
    rows.push({
      section: 'pingpong', channel: x.channel, transport: x.transport, label: x.label, bytes: x.bytes, iterations: x.iterations,
      median_us: x.halfRttUs.median, sextile_us: x.halfRttUs.sextile, p99_us: x.halfRttUs.p99, min_us: x.halfRttUs.min, mean_us: x.halfRttUs.mean,
      mb_per_s: x.mbPerSec, gbit_per_s: x.gbitPerSec, cpu_us_per_msg: x.cpuUsPerMsg, memcpy_ns: x.memcpyNs, memcpy_mb_per_s: x.memcpyMbPerSec
    })
  }
  for (const f of r.fits) rows.push({ section: 'fit', channel: f.channel, transport: f.transport, label: f.label, ts_us: f.tsUs, tb_ns_per_byte: f.tbNsPerByte, r2: f.r2 })
  for (const x of r.stream) {
    rows.push({
      section: 'stream', channel: x.channel, transport: x.transport, label: x.label, bytes: x.bytes, messages: x.messages,
      elapsed_ms: x.elapsedMs, mb_per_s: x.mbPerSec, gbit_per_s: x.gbitPerSec, cpu_us_per_msg: x.cpuUsPerMsg
    })
  }
  for (const x of r.typed) {
    rows.push({
      section: 'typed', channel: x.channel, transport: x.transport, label: x.label, method: x.method, element_type: x.elementType,
      bytes: x.bytes, iterations: x.iterations, median_us: x.perArrayUs.median, sextile_us: x.perArrayUs.sextile, p99_us: x.perArrayUs.p99,
      min_us: x.perArrayUs.min, mean_us: x.perArrayUs.mean, mb_per_s: x.mbPerSec, cpu_us_per_msg: x.cpuUsPerArray,
      speedup_vs_json: x.speedupVsJson, speedup_vs_v8: x.speedupVsV8
    })
  }
  for (const x of r.nptcp.rows) rows.push({ section: 'nptcp', channel: 'NPtcp', transport: 'tcp', label: 'NPtcp (C)', bytes: x.bytes, median_us: x.halfRttUs, mb_per_s: x.mbPerSec })
  for (const m of r.native.memcpy) rows.push({ section: 'memcpy', label: 'memcpy', bytes: m.bytes, memcpy_ns: m.ns, memcpy_mb_per_s: m.mbPerSec })
  if (r.native.spinHalfRttNs !== null) rows.push({ section: 'floor', label: 'busy-poll floor', median_us: r.native.spinHalfRttNs / 1e3 })
  return [CSV_COLUMNS.join(','), ...rows.map((row) => CSV_COLUMNS.map((c) => csvCell(row[c])).join(','))].join('\n') + '\n'
}
