/**
 * The plot of a `fastsock pipe` run: half round-trip latency (µs) and ping-pong bandwidth (MB/s)
 * against message size, both log-log, one line per channel (labelled with the transport that
 * ran), with the native limits dashed (busy-poll floor + memcpy; memcpy bandwidth) and NPtcp
 * dotted. Built as a Vega spec and rendered headlessly to SVG (vega is ESM-only: dynamic import;
 * and an optional dependency: MissingDependencyError when it is not installed).
 */
import * as path from 'path'
import { loadVega, sizePanel, twoPanelFrame } from '../harness/vega'
import type { PipeResult } from './types'

interface Point { series: string, kind: 'measured' | 'limit' | 'nptcp', bytes: number, value: number }

/** What needs vega, for MissingDependencyError's message. */
export const PLOT_NEEDS = "fastsock pipe's plot"

function points (r: PipeResult): { latency: Point[], bandwidth: Point[] } {
  const latency: Point[] = []
  const bandwidth: Point[] = []
  for (const x of r.pingpong) {
    if (!(x.halfRttUs.median > 0)) continue
    latency.push({ series: x.label, kind: 'measured', bytes: x.bytes, value: x.halfRttUs.median })
    bandwidth.push({ series: x.label, kind: 'measured', bytes: x.bytes, value: x.mbPerSec })
  }
  for (const x of r.nptcp.rows) {
    latency.push({ series: 'NPtcp (C, TCP)', kind: 'nptcp', bytes: x.bytes, value: x.halfRttUs })
    bandwidth.push({ series: 'NPtcp (C, TCP)', kind: 'nptcp', bytes: x.bytes, value: x.mbPerSec })
  }
  const sizes = new Set(r.pingpong.map((x) => x.bytes))
  const floorNs = r.native.spinHalfRttNs
  for (const m of r.native.memcpy) {
    if (!sizes.has(m.bytes) || !(m.ns > 0)) continue
    if (floorNs !== null) latency.push({ series: 'limit: busy-poll floor + memcpy', kind: 'limit', bytes: m.bytes, value: (floorNs + m.ns) / 1e3 })
    bandwidth.push({ series: 'limit: memcpy', kind: 'limit', bytes: m.bytes, value: m.mbPerSec })
  }
  return { latency, bandwidth }
}

const DASH: Record<Point['kind'], number[]> = { measured: [1, 0], limit: [6, 4], nptcp: [2, 3] }

const SIZE_TICKS = [1, 16, 256, 4096, 65536, 1048576, 4194304, 16777216]

function panel (name: 'latency' | 'bandwidth', x: number, width: number, height: number, title: string, yTitle: string): object {
  return {
    ...sizePanel(name, x, width, height, title, yTitle, SIZE_TICKS),
    name: `${name}-panel`,
    marks: [
      {
        type: 'group',
        from: { facet: { name: `${name}-series`, data: name, groupby: ['series', 'kind'] } },
        marks: [
          {
            type: 'line',
            from: { data: `${name}-series` },
            sort: { field: 'datum.bytes' },
            encode: {
              enter: {
                x: { scale: 'x', field: 'bytes' },
                y: { scale: 'y', field: 'value' },
                stroke: { scale: 'color', field: 'series' },
                strokeWidth: { signal: "datum.kind === 'measured' ? 2 : 1.5" },
                strokeDash: { scale: 'dash', field: 'series' }
              }
            }
          },
          {
            type: 'symbol',
            from: { data: `${name}-series` },
            encode: {
              enter: {
                x: { scale: 'x', field: 'bytes' },
                y: { scale: 'y', field: 'value' },
                fill: { scale: 'color', field: 'series' },
                size: { signal: "datum.kind === 'measured' ? 18 : 0" }
              }
            }
          }
        ]
      }
    ]
  }
}

/** The Vega spec of the two-panel plot. `runs`: set by bench/median-of-runs.js on a merge. */
export function buildSpec (r: PipeResult & { runs?: unknown[] }): object {
  const { latency, bandwidth } = points(r)
  // Legend order: measured channels, then NPtcp, then the native limits.
  const series: Array<{ name: string, kind: Point['kind'] }> = []
  for (const kind of ['measured', 'nptcp', 'limit'] as const) {
    for (const p of [...latency, ...bandwidth]) {
      if (p.kind === kind && !series.some((x) => x.name === p.series)) series.push({ name: p.series, kind })
    }
  }
  const width = 400
  const height = 300
  const placement = r.placement.before === null ? 'placement unknown' : `placement ${r.placement.before.state} (${r.placement.before.halfRttNs.toFixed(0)} ns core-to-core)`
  return {
    ...twoPanelFrame('fastsock pipe: latency and bandwidth vs message size', width, height),
    title: {
      text: 'fastsock pipe: ping-pong between two processes',
      subtitle: [
        `${r.runs !== undefined ? `median of ${r.runs.length} runs, ` : ''}${r.host.cpus} × ${r.host.cpuModel}, node ${r.host.node}, ${r.startedAt.slice(0, 10)}`,
        `${placement}, processes ${r.pinning.mode === 'none' ? 'not pinned' : `pinned (${r.pinning.mode})`}. MB = 10^6 bytes`
      ],
      anchor: 'start',
      fontSize: 15
    },
    data: [
      { name: 'latency', values: latency },
      { name: 'bandwidth', values: bandwidth }
    ],
    scales: [
      { name: 'color', type: 'ordinal', range: 'category', domain: series.map((x) => x.name) },
      { name: 'dash', type: 'ordinal', range: series.map((x) => DASH[x.kind]), domain: series.map((x) => x.name) }
    ],
    legends: [{
      stroke: 'color', strokeDash: 'dash', orient: 'bottom', direction: 'horizontal', columns: 3, columnPadding: 24,
      title: 'channel (→ transport that ran, when another than asked); dashed: native limits; dotted: NPtcp',
      titleLimit: 900, labelLimit: 300, symbolType: 'stroke', symbolSize: 400
    }],
    marks: [
      panel('latency', 0, width, height, 'Half round-trip latency RTT/2 (µs), log-log', 'RTT/2 (µs)'),
      panel('bandwidth', width + 90, width, height, 'Bandwidth n / (RTT/2) (MB/s), log-log', 'MB/s')
    ]
  }
}

/** Renders the plot to an SVG string. */
export async function renderSvg (r: PipeResult): Promise<string> {
  const vega = await loadVega(PLOT_NEEDS)
  const view = new vega.View(vega.parse(buildSpec(r)), { renderer: 'none' })
  return await view.toSVG()
}

/** The default plot file: fastsock-pipe.svg in the current directory. */
export function defaultPlotPath (): string {
  return path.resolve('fastsock-pipe.svg')
}
