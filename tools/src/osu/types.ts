/**
 * The data of `fastsock osu`: the benchmarks, the options after parsing, the configuration a job
 * of ranks runs, the raw rows a job reports, and the whole result `--json` writes. Every time
 * carries its unit in the field name; MB = 10^6 bytes.
 */
import type { FitRow, Quantiles } from '../harness/types'

/** OSU's point-to-point benchmarks (issue 17). */
export const P2P_BENCHMARKS = ['latency', 'bw', 'bibw', 'mbw_mr'] as const
/** OSU's collective benchmarks (issue 18). */
export const COLL_BENCHMARKS = ['allreduce', 'bcast', 'reduce', 'allgather', 'alltoall', 'gather', 'scatter', 'barrier'] as const
/** Every benchmark `fastsock osu` runs. */
export const BENCHMARKS = [...P2P_BENCHMARKS, ...COLL_BENCHMARKS] as const

export type P2pBenchmark = typeof P2P_BENCHMARKS[number]
export type CollBenchmark = typeof COLL_BENCHMARKS[number]
export type Benchmark = typeof BENCHMARKS[number]

/** The implementations measured side by side in one run. */
export type ImplId = 'fastsock' | 'node-net' | 'openmpi'

/** The sizes and iteration counts of a run (OSU's), shared by the options and each job. */
export interface Sweep {
  /** Message sizes in bytes, ascending. */
  sizes: number[]
  /** Timed iterations and warm-up iterations for sizes ≤ `largeBytes`, and above it. */
  iterations: number
  warmup: number
  iterationsLarge: number
  warmupLarge: number
  largeBytes: number
  /** Messages per window (bw, bibw, mbw_mr): OSU's 64. */
  window: number
  /** The most measurements the sextile is taken over (JMB: 150): batches of timed iterations. */
  measurements: number
}

/**
 * What one job of P ranks measures: the same for the Node ranks (JSON in the environment
 * variable FASTSOCK_OSU_CONFIG) and, as arguments, for the C program.
 */
export interface JobConfig extends Sweep {
  benchmark: Benchmark
  /** fastsock rungs for the mesh (null: fastsock's default chain; ['tcp']: the Node net baseline). */
  transports: string[] | null
  /** Collectives: force this algorithm (H4's names), or null for the library's choice. */
  algorithm: string | null
  /**
   * The Node ranks' JIT warm-up before the first timed size, ms (0: none): untimed passes over
   * every size until rank 0 has spent this long (rank.ts jitWarmup). The C program ignores it.
   */
  jitWarmupMs: number
  /**
   * latency: the Node ranks time awaited send()/recv() (the event loop's tier) instead of the
   * blocking sendSync()/recvSync() that OSU's MPI_Send/MPI_Recv are. The C program ignores it.
   */
  awaited: boolean
  /** Where rank 0 appends its JSON lines (one per size, then a final `done` line). */
  out: string
}

/**
 * One size as a job reports it (rank 0): the same shape from the Node ranks and the C program.
 * `avgUs` is the time of one iteration: latency, RTT/2; bw/bibw/mbw_mr, one window with its ack
 * (rank 0's clock); collectives, one call averaged over the ranks, `minUs`/`maxUs` the fastest
 * and slowest rank's average (OSU's -f columns). `samplesUs`: JMB's measurements, the mean time
 * of each batch of consecutive timed iterations, same unit (collectives: the slowest rank).
 */
export interface RawRow {
  bytes: number
  iterations: number
  warmup: number
  avgUs: number
  minUs: number
  maxUs: number
  /** User + system CPU time of all ranks over the timed loop, µs (absent from older outputs). */
  cpuUs?: number
  samplesUs: number[]
  /** Collectives with a forced algorithm that cannot serve this size: why (the size is left out). */
  skipped?: string
}

