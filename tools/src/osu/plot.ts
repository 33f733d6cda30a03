/**
 * The plot of a `fastsock osu` run (a Vega spec rendered headlessly to SVG with pipe's vega
 * loader): left, OSU's figure (latency µs or bandwidth MB/s) against the message size, one line
 * per implementation and rank count (fastsock solid, Node net dashed, Open MPI dotted); right,
 * the ratios of the targets against the size (fastsock ÷ Open MPI, and the speedup over Node
 * net). Log-log; 0-byte rows are left out (no place on a log axis).
 */
import { loadVega, sizePanel, twoPanelFrame } from '../harness/vega'
import { isBandwidth } from './options'
import type { ImplId, OsuResult } from './types'

interface Point { series: string, impl: ImplId | 'ratio', bytes: number, value: number }

const DASH: Record<Point['impl'], number[]> = { fastsock: [1, 0], 'node-net': [6, 4], openmpi: [2, 3], ratio: [1, 0] }

function panel (name: string, x: number, width: number, height: number, title: string, yTitle: string, ticks: number[]): object {
  return {
    ...sizePanel(name, x, width, height, title, yTitle, ticks),
    marks: [{
      type: 'group',
      from: { facet: { name: `${name}-series`, data: name, groupby: ['series', 'impl'] } },
      marks: [
        {
          type: 'line',
          from: { data: `${name}-series` },
          sort: { field: 'datum.bytes' },
          encode: { enter: { x: { scale: 'x', field: 'bytes' }, y: { scale: 'y', field: 'value' }, stroke: { scale: 'color', field: 'series' }, strokeWidth: { value: 2 }, strokeDash: { scale: 'dash', field: 'series' } } }
        },
        {
          type: 'symbol',
          from: { data: `${name}-series` },
          encode: { enter: { x: { scale: 'x', field: 'bytes' }, y: { scale: 'y', field: 'value' }, fill: { scale: 'color', field: 'series' }, size: { value: 18 } } }
        }
      ]
    }]
  }
}

/** The Vega spec of the two-panel plot. */
export function buildSpec (r: OsuResult): object {
  const bw = isBandwidth(r.benchmark)
  const nps = new Set(r.rows.map((x) => x.np))
  const name = (impl: ImplId, np: number, algorithm: string | null): string => {
    const run = r.runs.find((x) => x.impl === impl && x.np === np && x.algorithm === algorithm)
    return `${run?.label ?? impl}${nps.size > 1 ? `, P=${np}` : ''}${algorithm !== null ? ` [${algorithm}]` : ''}`
  }
  const figure: Point[] = r.rows.filter((x) => x.bytes > 0 && x.value > 0)
    .map((x) => ({ series: name(x.impl, x.np, x.algorithm), impl: x.impl, bytes: x.bytes, value: x.value }))
  const ratio: Point[] = []
  for (const x of r.ratios.filter((y) => y.bytes > 0)) {
    const suffix = `${nps.size > 1 ? `, P=${x.np}` : ''}${x.algorithm !== null ? ` [${x.algorithm}]` : ''}`
    if (x.fastsockOverOpenMpi !== null) ratio.push({ series: `fastsock ÷ Open MPI${suffix}`, impl: 'ratio', bytes: x.bytes, value: x.fastsockOverOpenMpi })
    if (x.speedupVsNodeNet !== null) ratio.push({ series: `speedup over Node net${suffix}`, impl: 'ratio', bytes: x.bytes, value: x.speedupVsNodeNet })
  }
  const series: Array<{ name: string, impl: Point['impl'] }> = []
  for (const p of [...figure, ...ratio]) if (!series.some((s) => s.name === p.series)) series.push({ name: p.series, impl: p.impl })
  const ticks = [...new Set(figure.map((p) => p.bytes))].sort((a, b) => a - b).filter((_b, i, all) => all.length <= 10 || i % 2 === 0)
  const width = 400
  const height = 300
  return {
    ...twoPanelFrame(`fastsock osu ${r.benchmark}`, width, height),
    title: {
      text: `fastsock osu ${r.benchmark}: fastsock/mpi, the same API over Node net, and Open MPI's C`,
      subtitle: [`${r.host.cpus} × ${r.host.cpuModel}, node ${r.host.node}, ${r.startedAt.slice(0, 10)}; OSU 5.x method${r.options.quick ? ' (--quick)' : ''}; ` +
        `${bw ? 'MB = 10^6 bytes' : 'latency in µs'}`],
      anchor: 'start',
      fontSize: 15
    },
    data: [{ name: 'figure', values: figure }, { name: 'ratio', values: ratio }],
    scales: [
      { name: 'color', type: 'ordinal', range: 'category', domain: series.map((s) => s.name) },
      { name: 'dash', type: 'ordinal', range: series.map((s) => DASH[s.impl]), domain: series.map((s) => s.name) }
    ],
    legends: [{ stroke: 'color', strokeDash: 'dash', orient: 'bottom', direction: 'horizontal', columns: 2, columnPadding: 24, title: 'series (dashed: Node net; dotted: Open MPI)', titleLimit: 900, labelLimit: 400, symbolType: 'stroke', symbolSize: 400 }],
    marks: [
      panel('figure', 0, width, height, bw ? `${r.benchmark}: bandwidth (MB/s), log-log` : `${r.benchmark}: average latency (µs), log-log`, bw ? 'MB/s' : 'µs', ticks),
      panel('ratio', width + 90, width, height, 'ratios: fastsock ÷ Open MPI, speedup over Node net', '×', ticks)
    ]
  }
}

/** Renders the plot to an SVG string (MissingDependencyError without vega). */
export async function renderSvg (r: OsuResult): Promise<string> {
  const vega = await loadVega("fastsock osu's plot")
  const view = new vega.View(vega.parse(buildSpec(r)), { renderer: 'none' })
  return await view.toSVG()
}
