#!/usr/bin/env node
'use strict'
/**
 * Latency of an unmodified http server at a FIXED request rate (open loop), with and without the
 * preload hook: p50, p99, p99.9 and max in µs for Node's net (TCP), shm and unix, each at a few
 * fractions of plain net's saturation rate, with 1 and 10 keep-alive connections.
 *
 * Configurations (hook on server and client, as bench/http.js; each run has its own server
 * (bench/_http-server.js) and client (bench/_http-latency-client.js) processes):
 *   net   no hook: Node's net over TCP loopback, the baseline
 *   shm   the hook on both ends, its defaults (fastsock's best rung, shm)
 *   unix  the hook on both ends with FASTSOCK_TRANSPORTS=unix,tcp
 *
 * Method:
 *   1. Saturation: per connection count, plain net's rate in a closed loop (every connection
 *      sends its next GET when the last response has ended; 2 s after 0.5 s of warm-up), with the
 *      same client code as the open loop, its scheduler spinning beside it.
 *   2. Open loop: for each load (% of that saturation rate) and connection count, request i is
 *      due at t0 + i / rate on connection i mod N (each of the N keep-alive connections, opened
 *      before the clock starts, carries rate / N); a request whose connection is busy waits for
 *      it, and its latency counts from its DUE time, not from when it went out (coordinated
 *      omission corrected). The client drives the schedule with a setImmediate loop that never
 *      sleeps and sends, on every turn, every request whose due time has passed (a timer would add
 *      up to 1 ms of its own lateness to every latency). Requests due in the first 0.5 s (warm-up)
 *      are not recorded. Every latency goes into an HDR histogram (hdr-histogram-js, pure JS,
 *      1 µs .. 60 s, 3 significant digits; percentiles and max are the highest value of their
 *      bucket, at most 0.1 % above the recorded one); the client prints it (compressed base64)
 *      with its percentiles in one JSON line.
 *   3. Rounds interleave the configurations: round r runs net, shm, unix for each cell, so drift
 *      hits them alike. Per cell and configuration: the median over rounds of p50, p99, p99.9, max
 *      and of the achieved rate (recorded responses / time from the first due time recorded to the
 *      last response).
 *
 *   node bench/http-latency.js [--rounds 3] [--duration 3] [--loads 25,50,90] [--connections 1,10]
 *                              [--quick] [--json results.json]
 *
 *   --rounds <n>        rounds (default 3)
 *   --duration <s>      recorded seconds per cell and configuration (default 3; + 0.5 s warm-up)
 *   --loads <%,...>     load levels in % of net's saturation rate (default 25,50,90)
 *   --connections <n,...>  keep-alive connection counts (default 1,10)
 *   --quick             1 round, 1 s per cell, 1 s saturation runs: a smoke run
 *   --pin               the client on CPU 0 and the server on CPU 1 (taskset; saturation runs
 *                       too): the client's spinning scheduler and the server never take each
 *                       other's CPU, each process's own threads share its CPU (needs taskset and
 *                       2+ CPUs; on 2 vCPUs it did not shorten the tail: docs/polling.md)
 *   --json <file>       also writes the raw results (every run, with its histograms) and medians
 *   --plot <file.svg>   also draws the latency distribution of every cell (all rounds' histograms
 *                       merged) as a CDF per configuration: latency (µs, log scale) against the
 *                       fraction of requests at or below it, 1 - fraction on a log scale too so
 *                       that p99 and p99.9 are as far apart as p50 and p90 (vega, from the
 *                       fastsock-tools workspace)
 *
 * Prints (stdout) the saturation rate per connection count, then one Markdown table: per load and
 * connection count, per configuration, the transport that actually ran (client / server when they
 * differ, `×k` when connections differ), target and achieved req/s, p50 / p99 / p99.9 / max (µs),
 * the send lag p99 (µs: how late requests went out, the client's own lateness plus the wait for a
 * busy connection), and p99 and p99.9 as a ratio to net's (> 1: slower than plain net). Warnings
 * follow (a rung that fell back, errors, a rate not reached). Progress per run goes to stderr.
 */
const fs = require('fs')
const path = require('path')
const util = require('util')
const hdr = require('hdr-histogram-js')
const { start, stop, median } = require('./_procs')

const SERVER = path.join(__dirname, '_http-server.js')
const CLIENT = path.join(__dirname, '_http-latency-client.js')
const WARMUP_S = 0.5

const CONFIGS = [
  { name: 'net', hook: false, env: {}, expect: 'net' },
  { name: 'shm', hook: true, env: {}, expect: 'shm' },
  { name: 'unix', hook: true, env: { FASTSOCK_TRANSPORTS: 'unix,tcp' }, expect: 'unix' }
]

