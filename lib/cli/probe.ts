/**
 * `fastsock probe`: every rung of the failover chain in chain order, available or not and why
 * (from fastsock.transports()), and whether the native addon loaded. Exit status 1 when the
 * fastsock library itself cannot load. The table is cli-table3's when that optional package is
 * installed, else plain aligned columns.
 */
import { Command } from 'commander'
import { hasOptional, loadOptional } from './optional'
import { loadError as nativeLoadError, native } from '../native'
import { envTransports, loadFastsock, type RungInfo } from './fastsock'
import { smcListenState } from '../transports/smc'

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

/** `rows` under `head`: cli-table3's table when installed, else columns padded with spaces. */
function renderTable (head: string[], rows: string[][]): string {
  if (hasOptional('cli-table3')) {
    const Table = loadOptional<typeof import('cli-table3')>('cli-table3', "fastsock probe's table")
    const t = new Table({
      head,
      style: { head: [], border: [], compact: true },
      wordWrap: true,
      colWidths: [...head.slice(1).map(() => null), 72]
    })
    t.push(...rows)
    return t.toString()
  }
  const widths = head.map((h, c) => Math.max(h.length, ...rows.map((r) => r[c].length)))
  return [head, ...rows].map((r) => r.map((cell, c) => (c === r.length - 1 ? cell : cell.padEnd(widths[c]))).join('  ')).join('\n')
}

/** The `probe` subcommand (commander), `--json` for machine-readable output; exit code 1 when the library did not load. */
export function probeCommand (): Command {
  return new Command('probe')
    .description('list every transport of the failover chain, whether it is available here and why')
    .option('--json', 'print the result as JSON')
    .action(async (opts: { json?: boolean }) => {
      const p = probe()
      const text = opts.json === true ? JSON.stringify(p, null, 2) + '\n' : renderProbe(p)
      await new Promise<void>((resolve) => process.stdout.write(text, () => resolve()))
      process.exitCode = p.fastsock.loaded ? 0 : 1
    })
}
