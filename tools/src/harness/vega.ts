/**
 * vega for the tools' plots: loaded at run time (ESM-only, an optional dependency), rendered
 * headlessly to SVG; and what every plot shares: its frame, the size axis' labels and panel.
 */
import { pathToFileURL } from 'url'
import { resolveOptional } from './optional'

/** `import()` that TypeScript's CommonJS output leaves alone (it would turn it into require()). */
const importEsm = new Function('specifier', 'return import(specifier)') as (specifier: string) => Promise<unknown>

export interface VegaModule {
  parse: (spec: object) => unknown
  View: new (runtime: unknown, options: { renderer: 'none' }) => { toSVG: () => Promise<string> }
}

/**
 * vega, loaded as the ESM module it is; an optional dependency: MissingDependencyError naming
 * `forWhat` ("fastsock pipe's plot") without it.
 */
export async function loadVega (forWhat: string): Promise<VegaModule> {
  // Resolve from this package (vega's only export condition is "default"), then import by URL.
  return await importEsm(pathToFileURL(resolveOptional('vega', forWhat)).href) as VegaModule
}

/** Vega label expression: a message size in B, KiB or MiB. */
export const SIZE_LABEL = "datum.value >= 1048576 ? (datum.value / 1048576) + ' MiB' : datum.value >= 1024 ? (datum.value / 1024) + ' KiB' : datum.value + ' B'"

/**
 * One panel of a plot against message size, without its marks: a vega group at (`x`, 0) of
 * `width` x `height` px titled `title`, with a log2 x scale over data `name`'s `bytes` (labelled
 * B/KiB/MiB at `ticks`) and a log y scale over its `value` (axis `yTitle`). The caller adds
 * `marks` (scales 'x' and 'y'). The ranges are explicit: 'width'/'height' in a nested group would
 * be the whole view's, not this panel's.
 */
export function sizePanel (name: string, x: number, width: number, height: number, title: string, yTitle: string, ticks: number[]): Record<string, unknown> {
  return {
    type: 'group',
    encode: { enter: { x: { value: x }, y: { value: 0 }, width: { value: width }, height: { value: height } } },
    title: { text: title, anchor: 'start', fontSize: 13 },
    scales: [
      { name: 'x', type: 'log', base: 2, range: [0, width], domain: { data: name, field: 'bytes' }, nice: false },
      { name: 'y', type: 'log', range: [height, 0], domain: { data: name, field: 'value' }, nice: true }
    ],
    axes: [
      { orient: 'bottom', scale: 'x', title: 'message size', grid: true, gridOpacity: 0.15, values: ticks, encode: { labels: { update: { text: { signal: SIZE_LABEL } } } } },
      { orient: 'left', scale: 'y', title: yTitle, grid: true, gridOpacity: 0.15, format: ',~g', tickCount: 8 }
    ]
  }
}

/**
 * The frame every tool's plot has: white, 12 px padding, two panels of `panelWidth` px side by
 * side with 90 px between them, `height` px high (vega v6).
 */
export function twoPanelFrame (description: string, panelWidth: number, height: number): Record<string, unknown> {
  return { $schema: 'https://vega.github.io/schema/vega/v6.json', description, background: 'white', padding: 12, width: 2 * panelWidth + 90, height, autosize: 'pad' }
}
