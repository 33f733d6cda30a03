#!/usr/bin/env node
'use strict'
/**
 * The targets of issues 17 and 18 (fastsock/mpi against Open MPI's C and against the same API over
 * Node net, in the same run), as the median of several rounds. Each round runs `fastsock osu` once
 * per target cell (a fresh process, `--json -`), in this order:
 *   latency 0 B .. 1 KiB, 2 ranks        fastsock ≤ 3× Open MPI; ≥ 20× faster than Node net
 *   bw 64 KiB .. 4 MiB, 2 ranks          fastsock ≥ 70 % of Open MPI
 *   mbw_mr 8 B, one pair                 fastsock ≥ 1 M messages/s
 *   allreduce, bcast 8 B, P = 2 and 4     ≤ 4× Open MPI; ≥ 10× faster than Node net
 *   allreduce, bcast 64 KiB .. 1 MiB      ≤ 1.5× Open MPI
 *   barrier, P = 2 and 4                 ≤ 4× Open MPI; ≥ 10× faster than Node net
 * Per cell, P and size: the median over the rounds of each implementation's OSU figure and of the
 * per-round ratios; a check is met when its median meets the target at every size and P. Before
 * each run the cross-core placement probe (tools/dist/pipe/placement.js, a process of its own)
 * says whether the two vCPUs share a cache ("near") or not ("far"); the host moves them, and the
 * 2-rank latency follows it (0.18 against 0.55 µs at 0 B on 2026-11-28, one hour apart), so each
 * cell prints its rounds' placements.
 * Prints figures, asserts nothing (not a test); exit status 1 only when a run failed.
 *
 *   node bench/mpi.js                 # 3 rounds, OSU's iteration counts (minutes on 2 cores)
 *   node bench/mpi.js --quick         # 1 round, 100 iterations per size: a smoke run
 *   node bench/mpi.js --rounds 5 --json mpi-targets.json --only latency,bw
 *
 * Other flags go to every `fastsock osu` run (e.g. `-i 2000 -x 200`, `--impls fastsock,openmpi`).
 */
const fs = require('fs')
const { spawnSync } = require('child_process')

const path = require('path')
const { cli, tools, median, table, fmt, fmtRatio, formatBytes } = require('./_built')

/** The placement probe's state now ('near', 'far', 'busy', 'unknown'), from a process of its own. */
function placementNow () {
  const res = spawnSync(process.execPath, [path.join(tools, 'pipe', 'placement.js')], { encoding: 'utf8', timeout: 30000 })
  try { return JSON.parse(res.stdout)?.state ?? 'unknown' } catch { return 'unknown' }
}

const args = process.argv.slice(2)
const take = (flag, fallback) => {
  const i = args.indexOf(flag)
  if (i < 0) return fallback
  const [, value] = args.splice(i, 2)
  return value
}
const flag = (name) => {
  const i = args.indexOf(name)
  if (i >= 0) args.splice(i, 1)
  return i >= 0
}
const quick = flag('--quick')
const rounds = Number(take('--rounds', quick ? '1' : '3'))
const out = take('--json', null)
const only = take('--only', null)
if (!Number.isInteger(rounds) || rounds < 1) {
  process.stderr.write('--rounds takes a positive integer\n')
  process.exit(2)
}

const slower = (max) => ({ key: 'fastsockOverOpenMpi', label: `≤ ${max}× Open MPI`, ok: (x) => x <= max })
const faster = (min) => ({ key: 'speedupVsNodeNet', label: `≥ ${min}× faster than Node net`, ok: (x) => x >= min })
const CELLS = [
  { id: 'latency', bench: 'latency', m: '0:1K', np: '2', checks: [slower(3), faster(20)] },
  { id: 'bw', bench: 'bw', m: '64K:4M', np: '2', checks: [{ key: 'fastsockOverOpenMpi', label: '≥ 70 % of Open MPI', ok: (x) => x >= 0.7 }] },
  { id: 'mbw_mr', bench: 'mbw_mr', m: '8:8', np: '2', checks: [{ key: 'msgPerSec', label: '≥ 1 M msg/s', ok: (x) => x >= 1e6 }] },
  { id: 'allreduce-8B', bench: 'allreduce', m: '8:8', np: '2,4', checks: [slower(4), faster(10)] },
  { id: 'allreduce-large', bench: 'allreduce', m: '64K:1M', np: '2,4', checks: [slower(1.5)] },
  { id: 'bcast-8B', bench: 'bcast', m: '8:8', np: '2,4', checks: [slower(4), faster(10)] },
  { id: 'bcast-large', bench: 'bcast', m: '64K:1M', np: '2,4', checks: [slower(1.5)] },
  { id: 'barrier', bench: 'barrier', m: null, np: '2,4', checks: [slower(4), faster(10)] }
].filter((c) => only === null || only.split(',').some((o) => c.id.startsWith(o)))

/** Per cell: key `${np}|${bytes}` → { fastsock: [], 'node-net': [], openmpi: [], ratios: { key: [] }, msgPerSec: [] }. */
const merged = new Map(CELLS.map((c) => [c.id, new Map()]))
/** Per cell: the placement before each round's run. */
const placements = new Map(CELLS.map((c) => [c.id, []]))
const failures = []
const started = Date.now()

