/**
 * `fastsock npb`'s report: per kernel a table (cli-table3) of every implementation and P: time
 * (median of the runs), Mop/s, verification, speedup over P = 1, parallel efficiency, × the
 * reference (its time over this one's: above 1 is faster than the NAS reference), × node-net
 * (the Node net baseline's time over this one's); then the skipped cells and errors. And the
 * `--json` document: { runs: [{ impl, kernel, class, np, seconds, mops, verified, transport }] }.
 */
import { jsonDocument } from '../harness/output'
import { table } from '../harness/table'
import { ratiosOf, type NpbResult } from './runner'

const LABEL: Record<string, string> = { fastsock: 'fastsock', 'node-net': 'node-net (tcp)', 'npb-mpi': 'NPB-MPI (reference)' }

function x (v: number | null, digits = 2): string {
  return v === null || !Number.isFinite(v) ? '–' : `${v.toFixed(digits)}`
}

/** The human report (tables and notes). */
export function renderReport (r: NpbResult): string {
  const t = table(['impl', 'P', 'time (s)', 'Mop/s', 'verification', 'speedup', 'efficiency', '× reference', '× node-net', 'transport'],
    ['left', 'right', 'right', 'right', 'left', 'right', 'right', 'right', 'right', 'left'])
  const order = (impl: string): number => ['fastsock', 'node-net', 'npb-mpi'].indexOf(impl)
  const rows = [...r.runs].sort((a, b) => order(a.impl) - order(b.impl) || a.np - b.np)
  for (const run of rows) {
    const q = ratiosOf(run, r.runs)
    t.push([LABEL[run.impl] ?? run.impl, run.np, run.seconds.toFixed(3), run.mops.toFixed(2), run.verified ? 'SUCCESSFUL' : 'UNSUCCESSFUL', x(q.speedup), x(q.efficiency), x(q.overReference), x(q.overNodeNet), run.transport])
  }
  const lines = [
    `${r.kernel.toUpperCase()} class ${r.class}${r.options.blocking ? ' (blocking collectives)' : ''}: median of ${r.options.runs} run${r.options.runs > 1 ? 's' : ''} per cell; ` +
      `× reference and × node-net: their time over this row's (above 1: this row is faster). Host: ${r.host.cpus} × ${r.host.cpuModel}, load ${r.host.loadAvg1.toFixed(2)}`,
    t.toString()
  ]
  for (const s of r.skipped) lines.push(`skipped: ${s.impl}, ${s.np} rank${s.np > 1 ? 's' : ''}: ${s.reason}`)
  if (r.errors.length > 0) lines.push('Errors:', ...r.errors.map((e) => `  ${e}`))
  return lines.join('\n') + '\n'
}

/** The --json document. */
export function renderJson (r: NpbResult): string {
  const { reports: _reports, ...rest } = r
  return jsonDocument({
    ...rest,
    runs: r.runs.map((run) => ({ impl: run.impl, kernel: run.kernel, class: run.class, np: run.np, seconds: run.seconds, mops: run.mops, verified: run.verified, transport: run.transport, samples: run.samples, ...ratiosOf(run, r.runs) }))
  })
}
