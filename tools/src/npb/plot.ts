/**
 * `fastsock npb --plot`: speedup over P = 1 against P, one line per implementation (fastsock,
 * node-net, the NAS reference), with the ideal (speedup = P) dashed: the figure of NPB-MPJ's
 * chapter of the thesis. Rendered headlessly to SVG with the tools' vega loader.
 */
import { loadVega } from '../harness/vega'
import { ratiosOf, type NpbResult } from './runner'

/** The Vega spec. */
export function buildSpec (r: NpbResult): object {
  const points = r.runs.map((run) => ({ impl: run.impl, np: run.np, speedup: ratiosOf(run, r.runs).speedup })).filter((p) => p.speedup !== null)
  const nps = [...new Set(r.runs.map((x) => x.np))].sort((a, b) => a - b)
  const ideal = nps.map((np) => ({ np, speedup: np }))
  const width = 420
  const height = 300
  return {
    $schema: 'https://vega.github.io/schema/vega/v6.json',
    description: `fastsock npb ${r.kernel} speedup`,
    background: 'white',
    padding: 12,
    width,
    height,
    autosize: 'pad',
    title: { text: `NPB ${r.kernel.toUpperCase()} class ${r.class}: speedup over 1 rank`, subtitle: `${r.host.cpus} × ${r.host.cpuModel}, node ${r.host.node}, ${r.startedAt.slice(0, 10)}; median of ${r.options.runs}`, anchor: 'start', fontSize: 15 },
    data: [{ name: 'points', values: points }, { name: 'ideal', values: ideal }],
    scales: [
      { name: 'x', type: 'linear', domain: { data: 'ideal', field: 'np' }, range: 'width', nice: false, zero: false },
      { name: 'y', type: 'linear', domain: { fields: [{ data: 'points', field: 'speedup' }, { data: 'ideal', field: 'speedup' }] }, range: 'height', nice: true, zero: true },
      { name: 'color', type: 'ordinal', range: 'category', domain: { data: 'points', field: 'impl' } }
    ],
    axes: [
      { orient: 'bottom', scale: 'x', title: 'ranks (P)', values: nps, grid: true, gridOpacity: 0.15 },
      { orient: 'left', scale: 'y', title: 'speedup (time at P = 1 / time at P)', grid: true, gridOpacity: 0.15 }
    ],
    legends: [{ stroke: 'color', title: 'implementation', orient: 'top-left', symbolType: 'stroke' }],
    marks: [
      { type: 'line', from: { data: 'ideal' }, encode: { enter: { x: { scale: 'x', field: 'np' }, y: { scale: 'y', field: 'speedup' }, stroke: { value: '#999' }, strokeDash: { value: [4, 4] } } } },
      {
        type: 'group',
        from: { facet: { name: 'series', data: 'points', groupby: 'impl' } },
        marks: [
          { type: 'line', from: { data: 'series' }, sort: { field: 'datum.np' }, encode: { enter: { x: { scale: 'x', field: 'np' }, y: { scale: 'y', field: 'speedup' }, stroke: { scale: 'color', field: 'impl' }, strokeWidth: { value: 2 } } } },
          { type: 'symbol', from: { data: 'series' }, encode: { enter: { x: { scale: 'x', field: 'np' }, y: { scale: 'y', field: 'speedup' }, fill: { scale: 'color', field: 'impl' }, size: { value: 30 } } } }
        ]
      }
    ]
  }
}

/** The SVG (MissingDependencyError without vega). */
export async function renderSvg (r: NpbResult): Promise<string> {
  const vega = await loadVega("fastsock npb's plot")
  const view = new vega.View(vega.parse(buildSpec(r)), { renderer: 'none' })
  return await view.toSVG()
}