/** One size of one implementation, with OSU's figures and JMB's. */
export interface OsuRow {
  impl: ImplId
  /** Ranks in the job. */
  np: number
  /** Forced collective algorithm, or null (the library's choice). */
  algorithm: string | null
  bytes: number
  iterations: number
  warmup: number
  /**
   * OSU's main figure: latency benchmarks and collectives, µs (`Latency (us)`, `Avg
   * Latency(us)`); bw/bibw/mbw_mr, MB/s (`Bandwidth (MB/s)`, `MB/s`).
   */
  value: number
  /** Collectives with -f: the fastest and slowest rank's average, µs (else equal to value). */
  minUs: number
  maxUs: number
  /** mbw_mr (and bw/bibw): messages per second, all pairs (`Messages/s`). */
  msgPerSec: number | null
  /**
   * CPU time (user + system) of all ranks per message, µs: latency per one-way message (RTT/2),
   * bw/bibw/mbw_mr per message sent, collectives per call. Spinning buys latency with CPU.
   */
  cpuUsPerMsg: number | null
  /** JMB: quantiles of the batch measurements (µs per iteration), sextile first. */
  jmb: Quantiles & { measurements: number }
  /** The sextile expressed in the benchmark's unit (µs, or MB/s for the bandwidth benchmarks). */
  sextileValue: number
}

/** What happened to one implementation in one job. */
export interface ImplRun {
  impl: ImplId
  np: number
  algorithm: string | null
  /** Human label: 'fastsock/mpi (shm)', 'fastsock/mpi over tcp (Node net)', 'Open MPI 4.1.4 (C)'. */
  label: string
  /** The transports the ranks' connections actually used (rank 0's view: peer → transport). */
  transports: Record<string, string>
  ran: boolean
  /** Why it did not run (mpicc absent, ...), or null. */
  skipped: string | null
  error: string | null
  durationMs: number
  /** The Node ranks' untimed JIT warm-up passes over every size (0: none; null: Open MPI). */
  jitWarmupPasses: number | null
}

/** Per size: the ratios the targets of issues 17 and 18 are stated in. */
export interface RatioRow {
  np: number
  algorithm: string | null
  bytes: number
  /**
   * fastsock ÷ Open MPI of the benchmark's figure: for latencies the slowdown (target ≤ 3 or 4),
   * for bandwidths the fraction of Open MPI's (target ≥ 0.7).
   */
  fastsockOverOpenMpi: number | null
  /**
   * How many times faster fastsock is than the same API over Node net: latency Node-net ÷
   * fastsock; bandwidth fastsock ÷ Node-net (target ≥ 20 for p2p latency, ≥ 10 for collectives).
   */
  speedupVsNodeNet: number | null
}

/** JMB's T(n) = ts + tb·n (collectives: T(n,p) at this p) fitted to the sextiles of one series. */
export interface OsuFit extends FitRow {
  impl: ImplId
  np: number
  algorithm: string | null
}

/** The options of one `fastsock osu` run, after parsing and presets. */
export interface OsuOptions extends Sweep {
  benchmark: Benchmark
  /** Rank counts to run, each a job per implementation. */
  np: number[]
  /** See JobConfig.jitWarmupMs; null: each job's default (options.ts defaultJitWarmupMs: 3 s per rank per CPU). */
  jitWarmupMs: number | null
  /** See JobConfig.awaited. */
  awaited: boolean
  /** OSU's -f: print min/max/iterations columns. */
  full: boolean
  quick: boolean
  /** Which implementations to run. */
  impls: ImplId[]
  algorithm: string | null
  /** No progress from a job for this long ends it with an error (ms). */
  timeoutMs: number
  json: string | null
  plot: string | null
}

/** Everything one run produced (the `--json` document). */
export interface OsuResult {
  tool: 'fastsock osu'
  version: string
  benchmark: Benchmark
  /** The figure's unit: 'us' for latencies, 'MB/s' for bandwidths. */
  unit: 'us' | 'MB/s'
  startedAt: string
  durationMs: number
  host: { hostname: string, cpus: number, cpuModel: string, kernel: string, node: string, loadAvg1: number }
  options: OsuOptions
  openMpi: { version: string | null, binary: string | null, note: string }
  runs: ImplRun[]
  rows: OsuRow[]
  ratios: RatioRow[]
  fits: OsuFit[]
  warnings: string[]
  errors: string[]
}
