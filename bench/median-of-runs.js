#!/usr/bin/env node
'use strict'
/**
 * Merges several `fastsock pipe --json` results into one: every figure becomes the median over
 * the runs (median of the per-run medians, sextiles, p99s, bandwidths), and the derived figures
 * (ts/tb fits, typed-array speedups, headline ratios) are recomputed from the merged rows, the
 * same way `pipe` computes them. Prints Markdown tables (what docs/benchmarks.md quotes).
 *
 *   node dist/cli/main.js pipe --json run1.json   # ... run2.json, run3.json, on an idle machine
 *   node bench/median-of-runs.js run1.json run2.json run3.json \
 *     [--plot docs/img/pipe-latency-bandwidth.svg] [--json merged.json]
 */
const fs = require('fs')
const path = require('path')

// The tools' own modules (the fastsock-tools workspace, tools/: npm install builds it).
const tools = path.join(__dirname, '..', 'tools', 'dist')
const { fitAll, headline, typedSpeedups } = require(path.join(tools, 'pipe', 'summary.js'))
const { renderSvg } = require(path.join(tools, 'pipe', 'plot.js'))
const { fmt, fmtRatio, formatBytes } = require(path.join(tools, 'harness', 'units.js'))

function median (xs) {
  const v = xs.filter((x) => typeof x === 'number' && Number.isFinite(x)).sort((a, b) => a - b)
  if (v.length === 0) return NaN
  const m = v.length >> 1
  return v.length % 2 === 1 ? v[m] : (v[m - 1] + v[m]) / 2
}

/** Groups the rows of every run by `key`; returns [firstRow, rowsOfAllRuns] per key, in first-seen order. */
function groups (runs, pick, key) {
  const map = new Map()
  for (const run of runs) {
    for (const row of pick(run)) {
      const k = key(row)
      if (!map.has(k)) map.set(k, [])
      map.get(k).push(row)
    }
  }
  return [...map.values()]
}

const q = (rows, get) => ({
  median: median(rows.map((r) => get(r).median)),
  sextile: median(rows.map((r) => get(r).sextile)),
  p99: median(rows.map((r) => get(r).p99)),
  min: median(rows.map((r) => get(r).min)),
  mean: median(rows.map((r) => get(r).mean))
})

function merge (runs) {
  const base = JSON.parse(JSON.stringify(runs[0]))
  base.runs = runs.map((r) => ({ startedAt: r.startedAt, placement: r.placement, pinning: r.pinning, loadAvg1: r.host.loadAvg1, errors: r.errors }))
  base.pingpong = groups(runs, (r) => r.pingpong, (r) => `${r.label}|${r.bytes}`).map((rows) => {
    const halfRttUs = q(rows, (r) => r.halfRttUs)
    return {
      ...rows[0],
      runs: rows.length,
      iterations: median(rows.map((r) => r.iterations)),
      halfRttUs,
      mbPerSec: rows[0].bytes / halfRttUs.median,
      gbitPerSec: rows[0].bytes * 8e-3 / halfRttUs.median,
      cpuUsPerMsg: median(rows.map((r) => r.cpuUsPerMsg)),
      memcpyNs: median(rows.map((r) => r.memcpyNs)),
      memcpyMbPerSec: median(rows.map((r) => r.memcpyMbPerSec))
    }
  })
  base.stream = groups(runs, (r) => r.stream, (r) => `${r.label}|${r.bytes}`).map((rows) => ({
    ...rows[0],
    runs: rows.length,
    mbPerSec: median(rows.map((r) => r.mbPerSec)),
    gbitPerSec: median(rows.map((r) => r.gbitPerSec)),
    msgPerSec: median(rows.map((r) => r.msgPerSec)),
    cpuUsPerMsg: median(rows.map((r) => r.cpuUsPerMsg))
  }))
  base.typed = groups(runs, (r) => r.typed, (r) => `${r.label}|${r.elementType}|${r.bytes}`).map((rows) => {
    const perArrayUs = q(rows, (r) => r.perArrayUs)
    return { ...rows[0], runs: rows.length, perArrayUs, mbPerSec: rows[0].bytes / perArrayUs.median, cpuUsPerArray: median(rows.map((r) => r.cpuUsPerArray)) }
  })
  typedSpeedups(base.typed)
  base.nptcp.rows = groups(runs, (r) => r.nptcp.rows, (r) => r.bytes).map((rows) => ({
    bytes: rows[0].bytes, halfRttUs: median(rows.map((r) => r.halfRttUs)), mbPerSec: median(rows.map((r) => r.mbPerSec))
  }))
  base.nptcp.ran = base.nptcp.rows.length > 0
  base.native.memcpy = groups(runs, (r) => r.native.memcpy, (r) => r.bytes).map((rows) => ({
    bytes: rows[0].bytes, ns: median(rows.map((r) => r.ns)), mbPerSec: median(rows.map((r) => r.mbPerSec))
  }))
  base.native.spinHalfRttNs = median(runs.map((r) => r.native.spinHalfRttNs))
  base.fits = fitAll(base.pingpong)
  base.headline = headline(base.pingpong, base.stream)
  return base
}

