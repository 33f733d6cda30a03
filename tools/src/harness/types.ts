/**
 * The shapes every tool shares: the channels measured (a fastsock rung or a plain `net`
 * baseline), sample quantiles, and the fitted T(n) = ts + tb·n. Times carry their unit in the
 * field name.
 */

/** A channel between the two processes: a fastsock rung or a plain `net` baseline. */
export interface ChannelSpec {
  /** 'fastsock:shm', 'fastsock:shm (no polling)', 'fastsock:unix', 'fastsock:tcp', 'net:tcp', 'net:unix' */
  id: string
  kind: 'fastsock' | 'net'
  /** The rung asked for (fastsock) or the socket family (net). */
  transport: string
  /** shm only: the `shmPollUs` option of both ends (cap of the adaptive polling window), µs; undefined: the default. */
  shmPollUs?: number
}

/** Quantiles of one sample set, in µs. */
export interface Quantiles {
  median: number
  /** The 1/6 quantile (JMB's choice: robust against outliers, close to the best case). */
  sextile: number
  p99: number
  min: number
  mean: number
}

/** Common fields of every measured row. */
export interface RowBase {
  /** The channel asked for, e.g. 'fastsock:shm'. */
  channel: string
  /** The transport that actually carried the bytes (socket.transport after 'connect'). */
  transport: string
  /** The label used in tables and plots: channel, plus `→actual` when it differs. */
  label: string
}

/** T(n) = ts + tb·n fitted to the median RTT/2 of one channel. */
export interface FitRow extends RowBase {
  /** Ordinary least squares: start-up time ts (µs), per-byte time tb (ns/byte), R². */
  tsUs: number
  tbNsPerByte: number
  r2: number
  /** Weighted by 1/T² (relative residuals), which keeps small sizes from being ignored. */
  tsUsRelative: number
  tbNsPerByteRelative: number
  points: number
}
