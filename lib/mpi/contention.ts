/**
 * Whether this host's CPUs look contended, as the ranks' synchronous spins see it: a spin that
 * returns well after its bound was preempted (another task held the CPU), so spinning there only
 * delays whoever the rank waits for. While contended, every synchronous wait of this process
 * spins with sched_yield() between its polls (the socket's `yield` option, Open MPI's
 * mpi_yield_when_idle), which the device otherwise turns on only when the launcher puts more
 * ranks on the host than CPUs. The pause starts at PAUSE_MS and doubles while preemption recurs
 * within RECUR_MS of its end, up to MAX_PAUSE_MS (the native progress engine's back-off,
 * csrc/progress.cc, with longer times: a rank's waits are longer than a socket's).
 *
 * Measured by `node bench/mpi-cold-blocks.js --burn 2` (docs/mpi.md, "Polling"): no block of
 * 100 round trips over 1 ms RTT/2 beside two CPU-bound processes, where runs of them took
 * 2.1-2.8 ms before.
 *
 * Times are performance.now() values (ms) and µs, as named.
 */

/** A spin this much later than its bound (µs) was preempted. */
const LATE_US = 500
const PAUSE_MS = 100
const MAX_PAUSE_MS = 2000
const RECUR_MS = 1000

let until = 0
let pause = PAUSE_MS
let marks = 0

/** A spin that started at `startMs` with a bound of `boundUs` ended (with nothing) at `nowMs`. */
export function spinEnded (startMs: number, boundUs: number, nowMs: number): void {
  if ((nowMs - startMs) * 1000 - boundUs <= LATE_US) return
  pause = nowMs < until + RECUR_MS ? Math.min(pause * 2, MAX_PAUSE_MS) : PAUSE_MS
  until = nowMs + pause
  marks++
}

/**
 * True while the CPUs look contended (see the module comment). Reads the clock only once
 * contention was ever seen (`nowMs`: performance.now(), read here when not given).
 */
export function contended (nowMs?: number): boolean {
  return until !== 0 && (nowMs ?? performance.now()) < until
}

/** @internal how many times contention was seen (tests, reports). */
export function contentionMarks (): number { return marks }
