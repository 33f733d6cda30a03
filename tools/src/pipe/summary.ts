/**
 * Figures derived from the measured rows: the ts/tb fit per channel, the typed-array speedups
 * against JSON and v8.serialize, and the headline ratios against Node `net`. Pure functions, so
 * that a merge of several runs (bench/median-of-runs.js) derives them the same way.
 */
import { fitLinear } from '../harness/stats'
import type { FitRow, HeadlineRow, PingPongRow, StreamRow, TypedRow } from './types'

/** T(n) = ts + tb·n for each channel label, fitted to the median RTT/2 per size. */
export function fitAll (pingpong: PingPongRow[]): FitRow[] {
  const byLabel = new Map<string, PingPongRow[]>()
  for (const r of pingpong) byLabel.set(r.label, [...(byLabel.get(r.label) ?? []), r])
  const fits: FitRow[] = []
  for (const rows of byLabel.values()) {
    const { channel, transport, label } = rows[0]
    const fit = fitLinear({ channel, transport, label }, rows.map((r): [number, number] => [r.bytes, r.halfRttUs.median]))
    if (fit !== null) fits.push(fit)
  }
  return fits
}

/**
 * Sets speedupVsJson and speedupVsV8 of each typed row: the median time per array of the JSON
 * (v8) method of the same element type and size, divided by the row's (> 1: faster).
 */
export function typedSpeedups (typed: TypedRow[]): void {
  for (const r of typed) {
    const same = typed.filter((x) => x.elementType === r.elementType && x.bytes === r.bytes)
    const json = same.find((x) => x.method === 'json')?.perArrayUs.median
    const v8 = same.find((x) => x.method === 'v8')?.perArrayUs.median
    r.speedupVsJson = json === undefined ? null : json / r.perArrayUs.median
    r.speedupVsV8 = v8 === undefined ? null : v8 / r.perArrayUs.median
  }
}

const isFastsock = (r: { channel: string }): boolean => r.channel.startsWith('fastsock:')

/** The channels that busy-poll with no option set (docs/polling.md): shm's ring, verbs' CQ. */
const POLLED_BY_DEFAULT = new Set(['fastsock:shm', 'fastsock:verbs'])

/**
 * Per size: fastsock's best rung (lowest median RTT/2) against net:tcp and net:unix, and the best
 * rung that never spins (not the default, polling `fastsock:shm` or `fastsock:verbs`) against
 * net:tcp.
 */
export function headline (pingpong: PingPongRow[], stream: StreamRow[]): HeadlineRow[] {
  const sizes = [...new Set(pingpong.map((r) => r.bytes))].sort((a, b) => a - b)
  const rows: HeadlineRow[] = []
  for (const bytes of sizes) {
    const fast = pingpong.filter((r) => r.bytes === bytes && isFastsock(r))
    if (fast.length === 0) continue
    const lowest = (rows: PingPongRow[]): PingPongRow | null =>
      rows.length === 0 ? null : rows.reduce((a, b) => (b.halfRttUs.median < a.halfRttUs.median ? b : a))
    const best = lowest(fast) as PingPongRow
    const noPoll = lowest(fast.filter((r) => !POLLED_BY_DEFAULT.has(r.channel)))
    const netTcp = pingpong.find((r) => r.bytes === bytes && r.channel === 'net:tcp')
    const netUnix = pingpong.find((r) => r.bytes === bytes && r.channel === 'net:unix')
    const fastStream = stream.filter((r) => r.bytes === bytes && isFastsock(r))
    const netStream = stream.find((r) => r.bytes === bytes && r.channel === 'net:tcp')
    const bestStream = fastStream.length === 0 ? null : Math.max(...fastStream.map((r) => r.mbPerSec))
    rows.push({
      bytes,
      best: best.label,
      latencyRatio: netTcp === undefined ? null : netTcp.halfRttUs.median / best.halfRttUs.median,
      latencyRatioVsUnix: netUnix === undefined ? null : netUnix.halfRttUs.median / best.halfRttUs.median,
      bestNoPoll: noPoll?.label ?? null,
      latencyRatioNoPoll: netTcp === undefined || noPoll === null ? null : netTcp.halfRttUs.median / noPoll.halfRttUs.median,
      streamBandwidthRatio: bestStream === null || netStream === undefined ? null : bestStream / netStream.mbPerSec
    })
  }
  return rows
}
