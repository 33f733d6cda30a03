/**
 * `fastsock probe`: every rung of the failover chain in chain order, available or not and why
 * (from fastsock.transports()), and whether the native addon loaded. Exit status 1 when the
 * fastsock library itself cannot load. The table is plain aligned columns (no table package: the
 * library has no command-line dependency).
 */
import { loadError as nativeLoadError, native } from '../native'
import { smcListenState } from '../transports/smc'
import { parseOptions } from './args'

/** One rung as `fastsock.transports()` reports it. */
export interface RungInfo { name: string, available: boolean, reason: string }

/**
 * The library's public face, loaded at run time (require of ../index), so that probe still
 * reports why when the library itself fails to load. Never throws.
 */
function loadFastsock (): { mod: { transports: () => RungInfo[] } | null, error: Error | null } {
  try {
    // eslint-disable-next-line @typescript-eslint/no-var-requires
    return { mod: require('../index') as { transports: () => RungInfo[] }, error: null }
  } catch (err) {
    return { mod: null, error: err as Error }
  }
}

/** The rung names FASTSOCK_TRANSPORTS lists (the process-wide default chain), or null when unset. */
function envTransports (): string[] | null {
  const env = process.env.FASTSOCK_TRANSPORTS
  if (env === undefined || env.trim() === '') return null
  return env.split(',').map((s) => s.trim().toLowerCase()).filter((s) => s !== '')
}

/** What `fastsock probe --json` prints. */
export interface ProbeResult {
  fastsock: { loaded: boolean, loadError: string | null }
  /** FASTSOCK_TRANSPORTS as set in this process's environment, or null. */
  envTransports: string | null
  /** Every rung; `enabled`: false when FASTSOCK_TRANSPORTS is set and leaves it out. */
  rungs: Array<RungInfo & { enabled: boolean }>
  native: { loaded: boolean, loadError: string | null, napiVersion: number | null, sourceHash: string | null }
  /** Whether fastsock servers here listen with AF_SMC (the smc rung's listener), and why. */
  smcListener: { on: boolean, reason: string }
}

/** What `fastsock probe` reports: every rung with its availability and reason, the addon, the smc listener. */
export function probe (): ProbeResult {
  const lib = loadFastsock()
  const env = envTransports()
  let rungs: ProbeResult['rungs'] = []
  let loadError = lib.error?.message ?? null
  if (lib.mod !== null) {
    try {
      rungs = lib.mod.transports().map((r) => ({
        name: r.name, available: r.available, reason: r.reason, enabled: env === null || env.includes(r.name)
      }))
    } catch (err) {
      loadError = `transports() threw: ${(err as Error).message}`
    }
  }
  return {
    fastsock: { loaded: lib.mod !== null && loadError === null, loadError },
    envTransports: process.env.FASTSOCK_TRANSPORTS ?? null,
    rungs,
    native: {
      loaded: native !== null,
      loadError: nativeLoadError?.message ?? null,
      napiVersion: native?.napiVersion ?? null,
      sourceHash: native?.sourceHash ?? null
    },
    smcListener: smcListenState()
  }
}

/** The probe result as the text `fastsock probe` prints (a table of rungs, then notes). */
export function renderProbe (p: ProbeResult): string {
  const lines: string[] = []
  if (!p.fastsock.loaded) lines.push(`fastsock library: NOT LOADED (${p.fastsock.loadError ?? 'unknown'})`)
  if (p.envTransports !== null) lines.push(`FASTSOCK_TRANSPORTS=${p.envTransports} (restricts the chain in this process)`)
  const env = p.envTransports !== null
  const head = ['#', 'rung', 'available', ...(env ? ['in FASTSOCK_TRANSPORTS'] : []), 'why']
  const rows = p.rungs.map((r, i) => [String(i + 1), r.name, r.available ? 'yes' : 'no', ...(env ? [r.enabled ? 'yes' : 'no'] : []), r.reason])
  if (p.rungs.length > 0) lines.push('Failover chain, fastest first:', renderTable(head, rows))
  lines.push(`smc listener (servers listen with AF_SMC, serving SMC and TCP clients): ${p.smcListener.on ? 'on' : 'off'} (${p.smcListener.reason})`)
  lines.push(p.native.loaded
    ? `native addon: loaded (N-API ${String(p.native.napiVersion)}, source ${String(p.native.sourceHash).slice(0, 12)})`
    : `native addon: NOT LOADED (${p.native.loadError ?? 'unknown'}): only the kernel-socket rungs can work`)
  return lines.join('\n') + '\n'
}

/** `rows` under `head`, in columns padded with spaces (the last one not). */
function renderTable (head: string[], rows: string[][]): string {
  const widths = head.map((h, c) => Math.max(h.length, ...rows.map((r) => r[c].length)))
  return [head, ...rows].map((r) => r.map((cell, c) => (c === r.length - 1 ? cell : cell.padEnd(widths[c]))).join('  ')).join('\n')
}

export const PROBE_USAGE = `Usage: fastsock probe [--json]

Lists every transport of the failover chain, whether it is available here and why.

Options:
  --json      print the result as JSON
  -h, --help  this help
`

/** `fastsock probe` with its arguments: exit status 1 when the library did not load, else 0. UsageError for bad flags. */
export async function probeMain (args: string[]): Promise<number> {
  const o = parseOptions(args, { json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } })
  if (o.help === true) {
    process.stdout.write(PROBE_USAGE)
    return 0
  }
  const p = probe()
  const text = o.json === true ? JSON.stringify(p, null, 2) + '\n' : renderProbe(p)
  await new Promise<void>((resolve) => process.stdout.write(text, () => resolve()))
  return p.fastsock.loaded ? 0 : 1
}
