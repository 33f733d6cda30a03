/**
 * The plot of a `fastsock rate` run, in the style of `fastsock pipe`'s (a Vega spec rendered
 * headlessly to SVG with pipe's vega loader): for each pattern (and direction), the warm message
 * rate against the message size (at the fewest peers measured) and against the number of peers
 * (at 64 B, or the size nearest it), log scales, one line per channel labelled with the
 * transport that ran.
 */
import * as path from 'path'
import { loadVega, SIZE_LABEL, twoPanelFrame } from '../harness/vega'
import type { RateResult, RateRow } from './types'

interface Point { series: string, x: number, value: number }

/** The size the "vs peers" panels use: 64 B when measured, else the nearest measured size. */
function peersPanelSize (rows: RateRow[]): number {
  const sizes = [...new Set(rows.map((r) => r.bytes))]
  return sizes.reduce((a, b) => (Math.abs(Math.log2(b / 64)) < Math.abs(Math.log2(a / 64)) ? b : a), sizes[0])
}

function panel (name: string, x: number, y: number, width: number, height: number, title: string, xTitle: string, bySize: boolean, ticks: number[]): object {
  return {
    type: 'group',
    encode: { enter: { x: { value: x }, y: { value: y }, width: { value: width }, height: { value: height } } },
    title: { text: title, anchor: 'start', fontSize: 12 },
    scales: [
      { name: 'x', type: 'log', base: 2, range: [0, width], domain: { data: name, field: 'x' }, nice: false },
      { name: 'y', type: 'log', range: [height, 0], domain: { data: name, field: 'value' }, nice: true }
    ],
    axes: [
      { orient: 'bottom', scale: 'x', title: xTitle, grid: true, gridOpacity: 0.15, values: ticks, ...(bySize ? { encode: { labels: { update: { text: { signal: SIZE_LABEL } } } } } : { format: 'd' }) },
      { orient: 'left', scale: 'y', title: 'msg/s (sent + received)', grid: true, gridOpacity: 0.15, format: '.2s', tickCount: 6 }
    ],
    marks: [{
      type: 'group',
      from: { facet: { name: `${name}-series`, data: name, groupby: ['series'] } },
      marks: [
        {
          type: 'line',
          from: { data: `${name}-series` },
          sort: { field: 'datum.x' },
          encode: { enter: { x: { scale: 'x', field: 'x' }, y: { scale: 'y', field: 'value' }, stroke: { scale: 'color', field: 'series' }, strokeWidth: { value: 2 } } }
        },
        {
          type: 'symbol',
          from: { data: `${name}-series` },
          encode: { enter: { x: { scale: 'x', field: 'x' }, y: { scale: 'y', field: 'value' }, fill: { scale: 'color', field: 'series' }, size: { value: 18 } } }
        }
      ]
    }]
  }
}

/** The Vega spec: one row of two panels per pattern and direction. */
export function buildSpec (r: RateResult): object {
  const warm = r.rows.filter((x) => !x.coldCache && x.msgPerSec > 0)
  const groups = [...new Set(warm.map((x) => `${x.pattern}|${x.direction}`))]
  const width = 360
  const height = 200
  const data: Array<{ name: string, values: Point[] }> = []
  const marks: object[] = []
  groups.forEach((g, i) => {
    const rows = warm.filter((x) => `${x.pattern}|${x.direction}` === g)
    const [pattern, direction] = g.split('|')
    const what = direction === 'both' ? pattern : `${pattern} ${direction}`
    const fewest = Math.min(...rows.map((x) => x.peers))
    const size = peersPanelSize(rows)
    const bySize = rows.filter((x) => x.peers === fewest).map((x) => ({ series: x.label, x: x.bytes, value: x.msgPerSec }))
    const byPeers = rows.filter((x) => x.bytes === size).map((x) => ({ series: x.label, x: x.peers, value: x.msgPerSec }))
    data.push({ name: `size${i}`, values: bySize }, { name: `peers${i}`, values: byPeers })
    const y = i * (height + 70)
    marks.push(panel(`size${i}`, 0, y, width, height, `${what}: vs message size (${fewest} peer${fewest > 1 ? 's' : ''})`, 'message size', true, [...new Set(bySize.map((p) => p.x))].sort((a, b) => a - b)))
    marks.push(panel(`peers${i}`, width + 90, y, width, height, `${what}: vs peers (${size} B)`, 'peer processes', false, [...new Set(byPeers.map((p) => p.x))].sort((a, b) => a - b)))
  })
  const series = [...new Set(warm.map((x) => x.label))]
  return {
    ...twoPanelFrame('fastsock rate: message rate vs message size and vs number of peers', width, Math.max(1, groups.length) * (height + 70) - 70),
    title: {
      text: 'fastsock rate: sustained message rate (msgrate patterns), warm cache',
      subtitle: [
        `${r.host.cpus} × ${r.host.cpuModel}, node ${r.host.node}, ${r.startedAt.slice(0, 10)}; window ${r.config.window}; ${r.pinning.mode === 'none' ? 'not pinned' : 'pinned'}`,
        'msg/s counts every send and every receive (msgrate); log scales'
      ],
      anchor: 'start',
      fontSize: 15
    },
    data,
    scales: [{ name: 'color', type: 'ordinal', range: 'category', domain: series }],
    legends: [{ stroke: 'color', orient: 'bottom', direction: 'horizontal', columns: 4, title: 'channel (→ transport that ran, when another than asked)', titleLimit: 900, labelLimit: 300, symbolType: 'stroke' }],
    marks
  }
}

/** Renders the plot to an SVG string. */
export async function renderSvg (r: RateResult): Promise<string> {
  const vega = await loadVega("fastsock rate's plot")
  const view = new vega.View(vega.parse(buildSpec(r)), { renderer: 'none' })
  return await view.toSVG()
}

/** The default plot file: fastsock-rate.svg in the current directory. */
export function defaultPlotPath (): string {
  return path.resolve('fastsock-rate.svg')
}
