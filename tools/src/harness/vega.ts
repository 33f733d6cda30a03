/**
 * vega for the tools' plots: loaded at run time (ESM-only, an optional dependency), rendered
 * headlessly to SVG; and the size-axis labels every plot shares.
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
