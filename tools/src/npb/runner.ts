/**
 * One `fastsock npb` run: for each rank count P and implementation (fastsock/mpi on its default
 * chain, the same TypeScript over TCP: `init({ transports: ['tcp'] })`, the Node net baseline,
 * and the NAS reference binaries under Open MPI's mpirun), `runs` jobs; their median time, and
 * the ratios: speedup over P = 1 of the same implementation, parallel efficiency, × the
 * reference and × node-net (the other's time over this one's). A P the kernel refuses
 * (checkProcs) is skipped with the reason; a failed job is recorded and the run goes on.
 *
 * The reference prints its time with two decimals (EP: its CPU time with four), too coarse for
 * IS.A's 0.3 s; its Mop/s has two decimals of a larger number. When a TypeScript job of the same
 * kernel and class ran, its Mop/s × s is the operation count (the same formula), and the
 * reference's time is that count over the reference's median Mop/s.
 */
import * as fs from 'fs'
import * as os from 'os'
import { median } from '../harness/stats'
import { libraryVersion } from '../harness/library'
import { findMpirun, referenceBinary, runNodeJob, runReferenceJob, type JobOutcome } from './jobs'
import type { ImplId, NpbOptions } from './options'
import type { NpbKernel } from './types'

/** One cell of the table: an implementation at P ranks, the medians of its runs. */
export interface NpbRun {
  impl: ImplId
  kernel: string
  class: string
  np: number
  /** Median of the runs' times (s). */
  seconds: number
  /** Median of the runs' Mop/s. */
  mops: number
  /** Every run verified. */
  verified: boolean
  transport: string
  /** Each run's time (s), in order. */
  samples: number[]
}

/** A cell not run, and why. */
export interface Skipped { impl: ImplId, np: number, reason: string }

export interface NpbResult {
  tool: 'fastsock npb'
  version: string
  kernel: string
  class: string
  startedAt: string
  host: { hostname: string, cpus: number, cpuModel: string, node: string, loadAvg1: number }
  options: NpbOptions
  runs: NpbRun[]
  skipped: Skipped[]
  errors: string[]
  /** Each job's NAS report, in the order run. */
  reports: string[]
}

/** The ratios of a cell (null when the run it is compared with is absent). */
export interface Ratios { speedup: number | null, efficiency: number | null, overReference: number | null, overNodeNet: number | null }

/** Speedup over P = 1 (the same implementation), efficiency, × reference and × node-net of `r`. */
export function ratiosOf (r: NpbRun, all: NpbRun[]): Ratios {
  const find = (impl: ImplId, np: number): NpbRun | undefined => all.find((x) => x.impl === impl && x.np === np)
  const one = find(r.impl, 1)
  const speedup = one !== undefined ? one.seconds / r.seconds : null
  const ref = find('npb-mpi', r.np)
  const net = find('node-net', r.np)
  return {
    speedup,
    efficiency: speedup !== null ? speedup / r.np : null,
    overReference: ref !== undefined && r.impl !== 'npb-mpi' ? ref.seconds / r.seconds : null,
    overNodeNet: net !== undefined && r.impl !== 'node-net' ? net.seconds / r.seconds : null
  }
}

export type ProgressFn = (message: string) => void

/** Runs every cell of `opts` with `kernel`; `onReport` sees each job's NAS report. */
export async function runNpb (opts: NpbOptions, kernel: NpbKernel, progress: ProgressFn, onReport: (text: string) => void): Promise<NpbResult> {
  const started = Date.now()
  const cpus = os.cpus()
  const runs: NpbRun[] = []
  const skipped: Skipped[] = []
  const errors: string[] = []
  const reports: string[] = []
  /** NPB's operation count (in millions) of this kernel and class, from a TypeScript job's Mop/s × s. */
  let mop: number | null = null
  for (const np of opts.np) {
    const refusal = kernel.checkProcs(opts.cls, np)
    for (const impl of opts.impls) {
      if (refusal !== null) {
        skipped.push({ impl, np, reason: refusal })
        continue
      }
      let bin: string | null = null
      if (impl === 'npb-mpi') {
        bin = referenceBinary(opts.npbMpiBin as string, kernel.name, opts.cls)
        if (findMpirun() === null) {
          skipped.push({ impl, np, reason: "Open MPI's mpirun is not on PATH (the reference runs under it)" })
          continue
        }
        if (!fs.existsSync(bin)) {
          skipped.push({ impl, np, reason: `no reference binary ${bin} (docs/npb.md: how to build it)` })
          continue
        }
      }
      const outcomes: JobOutcome[] = []
      try {
        for (let i = 0; i < opts.runs; i++) {
          progress(`${kernel.name}.${opts.cls}: ${impl}, ${np} rank${np > 1 ? 's' : ''}, run ${i + 1} of ${opts.runs}...`)
          const o = impl === 'npb-mpi'
            ? await runReferenceJob(np, bin as string, opts.timeoutMs)
            : await runNodeJob(np, { kernel: kernel.name, cls: opts.cls, blocking: opts.blocking, corrupt: opts.corrupt, transports: impl === 'node-net' ? ['tcp'] : null }, opts.launcher, opts.timeoutMs)
          outcomes.push(o)
          const text = `--- ${impl}, ${np} rank${np > 1 ? 's' : ''}, run ${i + 1} of ${opts.runs}\n${o.report}`
          reports.push(text)
          onReport(text)
        }
      } catch (err) {
        errors.push(`${impl}, ${np} ranks: ${(err as Error).message}`)
        continue
      }
      const seconds = outcomes.map((o) => o.seconds)
      if (impl !== 'npb-mpi' && mop === null && outcomes[0].mops > 0) mop = outcomes[0].mops * outcomes[0].seconds
      runs.push({
        impl,
        kernel: kernel.name,
        class: opts.cls,
        np,
        seconds: median(seconds),
        mops: median(outcomes.map((o) => o.mops)),
        verified: outcomes.every((o) => o.verified),
        transport: [...new Set(outcomes.map((o) => o.transport))].join(','),
        samples: seconds
      })
    }
  }
  if (mop !== null) for (const r of runs) if (r.impl === 'npb-mpi' && r.mops > 0) r.seconds = mop / r.mops
  return {
    tool: 'fastsock npb',
    version: libraryVersion(),
    kernel: kernel.name,
    class: opts.cls,
    startedAt: new Date(started).toISOString(),
    host: { hostname: os.hostname(), cpus: cpus.length, cpuModel: cpus[0]?.model ?? 'unknown', node: process.version, loadAvg1: os.loadavg()[0] },
    options: opts,
    runs,
    skipped,
    errors,
    reports
  }
}
