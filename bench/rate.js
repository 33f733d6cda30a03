#!/usr/bin/env node
'use strict'
/**
 * The message-rate targets of `fastsock rate` (docs/benchmarks.md, "Message rate"), as the
 * median of several runs: 64 B single-direction fan-out with one peer (shm ≥ 1 M msg/s and ≥ 3×
 * net:tcp), pair-based and all-start with 2 and 4 peers at every size up to 64 KiB (shm ahead of
 * Node net), cold cache beside warm. Each run is a fresh `fastsock rate` process; the rows are
 * merged by channel and cell (median msg/s, delivered/s, MB/s, CPU and system calls per
 * message), the ratios and targets recomputed from the medians, and the report printed.
 *
 *   node bench/rate.js                  # 3 runs, a few minutes on 2 cores
 *   node bench/rate.js --runs 5 --json merged.json
 *   node bench/rate.js --plot docs/img/rate-message-rate.svg   # the plot of the medians
 *
 * Other flags go to every `fastsock rate` run and win over the preset (see `fastsock rate --help`).
 */
const fs = require('fs')
const os = require('os')
const path = require('path')
const { spawnSync } = require('child_process')

// The tools' own modules (the fastsock-tools workspace, tools/: npm install builds it).
const tools = path.join(__dirname, '..', 'tools', 'dist')
const cli = path.join(__dirname, '..', 'dist', 'cli', 'main.js')
if (!fs.existsSync(cli)) {
  process.stderr.write(`${cli} is missing: build first (npm run build:ts)\n`)
  process.exit(1)
}
const { derive, cellKey } = require(path.join(tools, 'rate', 'summary.js'))
const { renderReport, renderJson } = require(path.join(tools, 'rate', 'report.js'))
const { median } = require(path.join(tools, 'harness', 'stats.js'))
const { renderSvg } = require(path.join(tools, 'rate', 'plot.js'))

const args = process.argv.slice(2)
const take = (flag, fallback) => {
  const i = args.indexOf(flag)
  if (i < 0) return fallback
  const [, value] = args.splice(i, 2)
  return value
}
const runs = Number(take('--runs', '3'))
const out = take('--json', null)
const plot = take('--plot', null)
if (!Number.isInteger(runs) || runs < 1) {
  process.stderr.write('--runs takes a positive integer\n')
  process.exit(2)
}

// The target cells (single-direction at 64 B with one peer; pair-based and all-start at 2 and 4
// peers over every size) in two sub-runs per run, interleaved across channels within each. With 5
// processes on 2 vCPUs a 20 ms slice (the default budget in 3 rounds) is a few scheduler time
// slices: the multi-peer cells run 200 ms per channel in 5 rounds. The round trips behind the RTT
// percentiles: 20,000 per channel and run (the tool's default 2,000 puts p99.9 on the 2nd-worst
// sample of a run: one stall decides it).
const RTT_ITERATIONS = '20000'
const PRESETS = [
  ['--pattern', 'single', '--direction', 'fan-out', '--sizes', '64', '--peers', '1', '--cache', 'warm', '--budget-ms', '200', '--rtt-iterations', RTT_ITERATIONS],
  ['--pattern', 'pair-based,all-start', '--peers', '2,4', '--cache', 'both', '--rtt-iterations', '0', '--budget-ms', '200', '--rounds', '5']
]

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fastsock-bench-rate-'))
const docs = []
try {
  for (let run = 0; run < runs; run++) {
    const parts = []
    for (const [i, preset] of PRESETS.entries()) {
      const file = path.join(dir, `run${run}-${i}.json`)
      process.stderr.write(`bench/rate: run ${run + 1}/${runs}, part ${i + 1}/${PRESETS.length}\n`)
      const r = spawnSync(process.execPath, [cli, 'rate', ...preset, '--no-plot', '--no-progress', ...args, '--json', file], { stdio: ['ignore', 'ignore', 'inherit'] })
      if (r.status !== 0 && !fs.existsSync(file)) {
        process.stderr.write(`bench/rate: fastsock rate exited with ${r.status ?? r.signal}\n`)
        process.exit(1)
      }
      parts.push(JSON.parse(fs.readFileSync(file, 'utf8')))
    }
    docs.push(parts)
  }
} finally {
  fs.rmSync(dir, { recursive: true, force: true })
}

// Merge: the first run's document, its rows replaced by the median over the runs, its phases
// and duration by the sums over every run.
const merged = { ...docs[0][0], runs: docs.map((parts) => parts.map((d) => d.startedAt)), rows: [], rtt: [], warnings: [], errors: [] }
const groups = new Map()
for (const parts of docs) {
  for (const d of parts) {
    for (const r of d.rows) {
      const key = `${r.label}|${cellKey(r)}`
      if (!groups.has(key)) groups.set(key, [])
      groups.get(key).push(r)
    }
    merged.rtt.push(...d.rtt)
    merged.warnings.push(...d.warnings)
    merged.errors.push(...d.errors)
  }
}
const med = (rows, f) => median(rows.map(f).filter((x) => x !== null && Number.isFinite(x)))
for (const rows of groups.values()) {
  const nullable = (f) => (rows.some((r) => f(r) === null) ? null : med(rows, f))
  merged.rows.push({
    ...rows[0],
    msgPerSec: med(rows, (r) => r.msgPerSec),
    deliveredPerSec: med(rows, (r) => r.deliveredPerSec),
    mbPerSec: med(rows, (r) => r.mbPerSec),
    cpuUsPerMsg: med(rows, (r) => r.cpuUsPerMsg),
    postUsPerMsg: nullable((r) => r.postUsPerMsg ?? null),
    postShare: med(rows, (r) => r.postShare),
    overhead: { ...rows[0].overhead, syscallsPerMsg: nullable((r) => r.overhead.syscallsPerMsg), framesPerMsg: nullable((r) => r.overhead.framesPerMsg) },
    runs: rows.length
  })
}
const rtt = new Map()
for (const r of merged.rtt) {
  const key = `${r.label}|${r.bytes}`
  if (!rtt.has(key)) rtt.set(key, [])
  rtt.get(key).push(r)
}
merged.rtt = [...rtt.values()].map((rows) => ({
  ...rows[0],
  samples: rows.reduce((a, r) => a + r.samples, 0),
  ...Object.fromEntries(['p50Us', 'p90Us', 'p99Us', 'p999Us', 'minUs', 'meanUs'].map((k) => [k, med(rows, (r) => r[k])]))
}))
merged.phases = Object.fromEntries(Object.keys(merged.phases).map((k) => [k, docs.flat().reduce((a, d) => a + d.phases[k], 0)]))
merged.durationMs = docs.flat().reduce((a, d) => a + d.durationMs, 0)
merged.warnings = [...new Set(merged.warnings)]
derive(merged)
process.stdout.write(`Median of ${runs} runs (each: ${PRESETS.length} fastsock rate processes), started ${docs.map((p) => p[0].startedAt).join(', ')}\n\n`)
process.stdout.write(renderReport(merged))
if (out !== null) fs.writeFileSync(out, renderJson(merged))
if (plot !== null) {
  renderSvg(merged).then((svg) => fs.writeFileSync(plot, svg), (err) => {
    process.stderr.write(`bench/rate: plot: ${err.message}\n`)
    process.exitCode = 1
  })
}
