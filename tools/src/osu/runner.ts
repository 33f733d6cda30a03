/**
 * One `fastsock osu` run: for each rank count P, one job per implementation, in this order:
 * fastsock/mpi on its default chain, the same API over TCP (`init({ transports: ['tcp'] })`, the
 * Node net baseline), and Open MPI's C (compiled with mpicc, run with mpirun; skipped with the
 * reason when absent). Then OSU's figures, JMB's sextiles and fits, and the ratios.
 * A failed job is recorded in `errors` and the run goes on with the next one.
 */
import * as os from 'os'
import { libraryVersion } from '../harness/library'
import { runNodeJob } from './jobs'
import { defaultJitWarmupMs } from './options'
import { buildNative, detectOpenMpi, runNative, type OpenMpi } from './native'
import { fitSeries, ratios, toRow } from './summary'
import type { ImplId, ImplRun, JobConfig, OsuOptions, OsuResult, OsuRow, RawRow } from './types'

/** A line of progress (stderr, by the command). */
export type ProgressFn = (message: string) => void

function jobConfig (opts: OsuOptions, impl: ImplId, np: number): Omit<JobConfig, 'out'> {
  return {
    benchmark: opts.benchmark,
    sizes: opts.sizes,
    iterations: opts.iterations,
    warmup: opts.warmup,
    iterationsLarge: opts.iterationsLarge,
    warmupLarge: opts.warmupLarge,
    largeBytes: opts.largeBytes,
    window: opts.window,
    measurements: opts.measurements,
    transports: impl === 'node-net' ? ['tcp'] : null,
    algorithm: impl === 'openmpi' ? null : opts.algorithm,
    jitWarmupMs: impl === 'openmpi' ? 0 : opts.jitWarmupMs ?? defaultJitWarmupMs(np, os.availableParallelism()),
    awaited: opts.awaited
  }
}

/** The label of an implementation in tables and plots. */
export function implLabel (impl: ImplId, openMpiVersion: string | null, transports?: Record<string, string>): string {
  if (impl === 'openmpi') return `Open MPI${openMpiVersion !== null ? ` ${openMpiVersion}` : ''} (C)`
  if (impl === 'node-net') return 'fastsock/mpi over tcp (Node net)'
  const used = [...new Set(Object.values(transports ?? {}))]
  return `fastsock/mpi${used.length > 0 ? ` (${used.join(', ')})` : ''}`
}

/** Runs every job of `opts` and derives the figures. `env`: where mpicc/mpirun are looked for. */
export async function runOsu (opts: OsuOptions, progress: ProgressFn, env: NodeJS.ProcessEnv = process.env): Promise<OsuResult> {
  const started = Date.now()
  const cpus = os.cpus()
  const warnings: string[] = []
  const errors: string[] = []
  const runs: ImplRun[] = []
  const rows: OsuRow[] = []
  let ompi: OpenMpi = { mpicc: null, mpirun: null, version: null, skipped: 'not asked for (--impls)' }
  let bin: string | null = null
  if (opts.impls.includes('openmpi')) {
    ompi = await detectOpenMpi(env)
    if (ompi.skipped === null) {
      try {
        bin = await buildNative(ompi, env)
      } catch (err) {
        ompi = { ...ompi, skipped: `mpicc could not build the C program: ${(err as Error).message}` }
      }
    }
    if (ompi.skipped !== null) warnings.push(`Open MPI (C) skipped: ${ompi.skipped}`)
  }
  for (const np of opts.np) {
    for (const impl of opts.impls) {
      const config = jobConfig(opts, impl, np)
      const run: ImplRun = { impl, np, algorithm: config.algorithm, label: implLabel(impl, ompi.version), transports: {}, ran: false, skipped: null, error: null, durationMs: 0, jitWarmupPasses: null }
      runs.push(run)
      if (impl === 'openmpi' && (ompi.skipped !== null || bin === null)) {
        run.skipped = ompi.skipped ?? 'not built'
        continue
      }
      const t0 = Date.now()
      progress(`${opts.benchmark}: ${run.label}, ${np} ranks, ${opts.sizes.length} sizes...`)
      const onRow = (r: RawRow): void => progress(`  ${run.label} np ${np}: ${r.bytes} B done`)
      try {
        let raw: RawRow[]
        if (impl === 'openmpi') {
          raw = await runNative(ompi, bin as string, np, { ...config, out: '' }, opts.timeoutMs, onRow)
          run.transports = { '*': 'Open MPI default (vader shared memory on one host)' }
        } else {
          const res = await runNodeJob(np, config, opts.timeoutMs, onRow)
          raw = res.rows
          run.transports = res.transports
          run.jitWarmupPasses = res.jitWarmupPasses
          run.label = implLabel(impl, ompi.version, res.transports)
          const used = Object.values(res.transports)
          if (impl === 'node-net' && used.some((t) => t !== 'tcp')) warnings.push(`the Node net baseline ran over ${used.join(', ')}, not tcp`)
        }
        for (const r of raw) {
          if (r.skipped !== undefined) warnings.push(`${run.label}, ${np} ranks, ${r.bytes} B: skipped: ${r.skipped}`)
          else rows.push(toRow(opts.benchmark, impl, np, config.algorithm, opts.window, r))
        }
        run.ran = true
      } catch (err) {
        run.error = (err as Error).message
        errors.push(`${run.label}, ${np} ranks: ${run.error}`)
      }
      run.durationMs = Date.now() - t0
    }
  }
  const labelOf = (impl: ImplId): string => runs.find((r) => r.impl === impl && r.ran)?.label ?? implLabel(impl, ompi.version)
  const transportOf = (impl: ImplId): string => {
    const t = runs.find((r) => r.impl === impl && r.ran)?.transports ?? {}
    return [...new Set(Object.values(t))].join(',') || (impl === 'openmpi' ? 'vader' : 'unknown')
  }
  return {
    tool: 'fastsock osu',
    version: libraryVersion(),
    benchmark: opts.benchmark,
    unit: opts.benchmark === 'bw' || opts.benchmark === 'bibw' || opts.benchmark === 'mbw_mr' ? 'MB/s' : 'us',
    startedAt: new Date(started).toISOString(),
    durationMs: Date.now() - started,
    host: { hostname: os.hostname(), cpus: cpus.length, cpuModel: cpus[0]?.model ?? 'unknown', kernel: `${os.type()} ${os.release()}`, node: process.version, loadAvg1: os.loadavg()[0] },
    options: opts,
    openMpi: { version: ompi.version, binary: bin, note: ompi.skipped ?? `mpirun ${ompi.mpirun ?? ''}, program built with ${ompi.mpicc ?? ''} -O2` },
    runs,
    rows,
    ratios: ratios(opts.benchmark, rows),
    fits: fitSeries(opts.benchmark, rows, labelOf, transportOf),
    warnings,
    errors
  }
}
