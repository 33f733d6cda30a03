/**
 * From the raw rows of the jobs to the reported figures: OSU's figure per size (latency in µs, or
 * bandwidth in MB/s and messages/s), JMB's quantiles of the batch measurements (the sextile, with
 * pipe's quantile code), JMB's fits T(n) = ts + tb·n (collectives: T(n,p) at each p, per forced
 * algorithm) to the sextiles with pipe's fitLinear, and the ratios the issues' targets are stated
 * in. Pure functions: bench/mpi.js merges several runs with them.
 */
import { fitLinear, quantilesUs } from '../harness/stats'
import { isBandwidth } from './options'
import type { Benchmark, ImplId, OsuFit, OsuRow, RatioRow, RawRow } from './types'

/**
 * Bytes moved per timed iteration in units of the message size: bw 1 window, bibw 2 windows
 * (both ways), mbw_mr one window per pair; 1 for the others.
 */
export function messagesPerIteration (b: Benchmark, window: number, np: number): number {
  if (b === 'bw') return window
  if (b === 'bibw') return 2 * window
  if (b === 'mbw_mr') return window * Math.floor(np / 2)
  return 1
}

/**
 * One OsuRow from a job's raw row. Bandwidth = message bytes × messages per iteration ÷ time per
 * iteration (bytes/µs = MB/s, MB = 10^6 bytes), as OSU computes it from the whole loop.
 */
export function toRow (b: Benchmark, impl: ImplId, np: number, algorithm: string | null, window: number, raw: RawRow): OsuRow {
  const samples = Float64Array.from(raw.samplesUs, (us) => us * 1e3)
  const q = quantilesUs(samples, samples.length)
  const perIter = messagesPerIteration(b, window, np)
  const bw = isBandwidth(b)
  const rate = (us: number): number => (us > 0 ? (raw.bytes * perIter) / us : NaN)
  return {
    impl,
    np,
    algorithm,
    bytes: raw.bytes,
    iterations: raw.iterations,
    warmup: raw.warmup,
    value: bw ? rate(raw.avgUs) : raw.avgUs,
    minUs: raw.minUs,
    maxUs: raw.maxUs,
    msgPerSec: bw && raw.avgUs > 0 ? (perIter * 1e6) / raw.avgUs : null,
    cpuUsPerMsg: raw.cpuUs === undefined || raw.iterations <= 0 ? null : raw.cpuUs / (raw.iterations * (b === 'latency' ? 2 : perIter)),
    jmb: { ...q, measurements: samples.length },
    sextileValue: bw ? rate(q.sextile) : q.sextile
  }
}

/** The series a row belongs to (one line in tables, fits and plots). */
export function seriesKey (r: { impl: ImplId, np: number, algorithm: string | null }): string {
  return `${r.impl}|${r.np}|${r.algorithm ?? ''}`
}

/**
 * JMB's fits: T(n) = ts + tb·n by least squares over the sextiles of each series (impl, P,
 * algorithm); the latency benchmark and the collectives only (the bandwidth benchmarks stream
 * windows, which the model does not describe). `labelOf` names a series.
 */
export function fitSeries (b: Benchmark, rows: OsuRow[], labelOf: (impl: ImplId) => string, transportOf: (impl: ImplId) => string): OsuFit[] {
  if (isBandwidth(b) || b === 'barrier') return []
  const groups = new Map<string, OsuRow[]>()
  for (const r of rows) groups.set(seriesKey(r), [...(groups.get(seriesKey(r)) ?? []), r])
  const fits: OsuFit[] = []
  for (const g of groups.values()) {
    const { impl, np, algorithm } = g[0]
    const fit = fitLinear({ channel: impl, transport: transportOf(impl), label: labelOf(impl) }, g.map((r): [number, number] => [r.bytes, r.sextileValue]))
    if (fit !== null) fits.push({ ...fit, impl, np, algorithm })
  }
  return fits
}

/**
 * Per (P, algorithm, size) the ratios of the targets: fastsock ÷ Open MPI of the figure, and how
 * many times faster fastsock is than Node net (latency: net ÷ fastsock; bandwidth: fastsock ÷ net).
 * Open MPI runs its own algorithm choice, so its rows are matched by P and size only.
 */
export function ratios (b: Benchmark, rows: OsuRow[]): RatioRow[] {
  const bw = isBandwidth(b)
  const div = (a: number | undefined, c: number | undefined): number | null =>
    a === undefined || c === undefined || !(a > 0) || !(c > 0) ? null : a / c
  const out: RatioRow[] = []
  for (const f of rows.filter((r) => r.impl === 'fastsock')) {
    const ompi = rows.find((r) => r.impl === 'openmpi' && r.np === f.np && r.bytes === f.bytes)
    const net = rows.find((r) => r.impl === 'node-net' && r.np === f.np && r.algorithm === f.algorithm && r.bytes === f.bytes)
    out.push({
      np: f.np,
      algorithm: f.algorithm,
      bytes: f.bytes,
      fastsockOverOpenMpi: div(f.value, ompi?.value),
      speedupVsNodeNet: bw ? div(f.value, net?.value) : div(net?.value, f.value)
    })
  }
  return out
}