const OPTIONS = {
  rounds: { type: 'string', default: '3', note: '<n>' },
  duration: { type: 'string', default: '3', note: '<s>' },
  loads: { type: 'string', default: '25,50,90', note: '<%,...>' },
  connections: { type: 'string', default: '1,10', note: '<n,...>' },
  quick: { type: 'boolean', note: '(1 round, 1 s)' },
  pin: { type: 'boolean', note: '(client on CPU 0, server on CPU 1)' },
  json: { type: 'string', note: '<file>' },
  plot: { type: 'string', note: '<file.svg>' },
  help: { type: 'boolean' }
}

function options () {
  const { values: v } = util.parseArgs({ options: Object.fromEntries(Object.entries(OPTIONS).map(([k, o]) => [k, { type: o.type }])) })
  if (v.help) {
    process.stdout.write(`options: ${Object.entries(OPTIONS).filter(([k]) => k !== 'help').map(([k, o]) => `--${k} ${o.note}${o.default ? ` (default ${o.default})` : ''}`).join(', ')}\n`)
    process.exit(0)
  }
  const num = (k, quick) => Number(v[k] ?? (v.quick && quick !== undefined ? quick : OPTIONS[k].default))
  const list = k => (v[k] ?? OPTIONS[k].default).split(',').map(Number)
  const o = { rounds: num('rounds', '1'), duration: num('duration', '1'), loads: list('loads'), connections: list('connections'), quick: !!v.quick, pin: !!v.pin, json: v.json ?? null, plot: v.plot ?? null }
  if (o.pin && require('os').availableParallelism() < 2) throw new Error('--pin needs 2 CPUs')
  if (o.pin && require('child_process').spawnSync('taskset', ['-c', '0', 'true']).status !== 0) throw new Error('--pin needs taskset (util-linux)')
  o.saturationS = v.quick ? 1 : 2
  for (const [k, x] of [['rounds', o.rounds], ['duration', o.duration], ...o.loads.map(x => ['loads', x]), ...o.connections.map(x => ['connections', x])]) {
    if (!(x > 0)) throw new Error(`--${k}: ${x} is not a positive number`)
  }
  return o
}

/** One server and one client process of `config`; resolves with the client's report. */
async function runOnce (config, mode, connections, rate, duration, pin) {
  const { child: server, msg: s } = await start(SERVER, [], config.hook, config.env, undefined, undefined, pin ? '1' : undefined)
  try {
    const timeoutMs = (WARMUP_S + duration + Math.max(10, 2 * duration) + 60) * 1000
    const args = [s.port, mode, connections, rate, duration, WARMUP_S].map(String)
    const { child: client, msg } = await start(CLIENT, args, config.hook, config.env, undefined, timeoutMs, pin ? '0' : undefined)
    await stop(client)
    return msg
  } finally {
    await stop(server)
  }
}

/** 'shm' when every entry is 'shm', else 'shm×9 tcp×1'. */
function summarize (list) {
  const counts = new Map()
  for (const x of list) counts.set(x, (counts.get(x) ?? 0) + 1)
  return counts.size === 1 ? list[0] : [...counts].map(([k, n]) => `${k}×${n}`).join(' ')
}

/** The transport that ran: the client's, and the server's after a slash when it differs. */
function transportOf (runs) {
  const c = summarize(runs.flatMap(r => r.transports))
  const s = summarize(runs.flatMap(r => r.serverTransports))
  return c === s ? c : `${c} / ${s}`
}

/** One HDR histogram (µs, as the client's) of all `runs`' histograms added together. */
function mergedHistogram (runs) {
  const all = hdr.build({ useWebAssembly: false, lowestDiscernibleValue: 1, highestTrackableValue: 60e6, numberOfSignificantValueDigits: 3 })
  for (const r of runs) all.add(hdr.decodeFromCompressedBase64(r.hist, 32, false))
  return all
}

/** p50, p99, p99.9, max over all rounds' histograms merged (µs), for --json. */
function merged (runs) {
  const all = mergedHistogram(runs)
  return { count: all.totalCount, p50: all.getValueAtPercentile(50), p99: all.getValueAtPercentile(99), p999: all.getValueAtPercentile(99.9), max: all.getValueAtPercentile(100) }
}

/**
 * The points of a CDF of the histogram of all `runs` merged: `{ us, tail }` where `tail` is the
 * fraction of requests slower than `us` (1 - CDF), from each of its recorded values' buckets.
 */
