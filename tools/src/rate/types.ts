/**
 * The data `fastsock rate` measures and reports: the run configuration (what `--config` reads and
 * the JSON output embeds), one row per measured cell, the round-trip percentiles, and the whole
 * result as written by `--json`. Times carry their unit in the field name; MB = 10^6 bytes.
 */
import type { ChannelSpec } from '../harness/types'
import type { FastsockReport } from '../harness/library'

/** msgrate's patterns, and Observatory's bidirectional throughput. */
export type RatePattern = 'single-direction' | 'pair-based' | 'all-start' | 'bidirectional'

/** The patterns in the order a run measures them. */
export const PATTERNS: readonly RatePattern[] = ['single-direction', 'pair-based', 'all-start', 'bidirectional']

/**
 * Who sends in a cell. single-direction: `fan-out` (the measuring process sends, the peers
 * receive: one sender, many receivers) or `fan-in` (the reverse); the other patterns send both
 * ways (`both`).
 */
export type Direction = 'fan-out' | 'fan-in' | 'both'

/** The single-direction directions, in the order a run measures them. */
export const DIRECTIONS: ReadonlyArray<Exclude<Direction, 'both'>> = ['fan-out', 'fan-in']

/**
 * One run's configuration: every field of `--config run.json` (all optional there; the schema
 * is in schema.ts and docs/rate-config.md), resolved with the defaults or the --quick preset.
 */
export interface RateConfig {
  patterns: RatePattern[]
  /** The single-direction directions to measure. */
  directions: Array<Exclude<Direction, 'both'>>
  /** Message sizes in bytes (1 .. 65536), ascending. */
  sizes: number[]
  /** Numbers of peer processes per cell, ascending; the run starts max(peers) processes. */
  peers: number[]
  /** Messages in flight per peer and direction: one window per iteration (osu_mbw_mr: 64). */
  window: number
  /** Cache state of each cell: false = warm, true = cold (msgrate's cache invalidation). */
  coldCache: boolean[]
  /**
   * Timed iterations per warm cell and channel (one window per peer each): as many as fit in
   * `budgetMs` (timed by the warm-up), between `minIterations` and `iterations`.
   */
  iterations: number
  minIterations: number
  budgetMs: number
  /** Timed iterations per cold cell and channel (each one flushes the caches first). */
  coldIterations: number
  /** Untimed iterations per cell and channel before the timed ones. */
  warmupIterations: number
  /**
   * Once per run, before the first cell: ms of untimed iterations per channel, of the first
   * cell's pattern (warm, every peer) over every message size of the run in turn, so that V8 has
   * optimized every channel's data path before anything is timed (it does after some thousands
   * of calls: about 2,000 iterations of 64 messages here); 0: none.
   */
  jitWarmupMs: number
  /** The timed iterations are run in this many slices, interleaved across the channels. */
  rounds: number
  /** bidirectional: messages each side sends per peer in one timed run (windows back to back). */
  bidirectionalMessages: number
  /**
   * Bytes of the buffer touched between cold iterations, or null: 2 × the last-level cache
   * (/sys/devices/system/cpu/cpu0/cache), at most `maxCacheBytes`.
   */
  cacheBytes: number | null
  maxCacheBytes: number
  /** Round trips per channel and size for the RTT percentiles (0: no RTT phase). */
  rttIterations: number
  /**
   * `shmPollUs` of the `fastsock:shm` channel (µs, the cap of its adaptive busy-polling window),
   * as `fastsock pipe --shm-poll-us`; null: the library default, what a user gets with no option
   * set. `fastsock:shm (no polling)` (shmPollUs 0) is measured beside it.
   */
  shmPollUs: number | null
  /** Channel selectors as `fastsock pipe --transports` takes them, or null for all. */
  transports: string[] | null
  /** split: the measuring process on the first CPU, peers spread over the others (and it); none: the scheduler. */
  pin: 'auto' | 'split' | 'none'
  /** Watchdog per measured slice (ms). */
  timeoutMs: number
  quick: boolean
}

/** The output options (not part of the run's configuration). */
export interface RateOutput {
  json: string | null
  csv: string | null
  plot: string | null
  progress: boolean
}

/** Observatory's phases, wall-clock ms summed over the run (or over a row's cell). */
export interface Phases {
  /** Peer processes, library, buffers, cache probe. */
  initializationMs: number
  /** Listeners on every peer and one connection per peer and channel. */
  connectionMs: number
  /** Per cell: the peers' configuration, send buffers. */
  preparationMs: number
  /** The run's JIT warm-up (jitWarmupMs per channel), then per cell and channel the untimed iterations. */
  warmupMs: number
  /** The timed iterations (cache flushes and barriers excluded: those are preparation). */
  operationMs: number
  /** Closing the connections and stopping the peers. */
  cleanupMs: number
}

