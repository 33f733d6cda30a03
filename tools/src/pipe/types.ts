/**
 * The data `fastsock pipe` measures and reports: options, one record per measured cell, and the
 * whole result as written by `--json`. All times carry their unit in the field name.
 */

import type { ChannelSpec, FitRow, Quantiles, RowBase } from '../harness/types'

export type { ChannelSpec, FitRow, Quantiles, RowBase }

/** Which measurements to run. */
export type PipeMode = 'pingpong' | 'stream' | 'typed'

/** A typed-array transfer method (typed mode). */
export type TypedMethod = 'fastsock' | 'raw' | 'v8' | 'json'

/** The element types typed mode sends. */
export type ElementType = 'Uint8Array' | 'Int32Array' | 'Float64Array'

/** The options of one `fastsock pipe` run, after parsing and presets. */
export interface PipeOptions {
  modes: PipeMode[]
  /** Channel selectors (`unix`, `tcp`, `net-tcp`, ...), or null for every available one. */
  transports: string[] | null
  /** Ping-pong message sizes in bytes, ascending (perturbations included). */
  sizes: number[]
  /** Stream mode write sizes in bytes. */
  streamSizes: number[]
  /** Typed mode payload sizes in bytes (per array). */
  typedBytes: number[]
  typedTypes: ElementType[]
  perturbations: boolean
  quick: boolean
  /**
   * Time budget per ping-pong size and channel (ms), spent in `rounds` slices interleaved across
   * the channels, so that every channel sees the same machine states.
   */
  budgetMs: number
  rounds: number
  /** CPU placement of the two processes (see pinning.ts); auto = split when possible. */
  pin: 'auto' | 'split' | 'same' | 'none'
  minIters: number
  maxIters: number
  /** Warm-up per connection before the first size: round trips (capped by warmupMs). */
  warmupIters: number
  warmupMs: number
  /** Time budget per stream size (ms). */
  streamMs: number
  /** Time budget per typed-array cell (ms), with at least typedMinIters arrays. */
  typedMs: number
  typedMinIters: number
  /**
   * The `shmPollUs` option of the `fastsock:shm` row (both ends), µs; undefined: none set, what
   * a user gets by default. `fastsock:shm (no polling)` (shmPollUs 0) is measured beside it.
   */
  shmPollUs: number | undefined
  /** Watchdog per measured cell (ms): a cell that makes no progress for this long fails. */
  timeoutMs: number
  /** Run NPtcp: true, false, or null = when found on PATH and not --quick. */
  nptcp: boolean | null
  json: string | null
  csv: string | null
  plot: string | null
  progress: boolean
}

/** One ping-pong size on one channel. */
export interface PingPongRow extends RowBase {
  bytes: number
  iterations: number
  /** Half round-trip latency RTT/2 in µs. */
  halfRttUs: Quantiles
  /** n / median(RTT/2), MB/s (10^6 bytes/s). */
  mbPerSec: number
  gbitPerSec: number
  /** CPU time (user + sys) of both processes per message (= per half round trip), µs. */
  cpuUsPerMsg: number
  cpuClientUs: number
  cpuServerUs: number
  /** memcpy of the same size in this process, ns (native limit), or null without the addon. */
  memcpyNs: number | null
  memcpyMbPerSec: number | null
}

/** One streaming size on one channel. */
export interface StreamRow extends RowBase {
  bytes: number
  /** Writes in the timed runs (all rounds). */
  messages: number
  /** Time of the timed runs, first write to ack, summed over the rounds. */
  elapsedMs: number
  rounds: number
  /** One-way bandwidth, MB/s (10^6 bytes/s), and Gbit/s. */
  mbPerSec: number
  gbitPerSec: number
  /** Messages per second. */
  msgPerSec: number
  cpuUsPerMsg: number
}

/** One typed-array cell: a method, an element type and a payload size. */
export interface TypedRow extends RowBase {
  method: TypedMethod
  elementType: ElementType
  elements: number
  /** Payload bytes per array. */
  bytes: number
  iterations: number
  /** One-way time per array (RTT/2), µs: encode + transfer + decode into the peer's array. */
  perArrayUs: Quantiles
  mbPerSec: number
  /** median time of JSON / this method, and of v8.serialize / this method (>1: this is faster). */
  speedupVsJson: number | null
  speedupVsV8: number | null
  cpuUsPerArray: number
}

/** NetPIPE's NPtcp between two C processes over TCP loopback. */
export interface NptcpRow {
  bytes: number
  /** Half round trip, µs, as NPtcp reports it: mean of `repeats` round trips, best of its trials. */
  halfRttUs: number
  mbPerSec: number
}

/** The cross-core placement probe: busy-polled shared-memory ping-pong between two threads. */
export interface PlacementProbe {
  /** Half round trip, ns (median of several runs). */
  halfRttNs: number
  /**
   * near: ~50 ns (cores share a cache); far: ~200 ns (across core complexes or sockets);
   * busy: runs of µs or more, a spinning thread was preempted (other load on the machine).
   */
  state: 'near' | 'far' | 'busy' | 'unknown'
  runsNs: number[]
}

/** Headline: fastsock's best rung against Node `net` over TCP loopback, per size. */
export interface HeadlineRow {
  bytes: number
  best: string
  /** net:tcp median RTT/2 ÷ best fastsock median RTT/2 (>1: fastsock is faster). */
  latencyRatio: number | null
  /** Same against net:unix. */
  latencyRatioVsUnix: number | null
  /** The best rung that does not spin (no shm polling), and its latency ratio vs net:tcp. */
  bestNoPoll: string | null
  latencyRatioNoPoll: number | null
  /** Streaming bandwidth, best fastsock ÷ net:tcp (>1: fastsock moves more), when streamed. */
  streamBandwidthRatio: number | null
}

/** Everything one run produced (the `--json` document). */
export interface PipeResult {
  tool: 'fastsock pipe'
  version: string
  startedAt: string
  durationMs: number
  host: {
    hostname: string
    cpus: number
    cpuModel: string
    kernel: string
    node: string
    loadAvg1: number
    /** Busy fraction of all CPUs over 300 ms before the run, while this process waited (0..1). */
    otherCpuLoad: number
  }
  options: PipeOptions
  native: {
    loaded: boolean
    loadError: string | null
    /** Busy-poll floor: half round trip between two threads, ns (best of the probe's runs). */
    spinHalfRttNs: number | null
    memcpy: Array<{ bytes: number, ns: number, mbPerSec: number }>
  }
  placement: { before: PlacementProbe | null, after: PlacementProbe | null }
  /** Where the two processes ran. */
  pinning: { requested: string, mode: 'split' | 'same' | 'none', selfCpu: number | null, peerCpu: number | null, note: string }
  fastsock: import('../harness/library').FastsockReport
  channels: Array<ChannelSpec & { actual: string | null, error: string | null }>
  pingpong: PingPongRow[]
  fits: FitRow[]
  stream: StreamRow[]
  typed: TypedRow[]
  nptcp: { ran: boolean, note: string, repeats: number, rows: NptcpRow[] }
  headline: HeadlineRow[]
  warnings: string[]
  errors: string[]
}
