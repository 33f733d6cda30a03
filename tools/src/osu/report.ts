/**
 * Renders an OsuResult: first OSU's own output per implementation and rank count (its header
 * lines and columns, so the table can be laid beside a real OSU run), then the side-by-side table
 * with the ratios of the targets, JMB's view (sextiles, T(n) = ts + tb·n fits), and the `--json`
 * document. Tables with pipe's `table()` (cli-table3); numbers with units.ts's fmt.
 */
import { jsonDocument } from '../harness/output'
import { table } from '../harness/table'
import { fmt, fmtRatio, formatBytes } from '../harness/units'
import { DEFAULT_JIT_WARMUP_MS, isBandwidth, isCollective } from './options'
import { seriesKey } from './summary'
import type { Benchmark, ImplRun, OsuResult, OsuRow } from './types'

const TITLES: Record<Benchmark, string> = {
  latency: 'OSU MPI Latency Test',
  bw: 'OSU MPI Bandwidth Test',
  bibw: 'OSU MPI Bi-Directional Bandwidth Test',
  mbw_mr: 'OSU MPI Multiple Bandwidth / Message Rate Test',
  allreduce: 'OSU MPI Allreduce Latency Test',
  bcast: 'OSU MPI Broadcast Latency Test',
  reduce: 'OSU MPI Reduce Latency Test',
  allgather: 'OSU MPI Allgather Latency Test',
  alltoall: 'OSU MPI All-to-All Personalized Exchange Latency Test',
  gather: 'OSU MPI Gather Latency Test',
  scatter: 'OSU MPI Scatter Latency Test',
  barrier: 'OSU MPI Barrier Latency Test'
}

const f2 = (x: number): string => (Number.isFinite(x) ? x.toFixed(2) : '-')

/** A ratio cell: units.ts's fmtRatio, with two significant digits below 0.1 (bandwidth fractions). */
function ratio (x: number | null): string {
  return x !== null && Number.isFinite(x) && x < 0.1 ? `${x.toPrecision(2)}×` : fmtRatio(x)
}

/** OSU's column header for `b` (with -f: min, max, iterations for the collectives). */
export function osuHeader (b: Benchmark, full: boolean): string {
  if (b === 'latency') return '# Size          Latency (us)'
  if (b === 'bw' || b === 'bibw') return '# Size      Bandwidth (MB/s)'
  if (b === 'mbw_mr') return '# Size                  MB/s        Messages/s'
  const extra = full ? '   Min Latency(us)   Max Latency(us)  Iterations' : ''
  if (b === 'barrier') return `# Avg Latency(us)${extra}`
  return `# Size       Avg Latency(us)${extra}`
}

/** One OSU data line, formatted as OSU prints it (size left, figures right, 2 decimals). */
export function osuLine (b: Benchmark, r: OsuRow, full: boolean): string {
  // OSU's field widths: 20 in the point-to-point tests, 18 in the collectives (17 for barrier).
  if (b === 'mbw_mr') return `${String(r.bytes).padEnd(10)}${f2(r.value).padStart(20)}${f2(r.msgPerSec ?? NaN).padStart(20)}`
  if (!isCollective(b)) return `${String(r.bytes).padEnd(10)}${f2(r.value).padStart(20)}`
  const extra = full ? `${f2(r.minUs).padStart(18)}${f2(r.maxUs).padStart(18)}${String(r.iterations).padStart(12)}` : ''
  if (b === 'barrier') return `${f2(r.value).padStart(17)}${extra}`
  return `${String(r.bytes).padEnd(10)}${f2(r.value).padStart(18)}${extra}`
}

function runName (run: { label: string, np: number, algorithm: string | null }): string {
  return `${run.label}, ${run.np} ranks${run.algorithm !== null ? `, algorithm ${run.algorithm}` : ''}`
}

function osuBlocks (r: OsuResult): string {
  const blocks: string[] = []
  for (const run of r.runs.filter((x) => x.ran)) {
    const rows = r.rows.filter((x) => seriesKey(x) === seriesKey(run))
    blocks.push([`# ${TITLES[r.benchmark]} (fastsock osu ${r.version}): ${runName(run)}`, osuHeader(r.benchmark, r.options.full),
      ...rows.map((x) => osuLine(r.benchmark, x, r.options.full))].join('\n'))
  }
  return blocks.join('\n\n')
}

function header (r: OsuResult): string {
  const h = r.host
  const ran = (x: ImplRun): string => x.skipped !== null ? `skipped: ${x.skipped}` : x.error !== null ? 'failed' : `ran over ${Object.values(x.transports).length > 0 ? [...new Set(Object.values(x.transports))].join(', ') : 'unknown'}`
  const seen = new Set<string>()
  const impls = r.runs.filter((x) => { const k = `${x.impl}|${x.np}`; if (seen.has(k)) return false; seen.add(k); return true })
  return [
    `fastsock osu ${r.benchmark} ${r.version}: ${h.cpus} × ${h.cpuModel}, ${h.kernel}, node ${h.node}, load ${h.loadAvg1.toFixed(2)}, ${r.startedAt}`,
    `method: OSU Micro-Benchmarks 5.x (${r.options.iterations} iterations + ${r.options.warmup} warm-up up to ${formatBytes(r.options.largeBytes)}, ` +
      `${r.options.iterationsLarge} + ${r.options.warmupLarge} above${isBandwidth(r.benchmark) ? `; window ${r.options.window}` : ''}); ` +
      `JMB: sextile over up to ${r.options.measurements} measurements per size; Node ranks: ${r.options.jitWarmupMs === null ? `${DEFAULT_JIT_WARMUP_MS} ms per rank per CPU of` : r.options.jitWarmupMs > 0 ? `${r.options.jitWarmupMs} ms` : 'no'} JIT warm-up${methodNote(r.options.benchmark, r.options.awaited)}${r.options.quick ? '; --quick' : ''}`,
    ...impls.map((x) => `  ${runName(x)}: ${ran(x)}`)
  ].join('\n')
}

