'use strict'
/**
 * Shared by bench/https.js, bench/http2.js and bench/grpc.js: protocols whose Node side is a C++
 * stream consumer (TLSWrap, nghttp2). Runs an unmodified server and client, each in its own
 * process, with or without the preload hook (dist/register.js via NODE_OPTIONS, as `fastsock run`
 * does), several rounds interleaved, and prints the median of each workload per configuration.
 *
 * Configurations (hook on both ends unless "no"):
 *   net        no hook: Node's net over TCP loopback, the baseline
 *   preloaded  the hook with its defaults: whatever rung fastsock picks for these sockets
 *   unix       FASTSOCK_TRANSPORTS=unix,tcp: the unix rung (a real Pipe handle under TLS/nghttp2)
 *   shm        FASTSOCK_TRANSPORTS=shm,tcp: the handle-less shm rung (Node's JSStreamSocket
 *              between TLS/nghttp2 and the socket, sped up by the hook: docs/transparency.md)
 *   net unix   no hook: Node's net over a UNIX path socket (BENCH_UNIX=1: the server listens on
 *              a path, the client connects to it). The ceiling of a kernel-handle rung: TLSWrap
 *              and nghttp2 native over a UNIX socket, nothing of fastsock's in the way
 *   net again  `net` once more, last in each round: how far two identical configurations
 *              differ here (the noise floor the ratios are read against)
 *
 * The client script gets `<port> <ms per workload> <the server's JSON line>` and prints one JSON line
 * { transport, serverTransport, results: { <workload>: { value, unit, better: 'higher'|'lower' } } }.
 * The server script prints { port }.
 */
const fs = require('fs')
const path = require('path')
const { start, stop, median, parseArgs: parseArgsOf } = require('./_procs')

const ROOT = path.join(__dirname, '..')

const DEFAULT_CONFIGS = [
  { name: 'net', hook: false, env: {} },
  { name: 'preloaded', hook: true, env: {} },
  { name: 'unix', hook: true, env: { FASTSOCK_TRANSPORTS: 'unix,tcp' } },
  { name: 'shm', hook: true, env: { FASTSOCK_TRANSPORTS: 'shm,tcp' } },
  { name: 'net unix', hook: false, env: { BENCH_UNIX: '1' } },
  { name: 'net again', hook: false, env: {} }
]
// BENCH_CONFIGS='[{"name":"x","hook":true,"env":{...},"require":"/abs/extra.js"}, ...]' replaces
// the list (experiments: an extra preload after the hook, other settings); keep `net` first.
const CONFIGS = process.env.BENCH_CONFIGS ? JSON.parse(process.env.BENCH_CONFIGS) : DEFAULT_CONFIGS

/** `--rounds`, `--ms`... as in `defaults`, and `--only <config,...>`. */
const parseArgs = defaults => parseArgsOf(defaults, CONFIGS)

const fmt = v => v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2)

/**
 * Runs every configuration `rounds` times, interleaved (drift hits them alike), `ms` per
 * workload. Prints one table per workload: median value, × net (a ratio > 1 is fastsock faster,
 * whatever the unit), and the noise floor (net vs net again, median per round).
 */