/** The protocol overhead of a rung, as far as it can be observed from user space. */
export interface Overhead {
  /**
   * read/write-family system calls of every process (syscr + syscw of /proc/<pid>/io, which
   * includes shm's eventfd doorbells) per message delivered; null where /proc is unreadable.
   */
  syscallsPerMsg: number | null
  /** verbs: frames the measuring process's endpoints sent (eager + rendezvous + credit) per message delivered; null elsewhere. */
  framesPerMsg: number | null
  /** What was observable on this rung, in a sentence. */
  note: string
}

/** One measured cell on one channel. */
export interface RateRow {
  /** The channel asked for, as `fastsock pipe` names it: 'fastsock:shm', 'net:tcp', ... */
  channel: string
  /** The transport that actually carried the bytes. */
  transport: string
  /** channel, plus `→actual` when another transport ran. */
  label: string
  pattern: RatePattern
  direction: Direction
  bytes: number
  peers: number
  window: number
  coldCache: boolean
  /** Timed iterations (bidirectional: timed runs). */
  iterations: number
  /** Messages counted as msgrate counts them: every send and every receive, all processes. */
  messages: number
  /** Messages delivered end to end (each one was sent once and received once). */
  delivered: number
  /** Timed time (operation phase of this cell), ms. */
  elapsedMs: number
  /** msgrate's message rate: (sends + receives) / s. */
  msgPerSec: number
  /** Messages delivered per second (osu_mbw_mr's figure; half of msgPerSec). */
  deliveredPerSec: number
  /** Payload delivered, MB/s (10^6 bytes/s). */
  mbPerSec: number
  /** CPU time (user + sys) of the measuring process and all peers in this cell, per message delivered, µs. */
  cpuUsPerMsg: number
  /**
   * The measuring process's time posting its sends (cork, the writes, uncork) per message it
   * sent, µs; null when it sends none (fan-in). The rest of the timed time is waiting.
   */
  postUsPerMsg: number | null
  /** Share of the timed time spent posting sends (0..1); 1 - postShare is waiting for peers. */
  postShare: number
  overhead: Overhead
  /** msgPerSec ÷ net:tcp's msgPerSec in the same cell of the same run, or null. */
  ratioVsNetTcp: number | null
  /** cold rows: msgPerSec ÷ the warm row's msgPerSec of the same cell and channel, or null. */
  coldOverWarm: number | null
  /** Phases of this cell on this channel, ms. */
  preparationMs: number
  warmupMs: number
}

/** Round-trip times of one channel and size (Observatory's latency phase), µs. */
export interface RttRow {
  channel: string
  transport: string
  label: string
  bytes: number
  samples: number
  p50Us: number
  p90Us: number
  p99Us: number
  p999Us: number
  minUs: number
  meanUs: number
}

/** One target of the issue, checked against this run. */
export interface TargetCheck {
  target: string
  /** null: the run did not measure what the target needs. */
  met: boolean | null
  detail: string
}

/** A channel of the run, with what actually ran and how long its connections took. */
export type RateChannel = ChannelSpec & {
  actual: string | null
  error: string | null
  connectMs: number | null
  /** Iterations of the run's JIT warm-up on this channel (0: none). */
  jitWarmupIterations: number
}

/** Everything one run produced (the `--json` document). */
export interface RateResult {
  tool: 'fastsock rate'
  version: string
  startedAt: string
  durationMs: number
  host: { hostname: string, cpus: number, cpuModel: string, kernel: string, node: string, loadAvg1: number, otherCpuLoad: number }
  /** The configuration this run ran: `--config` of this document reproduces it. */
  config: RateConfig
  cache: { llcBytes: number | null, llcSource: string, flushBytes: number, note: string }
  pinning: { mode: 'split' | 'none', hubCpu: number | null, peerCpus: Array<number | null>, note: string }
  /** Peer processes started (max of config.peers) and whether they outnumber the CPUs. */
  processes: { peers: number, oversubscribed: boolean }
  fastsock: FastsockReport
  channels: RateChannel[]
  phases: Phases
  rows: RateRow[]
  rtt: RttRow[]
  /** The targets, checked on this run's rows. */
  targets: TargetCheck[]
  warnings: string[]
  errors: string[]
}
