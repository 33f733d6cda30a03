/**
 * Statistics over measured samples, with simple-statistics: quantiles of RTT/2 (median, sextile,
 * p99) and the fit of the linear model T(n) = ts + tb·n (Hockney; the thesis' chapter 2).
 * simple-statistics is an optional dependency, loaded on first use (./optional.ts).
 */
import type * as SimpleStatistics from 'simple-statistics'
import { loadOptional } from './optional'
import type { FitRow, Quantiles, RowBase } from './types'

let loaded: typeof SimpleStatistics | null = null
function ss (): typeof SimpleStatistics {
  loaded ??= loadOptional<typeof SimpleStatistics>('simple-statistics', "fastsock pipe's statistics")
  return loaded
}

/** The sextile: the 1/6 quantile, JMB's summary of a latency distribution. */
export const SEXTILE = 1 / 6

/**
 * Quantiles of `samplesNs[0 .. count)` (ns), scaled by `scale` and returned in µs: pass 0.5 for
 * round trips to get RTT/2. Sorts a copy; the caller's buffer is reused by the next size.
 */
export function quantilesUs (samplesNs: Float64Array, count: number, scale = 1): Quantiles {
  if (count <= 0) return { median: NaN, sextile: NaN, p99: NaN, min: NaN, mean: NaN }
  const sorted = samplesNs.slice(0, count).sort()
  let sum = 0
  for (let i = 0; i < count; i++) sum += sorted[i]
  // simple-statistics indexes plain arrays; a typed array works the same and saves a copy.
  const xs = sorted as unknown as number[]
  const k = scale / 1e3
  const { quantileSorted } = ss()
  return {
    median: quantileSorted(xs, 0.5) * k,
    sextile: quantileSorted(xs, SEXTILE) * k,
    p99: quantileSorted(xs, 0.99) * k,
    min: sorted[0] * k,
    mean: (sum / count) * k
  }
}

/**
 * Fits T(n) = ts + tb·n to (bytes, µs) points by least squares. Returns ts in µs and tb in
 * ns/byte, both for ordinary least squares (the classical fit, dominated by the large sizes of a
 * log-spaced sweep) and weighted by 1/T² (relative residuals, so ts reflects the small sizes).
 */
export function fitLinear (base: RowBase, points: Array<[number, number]>): FitRow | null {
  const ok = points.filter(([n, t]) => Number.isFinite(n) && Number.isFinite(t) && t > 0)
  if (ok.length < 2) return null
  const { linearRegression, rSquared, weightedLinearRegression } = ss()
  const ols = linearRegression(ok)
  const line = (n: number): number => ols.b + ols.m * n
  const rel = weightedLinearRegression(ok, ok.map(([, t]) => 1 / (t * t)))
  return {
    ...base,
    tsUs: ols.b,
    tbNsPerByte: ols.m * 1e3,
    r2: rSquared(ok, line),
    tsUsRelative: rel.b,
    tbNsPerByteRelative: rel.m * 1e3,
    points: ok.length
  }
}

/** The median of a small list of numbers (NaN when empty). */
export function median (xs: number[]): number {
  if (xs.length === 0) return NaN
  return ss().quantileSorted([...xs].sort((a, b) => a - b), 0.5)
}
