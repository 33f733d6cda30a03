'use strict'
/**
 * Shared by the benches whose slow events bench/tail-sched.js reads (bench/tail-causes.js,
 * bench/_http-latency-client.js): times on CLOCK_MONOTONIC, the clock of process.hrtime and of
 * `perf record -k mono`, the same in every process of the host.
 */
const fs = require('fs')
const path = require('path')
const { performance } = require('perf_hooks')

/** performance.now() (ms since this process's timeOrigin) → CLOCK_MONOTONIC ns. */
const monoOffsetNs = Number(process.hrtime.bigint()) - performance.now() * 1e6
function monoNs (perfMs) { return Math.round(perfMs * 1e6 + monoOffsetNs) }

/**
 * When FASTSOCK_TAIL_LOG names a directory (bench/tail-sched.js sets it): writes
 * <pid>.json there, { pid, what, events }, `events` the slow events as [startNs, endNs]
 * (CLOCK_MONOTONIC ns). Otherwise nothing.
 */
function writeTailLog (what, events) {
  const dir = process.env.FASTSOCK_TAIL_LOG
  if (dir) fs.writeFileSync(path.join(dir, `${process.pid}.json`), JSON.stringify({ pid: process.pid, what, events }))
}

module.exports = { monoNs, writeTailLog }