function mdTable (head, rows) {
  const line = (cells) => `| ${cells.join(' | ')} |`
  return [line(head), line(head.map((_h, i) => (i === 0 ? '---' : '---:'))), ...rows.map(line)].join('\n')
}

function markdown (m, files) {
  const out = []
  const labels = (rows) => [...new Set(rows.map((r) => r.label))]
  const sizes = (rows) => [...new Set(rows.map((r) => r.bytes))].sort((a, b) => a - b)
  const states = m.runs.map((r) => `${r.placement.before ? `${r.placement.before.state} ${Math.round(r.placement.before.halfRttNs)} ns` : 'unknown'}`)
  out.push(`Median of ${files.length} runs (${m.runs.map((r) => r.startedAt).join(', ')}) on ${m.host.cpus} × ${m.host.cpuModel}, ` +
    `${m.host.kernel}, node ${m.host.node}. Placement probe per run: ${states.join('; ')}. Processes: ${m.pinning.note}. ` +
    `Busy-poll floor ${fmt(m.native.spinHalfRttNs)} ns RTT/2.`)

  const pp = labels(m.pingpong)
  const nptcp = new Map(m.nptcp.rows.map((r) => [r.bytes, r.halfRttUs]))
  const memcpy = new Map(m.native.memcpy.map((r) => [r.bytes, r.ns]))
  out.push('\n**Ping-pong, median half round-trip latency RTT/2 (µs)**\n')
  out.push(mdTable(['size', ...pp, ...(m.nptcp.ran ? ['NPtcp (C)'] : []), 'floor + memcpy'], sizes(m.pingpong).map((b) => [
    formatBytes(b),
    ...pp.map((l) => fmt(m.pingpong.find((r) => r.label === l && r.bytes === b)?.halfRttUs.median)),
    ...(m.nptcp.ran ? [fmt(nptcp.get(b))] : []),
    memcpy.has(b) ? fmt((m.native.spinHalfRttNs + memcpy.get(b)) / 1e3) : '—'
  ])))

  out.push('\n**Ping-pong bandwidth n/(RTT/2), MB/s (MB = 10^6 B), and CPU µs per message (both processes)**\n')
  const picks = sizes(m.pingpong).filter((b) => [1, 64, 1024, 65536, 1048576, 4194304].includes(b))
  out.push(mdTable(['size', ...pp.map((l) => `${l} MB/s (CPU µs)`)], picks.map((b) => [
    formatBytes(b),
    ...pp.map((l) => {
      const r = m.pingpong.find((x) => x.label === l && x.bytes === b)
      return r ? `${fmt(r.mbPerSec)} (${fmt(r.cpuUsPerMsg)})` : '—'
    })
  ])))

  out.push('\n**Fit T(n) = ts + tb·n to the median RTT/2** (least squares; "rel.": weighted by 1/T²)\n')
  out.push(mdTable(['channel', 'ts (µs)', 'tb (ns/B)', '1/tb (MB/s)', 'R²', 'ts rel. (µs)', 'tb rel. (ns/B)'], m.fits.map((f) => [
    f.label, fmt(f.tsUs), fmt(f.tbNsPerByte), fmt(1e3 / f.tbNsPerByte), fmt(f.r2), fmt(f.tsUsRelative), fmt(f.tbNsPerByteRelative)
  ])))

  out.push('\n**Headline: fastsock\'s best rung against Node `net`** (× > 1: fastsock faster)\n')
  out.push(mdTable(['size', 'best rung', 'latency × vs net:tcp', '× vs net:unix', 'best without polling', '× vs net:tcp', 'stream bandwidth × vs net:tcp'], m.headline.map((h) => [
    formatBytes(h.bytes), h.best, fmtRatio(h.latencyRatio), fmtRatio(h.latencyRatioVsUnix), h.bestNoPoll ?? '—', fmtRatio(h.latencyRatioNoPoll), fmtRatio(h.streamBandwidthRatio)
  ])))

  if (m.stream.length > 0) {
    const st = labels(m.stream)
    out.push('\n**Streaming one-way bandwidth, MB/s**\n')
    out.push(mdTable(['size', ...st, 'memcpy'], sizes(m.stream).map((b) => [
      formatBytes(b),
      ...st.map((l) => fmt(m.stream.find((r) => r.label === l && r.bytes === b)?.mbPerSec)),
      fmt(m.native.memcpy.find((r) => r.bytes === b)?.mbPerSec)
    ])))
  }

  if (m.typed.length > 0) {
    const methods = labels(m.typed)
    const cells = [...new Set(m.typed.map((r) => `${r.elementType}|${r.bytes}`))]
    out.push('\n**Typed arrays end to end, µs per array (RTT/2)**; last columns: fastsock\'s best against JSON and v8.serialize\n')
    out.push(mdTable(['array', ...methods, 'best ÷ JSON', 'best ÷ v8'], cells.map((c) => {
      const [type, bytes] = c.split('|')
      const rows = m.typed.filter((r) => r.elementType === type && r.bytes === Number(bytes))
      const fast = rows.filter((r) => r.method === 'fastsock')
      const best = fast.length ? fast.reduce((a, b) => (b.perArrayUs.median < a.perArrayUs.median ? b : a)) : null
      return [`${type} ${formatBytes(Number(bytes))}`, ...methods.map((l) => fmt(rows.find((r) => r.label === l)?.perArrayUs.median)),
        best ? fmtRatio(best.speedupVsJson) : '—', best ? fmtRatio(best.speedupVsV8) : '—']
    })))
  }
  const errors = m.runs.flatMap((r) => r.errors)
  if (errors.length > 0) out.push(`\nErrors in the runs: ${[...new Set(errors)].join('; ')}`)
  return out.join('\n') + '\n'
}

async function main () {
  const args = process.argv.slice(2)
  const files = []
  let plot = null
  let json = null
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--plot') plot = args[++i]
    else if (args[i] === '--json') json = args[++i]
    else files.push(args[i])
  }
  if (files.length === 0) {
    process.stderr.write('usage: node bench/median-of-runs.js run1.json run2.json ... [--plot out.svg] [--json merged.json]\n')
    process.exit(2)
  }
  const runs = files.map((f) => JSON.parse(fs.readFileSync(f, 'utf8')))
  const merged = merge(runs)
  process.stdout.write(markdown(merged, files))
  if (json) fs.writeFileSync(json, JSON.stringify(merged, null, 2) + '\n')
  if (plot) {
    merged.startedAt = runs[runs.length - 1].startedAt
    fs.mkdirSync(path.dirname(path.resolve(plot)), { recursive: true })
    fs.writeFileSync(plot, await renderSvg(merged))
    process.stderr.write(`wrote ${plot}\n`)
  }
}

main().catch((err) => { process.stderr.write(`${err.stack}\n`); process.exit(1) })