function comparison (r: OsuResult): string {
  const bw = isBandwidth(r.benchmark)
  const unit = bw ? 'MB/s' : 'µs'
  const parts: string[] = []
  const groups = [...new Set(r.ratios.map((x) => `${x.np}|${x.algorithm ?? ''}`))]
  for (const g of groups) {
    const [npText, alg] = g.split('|')
    const np = Number(npText)
    const cell = (impl: string, bytes: number): OsuRow | undefined =>
      r.rows.find((x) => x.impl === impl && x.np === np && x.bytes === bytes && (impl === 'openmpi' || (x.algorithm ?? '') === alg))
    const t = table(['size', `fastsock ${unit}`, `Node net ${unit}`, `Open MPI ${unit}`, bw ? 'fastsock ÷ Open MPI' : 'fastsock ÷ Open MPI (slowdown)', bw ? 'fastsock ÷ Node net' : 'Node net ÷ fastsock (speedup)', 'CPU µs fastsock / net / OMPI'])
    for (const x of r.ratios.filter((y) => y.np === np && (y.algorithm ?? '') === alg)) {
      t.push([formatBytes(x.bytes), fmt(cell('fastsock', x.bytes)?.value), fmt(cell('node-net', x.bytes)?.value), fmt(cell('openmpi', x.bytes)?.value),
        ratio(x.fastsockOverOpenMpi), ratio(x.speedupVsNodeNet),
        ['fastsock', 'node-net', 'openmpi'].map((i) => fmt(cell(i, x.bytes)?.cpuUsPerMsg)).join(' / ')])
    }
    parts.push(`Side by side, ${np} ranks${alg !== '' ? `, algorithm ${alg}` : ''}: OSU's ${bw ? 'bandwidth' : 'average latency'} (${unit}); ` +
      `CPU = user + system time of all ranks per ${isCollective(r.benchmark) ? 'call' : r.benchmark === 'latency' ? 'one-way message' : 'message'}\n${t.toString()}`)
  }
  return parts.join('\n\n')
}

function jmb (r: OsuResult): string {
  const series = r.runs.filter((x) => x.ran)
  if (series.length === 0) return ''
  const bw = isBandwidth(r.benchmark)
  const t = table(['size', ...series.map((s) => `${s.impl} np${s.np}${s.algorithm !== null ? ` ${s.algorithm}` : ''}`)])
  for (const bytes of [...new Set(r.rows.map((x) => x.bytes))].sort((a, b) => a - b)) {
    t.push([formatBytes(bytes), ...series.map((s) => {
      const x = r.rows.find((y) => seriesKey(y) === seriesKey(s) && y.bytes === bytes)
      return x === undefined ? '—' : `${fmt(x.sextileValue)} (${x.jmb.measurements})`
    })])
  }
  const lines = [`JMB: the sextile (1/6 quantile) of the measurements (their number in brackets), ${bw ? 'as MB/s' : 'µs'}\n${t.toString()}`]
  if (r.fits.length > 0) {
    const f = table(['series', 'P', 'ts µs', 'tb ns/B', '1/tb MB/s', 'R²', 'ts µs (rel.)', 'tb ns/B (rel.)', 'points'])
    for (const x of r.fits) {
      f.push([`${x.label}${x.algorithm !== null ? ` [${x.algorithm}]` : ''}`, x.np, fmt(x.tsUs), fmt(x.tbNsPerByte), fmt(1e3 / x.tbNsPerByte), fmt(x.r2), fmt(x.tsUsRelative), fmt(x.tbNsPerByteRelative), x.points])
    }
    const model = isCollective(r.benchmark) ? 'T(n,p) = ts(p) + tb(p)·n at each p' : 'T(n) = ts + tb·n'
    lines.push(`JMB fit of ${model} to the sextiles: least squares (and weighted by 1/T², "rel.")\n${f.toString()}`)
  }
  return lines.join('\n\n')
}

/** The human-readable report. */
export function renderReport (r: OsuResult): string {
  const parts: string[] = [header(r), osuBlocks(r)]
  if (r.ratios.length > 0) parts.push(comparison(r))
  parts.push(jmb(r))
  if (r.warnings.length > 0) parts.push('Warnings:\n' + r.warnings.map((w) => `  - ${w}`).join('\n'))
  if (r.errors.length > 0) parts.push('Errors:\n' + r.errors.map((w) => `  - ${w.replace(/\n/g, '\n    ')}`).join('\n'))
  parts.push(`(${(r.durationMs / 1e3).toFixed(1)} s)`)
  return parts.filter((p) => p !== '').join('\n\n') + '\n'
}

/** The `--json` document (non-finite numbers as null, as pipe's). */
export function renderJson (r: OsuResult): string {
  return jsonDocument(r)
}

/** The report's note on which tier the Node ranks' calls ran in. */
function methodNote (benchmark: string, awaited: boolean): string {
  if (benchmark === 'latency') return awaited ? '; awaited send()/recv() (--await)' : '; blocking sendSync()/recvSync(), as MPI_Send/MPI_Recv'
  if (benchmark === 'barrier' || benchmark === 'bcast' || benchmark === 'allreduce') {
    return awaited ? `; awaited ${benchmark}() (--await)` : `; blocking ${benchmark}Sync() where it completes without the event loop, as MPI_${benchmark[0].toUpperCase()}${benchmark.slice(1)}`
  }
  return ''
}