async function run ({ title, serverScript, clientScript, rounds, ms, only }) {
  const configs = only ? CONFIGS.filter(c => only.includes(c.name) || c.name === 'net') : CONFIGS
  const results = Object.fromEntries(configs.map(c => [c.name, []]))
  const t0 = Date.now()
  for (let r = 0; r < rounds; r++) {
    for (const c of configs) {
      const { child: server, msg: s } = await start(serverScript, [], c.hook, c.env, c.require)
      try {
        const { child: client, msg } = await start(clientScript, [String(s.port), String(ms), JSON.stringify(s)], c.hook, c.env, c.require)
        await stop(client)
        results[c.name].push(msg)
        const line = Object.entries(msg.results).map(([k, v]) => `${k} ${fmt(v.value)} ${v.unit}`).join(', ')
        process.stderr.write(`  round ${r + 1}/${rounds} ${c.name.padEnd(9)} (client ${msg.transport}, server ${msg.serverTransport}) ${line}\n`)
      } finally {
        await stop(server)
      }
    }
  }
  const workloads = Object.keys(results.net[0].results)
  const lines = [`${title}: median of ${rounds} rounds, ${ms} ms per workload, configurations interleaved (${((Date.now() - t0) / 1000).toFixed(0)} s)`, '']
  const summary = {}
  for (const w of workloads) {
    const { unit, better } = results.net[0].results[w]
    const ratio = (a, b) => better === 'higher' ? a / b : b / a
    lines.push(`**${w}** (${unit}, ${better} is better)`, '', '| config | transport (client/server) | median | × net | rounds |', '| --- | --- | ---: | ---: | --- |')
    const base = median(results.net.map(m => m.results[w].value))
    summary[w] = {}
    for (const c of configs) {
      const vals = results[c.name].map(m => m.results[w].value)
      const med = median(vals)
      summary[w][c.name] = { median: med, ratio: ratio(med, base) }
      const tr = `${results[c.name][0].transport}/${results[c.name][0].serverTransport}`
      lines.push(`| ${c.name} | ${tr} | ${fmt(med)} | ${ratio(med, base).toFixed(2)} | ${vals.map(fmt).join(', ')} |`)
    }
    if (results['net again']) {
      const noise = median(results.net.map((n, i) => Math.abs(1 - ratio(results['net again'][i].results[w].value, n.results[w].value)))) * 100
      lines.push('', `noise floor: net vs net again differ by ${noise.toFixed(1)} % (median per round)`)
    }
    lines.push('')
  }
  process.stdout.write(lines.join('\n'))
  if (process.env.BENCH_JSON) fs.writeFileSync(process.env.BENCH_JSON, JSON.stringify({ title, rounds, ms, results, summary }, null, 2))
  return summary
}

/** This process's CPU time (user + system) in µs. */
function cpuUs () { const u = process.cpuUsage(); return u.user + u.system }

/**
 * For the client scripts: runs `step()` (one operation, a promise) again and again, first for
 * ms/4 as warm-up, then for `ms`; returns { ops, seconds, cpuUs } (cpuUs: both processes' CPU
 * per op, when `serverCpu()` (a promise of the server's cpuUs) is given; else the client's).
 */
async function timed (ms, step, serverCpu) {
  const warm = Date.now() + ms / 4
  while (Date.now() < warm) await step()
  let ops = 0
  const s0 = serverCpu ? await serverCpu() : 0
  const c0 = cpuUs()
  const t0 = process.hrtime.bigint()
  const end = Date.now() + ms
  while (Date.now() < end) { await step(); ops++ }
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9
  const c1 = cpuUs()
  const s1 = serverCpu ? await serverCpu() : 0
  return { ops, seconds, cpuUs: (c1 - c0 + s1 - s0) / ops }
}

/**
 * The transport of a socket (fastsock's transportOf when the hook is on); without the hook 'net',
 * or 'net:unix' in the `net unix` configuration.
 */
function transportOf (socket) {
  const reg = require('net')[Symbol.for('fastsock.register.state')]
  if (!reg || !reg.patched || !socket) return process.env.BENCH_UNIX === '1' ? 'net:unix' : 'net'
  return String(require(ROOT).transportOf(socket) ?? 'none')
}

/**
 * For the server scripts in the `net unix` configuration (BENCH_UNIX=1): a fresh UNIX socket path
 * in the temporary directory for the listener called `name` (removed at exit); null otherwise.
 */
function unixPath (name) {
  if (process.env.BENCH_UNIX !== '1') return null
  const p = path.join(require('os').tmpdir(), `fastsock-bench-${process.pid}-${name}.sock`)
  fs.rmSync(p, { force: true })
  process.on('exit', () => fs.rmSync(p, { force: true }))
  return p
}

module.exports = { run, parseArgs, median, timed, transportOf, cpuUs, unixPath }