function cdfPoints (runs) {
  const all = mergedHistogram(runs)
  const points = []
  // The percentiles a log tail axis shows evenly: 0..90 by 10, then 9s up to 99.999, then max.
  const ps = [1, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 99, 99.5, 99.9, 99.95, 99.99, 99.999]
  for (const p of ps) points.push({ us: all.getValueAtPercentile(p), tail: Math.max(1 - p / 100, 1e-6) })
  points.push({ us: all.getValueAtPercentile(100), tail: 1 / Math.max(all.totalCount, 1) })
  return points
}

/** Writes the CDF plot (--plot): one panel per load and connection count, one line per configuration. */
async function plotCdf (file, cells, o) {
  let vegaPath
  try { vegaPath = require.resolve('vega', { paths: [__dirname, path.join(__dirname, '..', 'tools')] }) } catch {
    throw new Error('--plot needs vega: npm install (it comes with the fastsock-tools workspace)')
  }
  const vega = await import(require('url').pathToFileURL(vegaPath).href)
  const values = []
  for (const cell of cells) {
    for (const c of CONFIGS) {
      for (const pt of cdfPoints(cell.runs[c.name])) values.push({ panel: `${cell.load} % load, ${cell.connections} conn`, config: c.name, ...pt })
    }
  }
  const panels = [...new Set(values.map(v => v.panel))]
  const spec = {
    $schema: 'https://vega.github.io/schema/vega/v5.json',
    autosize: 'pad',
    padding: 10,
    title: { text: `http latency at a fixed rate (bench/http-latency.js, ${o.rounds} round(s) × ${o.duration} s merged): fraction of requests slower than x`, offset: 16 },
    data: [{ name: 'pts', values }],
    scales: [{ name: 'color', type: 'ordinal', domain: CONFIGS.map(c => c.name), range: ['#4c78a8', '#e45756', '#54a24b'] }],
    legends: [{ stroke: 'color', title: 'configuration', orient: 'right', symbolType: 'stroke' }],
    layout: { columns: 2, padding: 30 },
    marks: panels.map(panel => ({
      type: 'group',
      encode: { update: { width: { value: 400 }, height: { value: 190 } } },
      data: [{ name: 'p', source: 'pts', transform: [{ type: 'filter', expr: `datum.panel === ${JSON.stringify(panel)}` }] }],
      title: { text: panel },
      scales: [
        { name: 'x', type: 'log', domain: { data: 'p', field: 'us' }, range: [0, 400], nice: true },
        { name: 'y', type: 'log', domain: [1e-5, 1], range: [190, 0] }
      ],
      axes: [
        { orient: 'bottom', scale: 'x', title: 'latency (µs, log)', grid: true, tickCount: 6 },
        { orient: 'left', scale: 'y', title: 'percentile (1 - CDF, log)', grid: true, values: [1, 0.1, 0.01, 0.001, 0.0001, 0.00001], encode: { labels: { update: { text: { signal: "datum.value === 1 ? 'p0' : 'p' + format(100 - datum.value * 100, '.5~')" } } } } }
      ],
      marks: [{
        type: 'group',
        from: { facet: { name: 'series', data: 'p', groupby: 'config' } },
        marks: [{
          type: 'line',
          from: { data: 'series' },
          sort: { field: 'datum.us' },
          encode: { enter: { x: { scale: 'x', field: 'us' }, y: { scale: 'y', field: 'tail' }, stroke: { scale: 'color', field: 'config' }, strokeWidth: { value: 2 } } }
        }]
      }]
    }))
  }
  const view = new vega.View(vega.parse(spec), { renderer: 'none' })
  fs.writeFileSync(file, await view.toSVG())
}

const fmt = (x, digits = 0) => Number.isFinite(x) ? x.toFixed(digits) : '-'

