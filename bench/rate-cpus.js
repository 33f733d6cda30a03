#!/usr/bin/env node
'use strict'
/**
 * How many CPUs fastsock:shm's lead in the multi-peer message rate needs: `fastsock rate`'s
 * pair-based and all-start patterns (warm, 8 B .. 64 KiB, 1, 2 and 4 peers) run under
 * `taskset -c` on 1, 2, ... CPUs (up to this machine's), `--runs` times each, interleaved. The
 * measuring process and its peers are P + 1 processes; the report prints, per CPU count,
 * pattern and peers, fastsock:shm's msg/s ÷ the better of net:tcp and net:unix at each size
 * (medians of the runs), and which processes-per-CPU ratios keep the lead at every size.
 * Asserts nothing.
 *
 *   node bench/rate-cpus.js [--runs 2] [--peers 1,2,4]     (~20 s per run and CPU count)
 *
 * Needs taskset (util-linux). Polling threads spin on their CPU: with more processes than CPUs,
 * every exchange with a peer that shares a CPU is a context switch, whatever the transport.
 */
const fs = require('fs')
const os = require('os')
const path = require('path')
const { parseArgs } = require('util')
const { spawnSync } = require('child_process')

const { cli, median, table, formatBytes } = require('./_built')

const { values: opts } = parseArgs({ options: { runs: { type: 'string', default: '2' }, peers: { type: 'string', default: '1,2,4' }, json: { type: 'string' } } })
const runs = Number(opts.runs)
if (!Number.isInteger(runs) || runs < 1) {
  process.stderr.write('--runs takes a positive integer\n')
  process.exit(2)
}
if (spawnSync('taskset', ['-c', '0', 'true']).status !== 0) {
  process.stderr.write('taskset (util-linux) is needed: apt-get install util-linux\n')
  process.exit(2)
}
const ncpu = os.availableParallelism()
const cpuCounts = Array.from({ length: ncpu }, (_, i) => i + 1)
const PATTERNS = ['pair-based', 'all-start']
const CHANNELS = ['fastsock:shm', 'net:tcp', 'net:unix']

/** `${pattern}|${peers}|${bytes}|${cpus}` → channel → msg/s per run */
const cells = new Map()
const failures = []
const started = Date.now()
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fastsock-rate-cpus-'))
try {
  for (let run = 1; run <= runs; run++) {
    for (const cpus of cpuCounts) {
      const list = cpuCounts.slice(0, cpus).map((c) => c - 1).join(',')
      const out = path.join(dir, `run${run}-cpus${cpus}.json`)
      const args = ['-c', list, process.execPath, cli, 'rate', '--pattern', PATTERNS.join(','), '--peers', opts.peers, '--cache', 'warm',
        '--pin', 'none', '--transports', 'shm,net-tcp,net-unix', '--rtt-iterations', '0', '--no-plot', '--json', out]
      process.stderr.write(`run ${run}/${runs}: taskset ${args.slice(0, 2).join(' ')} fastsock ${args.slice(4).join(' ')}\n`)
      const res = spawnSync('taskset', args, { encoding: 'utf8', maxBuffer: 64 << 20 })
      if (res.status !== 0 || !fs.existsSync(out)) {
        failures.push(`run ${run}, ${cpus} CPU(s): status ${res.status}: ${(res.stderr || res.stdout).trim().slice(-400)}`)
        continue
      }
      const doc = JSON.parse(fs.readFileSync(out, 'utf8'))
      for (const e of doc.errors ?? []) failures.push(`run ${run}, ${cpus} CPU(s): ${e}`)
      for (const r of doc.rows) {
        if (r.coldCache || !CHANNELS.includes(r.channel) || !PATTERNS.includes(r.pattern)) continue
        const k = `${r.pattern}|${r.peers}|${r.bytes}|${cpus}`
        if (!cells.has(k)) cells.set(k, Object.fromEntries(CHANNELS.map((c) => [c, []])))
        cells.get(k)[r.channel].push(r.msgPerSec)
      }
    }
  }
} finally {
  fs.rmSync(dir, { recursive: true, force: true })
}

const sizes = [...new Set([...cells.keys()].map((k) => Number(k.split('|')[2])))].sort((a, b) => a - b)
const peerCounts = [...new Set([...cells.keys()].map((k) => Number(k.split('|')[1])))].sort((a, b) => a - b)
const t = table(['CPUs', 'pattern', 'peers', 'processes ÷ CPUs', ...sizes.map(formatBytes), 'lead at every size'], ['right', 'left', 'right', 'right'])
const verdicts = []
for (const cpus of cpuCounts) {
  for (const pattern of PATTERNS) {
    for (const peers of peerCounts) {
      const ratios = sizes.map((b) => {
        const c = cells.get(`${pattern}|${peers}|${b}|${cpus}`)
        if (c === undefined || c['fastsock:shm'].length === 0) return null
        const best = Math.max(median(c['net:tcp']) || 0, median(c['net:unix']) || 0)
        return best > 0 ? median(c['fastsock:shm']) / best : null
      })
      if (ratios.every((x) => x === null)) continue
      const lead = ratios.every((x) => x !== null && x > 1)
      const load = (peers + 1) / cpus
      verdicts.push({ cpus, pattern, peers, load, ratios, lead })
      t.push([cpus, pattern, peers, load.toFixed(2), ...ratios.map((x) => (x === null ? '–' : `${x.toFixed(2)}×`)), lead ? 'yes' : 'no'])
    }
  }
}
// Per pattern: the highest processes ÷ CPUs up to which every configuration led at every size,
// and from it the CPUs each peer count would need (the ratio measured here, not extrapolated
// beyond it: a configuration on more CPUs than this machine has is not run).
const lines = []
for (const pattern of PATTERNS) {
  const these = verdicts.filter((v) => v.pattern === pattern).sort((a, b) => a.load - b.load)
  const firstMiss = these.find((v) => !v.lead)
  const held = these.filter((v) => v.lead && (firstMiss === undefined || v.load < firstMiss.load))
  if (held.length === 0) { lines.push(`${pattern}: no configuration led at every size`); continue }
  const x = Math.max(...held.map((v) => v.load))
  const needs = peerCounts.map((p) => `${p} peer${p > 1 ? 's' : ''} ${Math.ceil((p + 1) / x)} CPU${Math.ceil((p + 1) / x) > 1 ? 's' : ''}`).join(', ')
  lines.push(`${pattern}: the lead held at every size up to ${x.toFixed(2)} processes per CPU` +
    (firstMiss !== undefined ? ` (first miss at ${firstMiss.load.toFixed(2)}: ${firstMiss.peers} peer(s) on ${firstMiss.cpus} CPU(s))` : '') +
    `; at that ratio the lead needs ${needs}`)
}
const summary = lines.join('\n')
process.stdout.write(`fastsock:shm msg/s ÷ the better of net:tcp and net:unix (warm; medians of ${runs} run${runs > 1 ? 's' : ''})\n${t.toString()}\n${summary}\n`)
if (failures.length > 0) process.stdout.write(`\nFailures:\n${failures.map((f) => `  - ${f}`).join('\n')}\n`)
process.stdout.write(`(${((Date.now() - started) / 1e3).toFixed(0)} s)\n`)
if (opts.json !== undefined) fs.writeFileSync(opts.json, JSON.stringify({ tool: 'bench/rate-cpus.js', runs, cpuCounts, verdicts, summary, failures }, null, 2) + '\n')
process.exitCode = failures.length > 0 ? 1 : 0