for (let round = 1; round <= rounds; round++) {
  for (const cell of CELLS) {
    const cliArgs = ['osu', cell.bench, '--np', cell.np, '--json', '-', ...(cell.m !== null ? ['-m', cell.m] : []),
      ...(quick ? ['-i', '100', '-x', '10'] : []), ...args]
    const placement = placementNow()
    placements.get(cell.id).push(placement)
    process.stderr.write(`round ${round}/${rounds} (${placement}): fastsock ${cliArgs.join(' ')}\n`)
    const res = spawnSync(process.execPath, [cli, ...cliArgs], { encoding: 'utf8', maxBuffer: 256 << 20 })
    let doc
    try {
      doc = JSON.parse(res.stdout)
    } catch {
      failures.push(`${cell.id} round ${round}: no JSON (status ${res.status}): ${res.stderr.trim().slice(-600)}`)
      continue
    }
    for (const e of doc.errors) failures.push(`${cell.id} round ${round}: ${e}`)
    for (const w of doc.warnings) if (round === 1) process.stderr.write(`  warning: ${w}\n`)
    const cells = merged.get(cell.id)
    for (const r of doc.rows) {
      const k = `${r.np}|${r.bytes}`
      if (!cells.has(k)) cells.set(k, { np: r.np, bytes: r.bytes, fastsock: [], 'node-net': [], openmpi: [], msgPerSec: [], ratios: {} })
      const c = cells.get(k)
      c[r.impl].push(r.value)
      if (r.impl === 'fastsock' && r.msgPerSec !== null) c.msgPerSec.push(r.msgPerSec)
    }
    for (const x of doc.ratios) {
      const c = cells.get(`${x.np}|${x.bytes}`)
      for (const key of ['fastsockOverOpenMpi', 'speedupVsNodeNet']) {
        if (x[key] !== null) (c.ratios[key] ??= []).push(x[key])
      }
    }
    merged.get(cell.id).unit = doc.unit === 'us' ? 'µs' : doc.unit
  }
}

const summary = []
const lines = []
for (const cell of CELLS) {
  const cells = [...merged.get(cell.id).values()].sort((a, b) => a.np - b.np || a.bytes - b.bytes)
  const unit = merged.get(cell.id).unit ?? ''
  const t = table(['P', 'size', `fastsock ${unit}`, `Node net ${unit}`, `Open MPI ${unit}`, 'fastsock ÷ Open MPI', 'speedup vs Node net', ...(cell.bench === 'mbw_mr' ? ['msg/s'] : [])])
  for (const c of cells) {
    const m = (xs) => (xs === undefined || xs.length === 0 ? null : median(xs))
    const fo = m(c.ratios.fastsockOverOpenMpi)
    c.median = { fastsock: m(c.fastsock), 'node-net': m(c['node-net']), openmpi: m(c.openmpi), fastsockOverOpenMpi: fo, speedupVsNodeNet: m(c.ratios.speedupVsNodeNet), msgPerSec: m(c.msgPerSec) }
    const ratio = (x) => (x !== null && x < 0.1 ? `${x.toPrecision(2)}×` : fmtRatio(x))
    t.push([c.np, formatBytes(c.bytes), fmt(c.median.fastsock), fmt(c.median['node-net']), fmt(c.median.openmpi), ratio(fo), ratio(c.median.speedupVsNodeNet),
      ...(cell.bench === 'mbw_mr' ? [fmt(c.median.msgPerSec)] : [])])
  }
  lines.push(`${cell.id} (osu ${cell.bench}${cell.m !== null ? ` -m ${cell.m}` : ''}, P = ${cell.np}): medians over ${rounds} round${rounds > 1 ? 's' : ''}; placement per round: ${placements.get(cell.id).join(', ')}\n${t.toString()}`)
  for (const check of cell.checks) {
    const values = cells.map((c) => ({ np: c.np, bytes: c.bytes, x: c.median[check.key] }))
    const missing = values.filter((v) => v.x === null)
    const met = values.length > 0 && missing.length === 0 && values.every((v) => check.ok(v.x))
    const worst = values.filter((v) => v.x !== null && !check.ok(v.x)).map((v) => `P=${v.np} ${formatBytes(v.bytes)}: ${fmt(v.x)}`)
    summary.push({ cell: cell.id, target: check.label, met, notMetAt: worst, unmeasured: missing.length })
  }
}
const s = table(['cell', 'target', 'met', 'where not'], ['left', 'left', 'left', 'left'])
for (const x of summary) s.push([x.cell, x.target, x.met ? 'met' : 'NOT met', x.unmeasured > 0 ? `${x.unmeasured} cells unmeasured` : x.notMetAt.slice(0, 4).join('; ')])
process.stdout.write(`${lines.join('\n\n')}\n\nTargets (issues 17 and 18; medians over ${rounds} round${rounds > 1 ? 's' : ''})\n${s.toString()}\n`)
if (failures.length > 0) process.stdout.write(`\nFailures:\n${failures.map((f) => `  - ${f.replace(/\n/g, '\n    ')}`).join('\n')}\n`)
process.stdout.write(`(${((Date.now() - started) / 1e3).toFixed(0)} s)\n`)
if (out !== null) {
  const cells = Object.fromEntries(CELLS.map((c) => [c.id, [...merged.get(c.id).values()]]))
  fs.writeFileSync(out, JSON.stringify({ tool: 'bench/mpi.js', rounds, quick, startedAt: new Date(started).toISOString(), cells, placements: Object.fromEntries(placements), summary, failures }, null, 2) + '\n')
}
process.exit(failures.length > 0 ? 1 : 0)