async function main () {
  const o = options()
  const startedAt = new Date().toISOString()
  const warnings = []
  const saturation = {}
  for (const n of o.connections) {
    const msg = await runOnce(CONFIGS[0], 'closed', n, 0, o.saturationS, o.pin)
    if (!(msg.achieved > 0)) throw new Error(`saturation run with ${n} connections: no response (${msg.errors} errors)`)
    saturation[n] = { rps: msg.achieved, run: msg }
    process.stderr.write(`  saturation, net, ${n} connection${n > 1 ? 's' : ''}: ${msg.achieved.toFixed(0)} req/s closed loop (p50 ${msg.p50} µs, ${msg.errors} errors)\n`)
  }

  const cells = []
  for (const load of o.loads) {
    for (const n of o.connections) cells.push({ load, connections: n, rate: saturation[n].rps * load / 100, runs: Object.fromEntries(CONFIGS.map(c => [c.name, []])) })
  }
  for (let r = 0; r < o.rounds; r++) {
    for (const cell of cells) {
      for (const c of CONFIGS) {
        const msg = await runOnce(c, 'open', cell.connections, cell.rate, o.duration, o.pin)
        cell.runs[c.name].push(msg)
        process.stderr.write(`  round ${r + 1}/${o.rounds} ${String(cell.load).padStart(3)} % ${String(cell.connections).padStart(3)} conn ${c.name.padEnd(4)} ` +
          `${msg.achieved.toFixed(0).padStart(6)}/${cell.rate.toFixed(0)} req/s  p50 ${msg.p50} µs  p99 ${msg.p99} µs  p99.9 ${msg.p999} µs  max ${msg.max} µs  ` +
          `(client on ${summarize(msg.transports)}, server on ${summarize(msg.serverTransports)})\n`)
      }
    }
  }

  for (const cell of cells) {
    cell.median = {}
    for (const c of CONFIGS) {
      const rs = cell.runs[c.name]
      const m = k => median(rs.map(x => x[k]))
      cell.median[c.name] = { transport: transportOf(rs), achieved: m('achieved'), p50: m('p50'), p99: m('p99'), p999: m('p999'), max: m('max'), lagP99: m('lagP99'), merged: merged(rs) }
      const where = `${cell.load} % × ${cell.connections} conn, ${c.name}`
      const seen = [...rs.flatMap(x => x.transports), ...rs.flatMap(x => x.serverTransports)]
      if (seen.some(t => t !== c.expect)) warnings.push(`${where}: ran on ${cell.median[c.name].transport}, not ${c.expect}`)
      const errors = rs.reduce((a, x) => a + x.errors, 0)
      const unfinished = rs.reduce((a, x) => a + x.unfinished, 0)
      if (errors || unfinished) warnings.push(`${where}: ${errors} errors, ${unfinished} requests unanswered`)
      if (rs.some(x => x.sockets !== cell.connections)) warnings.push(`${where}: ${rs.map(x => x.sockets).join(', ')} sockets used, not ${cell.connections}`)
      if (cell.median[c.name].achieved < 0.95 * cell.rate) warnings.push(`${where}: achieved ${fmt(cell.median[c.name].achieved)} of ${fmt(cell.rate)} req/s (the schedule fell behind: latencies include the backlog)`)
    }
  }

  const lines = [
    `http latency at a fixed request rate (open loop, coordinated omission corrected; GET, 11-byte body, keep-alive), ${o.duration} s per run after ${WARMUP_S} s warm-up, median of ${o.rounds} run${o.rounds > 1 ? 's' : ''}`,
    `saturation (plain net, closed loop, ${o.saturationS} s): ${o.connections.map(n => `${fmt(saturation[n].rps)} req/s with ${n} connection${n > 1 ? 's' : ''}`).join(', ')}`,
    `(latencies in µs from the due time, HDR histogram, 3 significant digits; send lag: how late requests went out; × net: ratio to net's, > 1 slower${o.pin ? '; pinned: client on CPU 0, server on CPU 1' : ''})`,
    '',
    '| load | conns | config | transport | target req/s | achieved req/s | p50 µs | p99 µs | p99.9 µs | max µs | send lag p99 µs | p99 × net | p99.9 × net |',
    '| ---: | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |'
  ]
  for (const cell of cells) {
    const base = cell.median.net
    for (const c of CONFIGS) {
      const m = cell.median[c.name]
      lines.push(`| ${cell.load} % | ${cell.connections} | ${c.name} | ${m.transport} | ${fmt(cell.rate)} | ${fmt(m.achieved)} | ${fmt(m.p50)} | ${fmt(m.p99)} | ${fmt(m.p999)} | ${fmt(m.max)} | ${fmt(m.lagP99)} | ${fmt(m.p99 / base.p99, 2)} | ${fmt(m.p999 / base.p999, 2)} |`)
    }
  }
  if (warnings.length) lines.push('', 'warnings:', ...warnings.map(w => `  ${w}`))
  process.stdout.write(lines.join('\n') + '\n')

  if (o.plot) {
    await plotCdf(o.plot, cells, o)
    process.stdout.write(`CDF plot: ${o.plot}\n`)
  }

  if (o.json) {
    const out = { tool: 'bench/http-latency.js', startedAt, options: { ...o, warmupS: WARMUP_S }, configs: CONFIGS, saturation, cells, warnings }
    fs.writeFileSync(o.json, JSON.stringify(out, null, 2) + '\n')
    process.stdout.write(`raw results: ${o.json}\n`)
  }
}

main().catch(err => { process.stderr.write(`${err.stack}\n`); process.exit(1) })
