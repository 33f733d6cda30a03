#!/usr/bin/env node
'use strict'
/**
 * Why large-message bandwidth on one host swings between runs: fastsock/mpi's rendezvous copies
 * each payload twice (into the shm ring, out of it), as Open MPI's vader does when told not to
 * use a single-copy mechanism. This bench runs `fastsock osu bw` (P = 2, 64 KiB .. 4 MiB) in
 * `--rounds` rounds, each round twice: Open MPI with its default single copy (CMA,
 * process_vm_readv) and with copy-in/copy-out through shared memory
 * (OMPI_MCA_btl_vader_single_copy_mechanism=none). fastsock runs in both (the variable does not
 * touch it), so every round gives it two samples beside each Open MPI mode.
 *
 * Before and after each run, the cross-core placement probe of `fastsock pipe` (a busy-poll
 * ping-pong between two threads, tools/dist/pipe/placement.js) says where the host put the two
 * vCPUs: `near` (~50 ns RTT/2, cores sharing a cache), `far` (~200 ns), `busy`.
 *
 * Prints per size and series the min / median / max MB/s over all runs and the spread (max ÷
 * min), then the medians per placement (runs whose probe said the same before and after): a
 * double copy that swings with the placement beside a single copy that does not is the
 * signature of the copy path, not of fastsock's protocol. Asserts nothing.
 *
 *   node bench/mpi-copy-modes.js [--rounds 3] [-m 64K:4M] [--json out.json]   (~1 min a round)
 */
const fs = require('fs')
const path = require('path')
const { parseArgs } = require('util')
const { spawnSync } = require('child_process')

const { cli, tools, median, table, fmt, formatBytes } = require('./_built')
const probeScript = path.join(tools, 'pipe', 'placement.js')

/** The placement probe in a fresh process: { state, halfRttNs } or null. */
function probe () {
  const res = spawnSync(process.execPath, [probeScript], { encoding: 'utf8', timeout: 30_000 })
  try { return JSON.parse(res.stdout) } catch { return null }
}

const { values: opts } = parseArgs({
  options: { rounds: { type: 'string', default: '3' }, m: { type: 'string', short: 'm', default: '64K:4M' }, json: { type: 'string' } }
})
const rounds = Number(opts.rounds)
if (!Number.isInteger(rounds) || rounds < 1) {
  process.stderr.write('--rounds takes a positive integer\n')
  process.exit(2)
}

const MODES = [
  { id: 'cma', label: 'Open MPI, single copy (CMA, its default)', env: { OMPI_MCA_btl_vader_single_copy_mechanism: 'cma' } },
  { id: 'none', label: 'Open MPI, copy-in/copy-out (single copy off)', env: { OMPI_MCA_btl_vader_single_copy_mechanism: 'none' } }
]
/** series → bytes → MB/s per run */
const series = new Map([['fastsock', new Map()], ...MODES.map((m) => [`openmpi-${m.id}`, new Map()])])
const runs = []
const failures = []
const started = Date.now()

for (let round = 1; round <= rounds; round++) {
  for (const mode of MODES) {
    const args = [cli, 'osu', 'bw', '--np', '2', '-m', opts.m, '--impls', 'fastsock,openmpi', '--json', '-']
    process.stderr.write(`round ${round}/${rounds}, Open MPI ${mode.id}: fastsock ${args.slice(1).join(' ')}\n`)
    const before = probe()
    const res = spawnSync(process.execPath, args, { encoding: 'utf8', env: { ...process.env, ...mode.env }, maxBuffer: 64 << 20 })
    let doc
    try {
      doc = JSON.parse(res.stdout)
    } catch {
      failures.push(`round ${round} ${mode.id}: no JSON (status ${res.status}): ${res.stderr.trim().slice(-400)}`)
      continue
    }
    for (const e of doc.errors) failures.push(`round ${round} ${mode.id}: ${e}`)
    const after = probe()
    const placement = before !== null && after !== null && before.state === after.state ? before.state : 'changed'
    const run = { round, mode: mode.id, placement, probeNs: [before?.halfRttNs ?? null, after?.halfRttNs ?? null], rows: [] }
    for (const r of doc.rows) {
      const key = r.impl === 'openmpi' ? `openmpi-${mode.id}` : r.impl
      const s = series.get(key)
      if (s === undefined) continue
      if (!s.has(r.bytes)) s.set(r.bytes, [])
      s.get(r.bytes).push(r.value)
      run.rows.push({ impl: key, bytes: r.bytes, mbPerS: r.value })
    }
    runs.push(run)
  }
}

const labels = { fastsock: 'fastsock/mpi (shm ring: two copies)', ...Object.fromEntries(MODES.map((m) => [`openmpi-${m.id}`, m.label])) }
const t = table(['series', 'size', 'runs', 'min MB/s', 'median', 'max', 'spread (max ÷ min)'], ['left', 'right', 'right', 'right', 'right', 'right', 'right'])
const summary = []
for (const [key, bySize] of series) {
  for (const [bytes, xs] of [...bySize].sort((a, b) => a[0] - b[0])) {
    const lo = Math.min(...xs); const hi = Math.max(...xs)
    summary.push({ series: key, bytes, runs: xs.length, min: lo, median: median(xs), max: hi, spread: hi / lo })
    t.push([labels[key], formatBytes(bytes), xs.length, fmt(lo), fmt(median(xs)), fmt(hi), `${(hi / lo).toFixed(2)}×`])
  }
}
// Medians per placement state.
const byPlace = table(['placement', 'runs', 'series', ...sizesOf().map(formatBytes)], ['left', 'right', 'left'])
const places = [...new Set(runs.map((r) => r.placement))].sort()
for (const place of places) {
  const these = runs.filter((r) => r.placement === place)
  for (const key of series.keys()) {
    const cells = sizesOf().map((bytes) => {
      const xs = these.flatMap((r) => r.rows.filter((x) => x.impl === key && x.bytes === bytes).map((x) => x.mbPerS))
      return xs.length === 0 ? '–' : fmt(median(xs))
    })
    byPlace.push([place, these.length, labels[key], ...cells])
  }
}
function sizesOf () { return [...new Set(runs.flatMap((r) => r.rows.map((x) => x.bytes)))].sort((a, b) => a - b) }
const perRun = runs.map((r) => `  round ${r.round}, Open MPI ${r.mode}: placement ${r.placement} (probe ${r.probeNs.map((x) => (x === null ? '?' : x.toFixed(0))).join(' → ')} ns)`).join('\n')
process.stdout.write(`osu bw, P = 2, ${rounds} round${rounds > 1 ? 's' : ''} × 2 Open MPI modes (fastsock runs in both)\n${t.toString()}\n\n` +
  `Median MB/s by placement (probe before and after each run; 'changed': they differ)\n${byPlace.toString()}\n${perRun}\n`)
if (failures.length > 0) process.stdout.write(`\nFailures:\n${failures.map((f) => `  - ${f}`).join('\n')}\n`)
process.stdout.write(`(${((Date.now() - started) / 1e3).toFixed(0)} s)\n`)
if (opts.json !== undefined) {
  fs.writeFileSync(opts.json, JSON.stringify({ tool: 'bench/mpi-copy-modes.js', rounds, sizes: opts.m, startedAt: new Date(started).toISOString(), summary, runs, failures }, null, 2) + '\n')
}
process.exitCode = failures.length > 0 ? 1 : 0
