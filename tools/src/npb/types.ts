/**
 * The contract between `fastsock npb`'s driver and its kernels (tools/src/npb/kernels/<name>.ts).
 * A kernel runs on every rank of a job over fastsock/mpi's public API; rank 0's result is what
 * the driver prints in the NAS reference's report format and collects for the tables.
 */
import type { Comm } from 'fastsock/mpi'

/** fastsock/mpi as loaded at run time by the driver (tools/src/harness/library.ts loadMpi: the library this tool was pinned to); kernels take SUM, MAX, waitAll ... from it, never by a runtime import. */
export type MpiModule = typeof import('fastsock/mpi')

/** NPB's problem classes (NPB 3.4: S, W, A, B, C; the larger ones are not offered here). */
export type NpbClass = 'S' | 'W' | 'A' | 'B' | 'C'

/** The kernels of the NAS Parallel Benchmarks that `fastsock npb` runs. */
export type KernelName = 'cg' | 'ep' | 'ft' | 'is' | 'mg'

/** How a kernel is asked to run. */
export interface KernelOptions {
  /** Use the blocking forms (`allreduceSync`, `sendSync`/`recvSync`, ...) where they exist, instead of the awaited ones. */
  blocking: boolean
  /** Change one computed value before verification (the test that verification can fail): the result must be UNSUCCESSFUL. */
  corrupt: boolean
}

/** One rank's result; only rank 0's is reported. */
export interface KernelResult {
  /** The size as NPB prints it: `14000` (CG's na), `2^28` pairs (EP), `256x256x128` (FT, MG), `2^23` keys (IS). */
  size: string
  /** Iterations of the timed loop as NPB prints them (`Iterations =`). */
  iterations: number
  /** Seconds of the timed region only (NPB's timer: the maximum over ranks, as the reference reports it). */
  seconds: number
  /** Mop/s total by NPB's formula for the kernel and class. */
  mops: number
  /** NPB's verification outcome against the class' reference values and tolerance. */
  verified: boolean
  /**
   * The kernel's own report lines, in the reference's format (e.g. ` Zeta is  0.1713023505403E+02`,
   * ` L2 Norm is  0.2433365309069E-05`, EP's sums and counts, FT's checksums per iteration,
   * IS's partial verification): printed between the header and `Verification =`.
   */
  lines: string[]
}

/** A kernel: one module per kernel exports `kernel` of this type. */
export interface NpbKernel {
  name: KernelName
  /** NPB's full name, for the report header (`CG Benchmark`, ...). */
  title: string
  /** Null when `np` ranks can run class `cls`; otherwise why not (e.g. "FT needs a power of two ranks"). */
  checkProcs (cls: NpbClass, np: number): string | null
  /** Runs on one rank: set-up (untimed), the timed region, verification. Every rank calls it. */
  run (mpi: MpiModule, comm: Comm, cls: NpbClass, opts: KernelOptions): Promise<KernelResult>
}

/**
 * Set to 1: rank 0's report adds how its timed region divides between the kernel's messages and
 * its compute (as NPB's timer.flag file does): MG's comm3 and norm allreduces, CG's row sums and
 * transposes with the sums' percentiles (docs/npb.md).
 */
export const TIMERS_ENV = 'FASTSOCK_NPB_TIMERS'
