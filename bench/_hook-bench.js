'use strict'
/**
 * Shared by bench/http.js and bench/ws.js: runs an unmodified server and a load client, each in
 * its own process, with or without the preload hook (dist/register.js via NODE_OPTIONS, as
 * `fastsock run` does), several rounds interleaved, and prints medians side by side.
 *
 * Configurations (server hook / client hook):
 *   net       no / no    Node's net over TCP loopback: the baseline
 *   shm       yes / yes  fastsock's best rung (shm), its defaults (adaptive polling on)
 *   shm no poll yes / yes  shm with FASTSOCK_SHM_POLL_US=0 in both: polling off, for comparison
 *   unix      yes / yes  FASTSOCK_TRANSPORTS=unix,tcp in both: the unix rung
 *   fallback  no / yes   the client has the hook, the server is plain net: TCP after the chain
 *                        finds no side channel. Its cost against `net` is the fallback overhead
 *                        (budget: 3 %).
 *   net again no / no    `net` once more, last in each round: how far two identical
 *                        configurations differ here (the noise floor the overhead is read against)
 *
 * The fallback overhead is paired per round: 1 - fallback / mean(net, net again) of that round,
 * median over the rounds (drift between rounds cancels).
 */
const { start, stop, median, parseArgs } = require('./_procs')

const CONFIGS = [
  { name: 'net', server: false, client: false, env: {} },
  { name: 'shm', server: true, client: true, env: {} },
  { name: 'shm no poll', server: true, client: true, env: { FASTSOCK_SHM_POLL_US: '0' } },
  { name: 'unix', server: true, client: true, env: { FASTSOCK_TRANSPORTS: 'unix,tcp' } },
  { name: 'fallback', server: false, client: true, env: {} },
  { name: 'net again', server: false, client: false, env: {} }
]

/**
 * Runs every configuration `rounds` times (interleaved, so drift hits them alike). `serverScript`
 * prints { port }; `clientScript port duration connections` prints { rps, p50, p99, transport }.
 * Prints the table and the fallback overhead; returns the medians.
 */
async function run ({ title, unit, latencyNote, serverScript, clientScript, rounds, duration, connections }) {
  const results = Object.fromEntries(CONFIGS.map(c => [c.name, []]))
  for (let r = 0; r < rounds; r++) {
    for (const c of CONFIGS) {
      const { child: server, msg: s } = await start(serverScript, [], c.server, c.env)
      try {
        const { child: client, msg } = await start(clientScript, [String(s.port), String(duration), String(connections)], c.client, c.env)
        await stop(client)
        results[c.name].push(msg)
        process.stderr.write(`  round ${r + 1}/${rounds} ${c.name.padEnd(8)} ${msg.rps.toFixed(0).padStart(7)} ${unit}/s  p50 ${msg.p50} ms  p99 ${msg.p99} ms  (client on ${msg.transport}, server on ${msg.serverTransport ?? '?'})\n`)
      } finally {
        await stop(server)
      }
    }
  }
  const med = {}
  for (const c of CONFIGS) {
    const rs = results[c.name]
    med[c.name] = { rps: median(rs.map(x => x.rps)), p50: median(rs.map(x => x.p50)), p99: median(rs.map(x => x.p99)), transport: rs[0].transport }
  }
  const base = med.net
  const lines = [
    `${title}: ${connections} connections, ${duration} s per run, median of ${rounds} runs`,
    `(p50/p99: ${latencyNote}; the last column is the mean latency by Little's law, in µs)`,
    '',
    `| config | transport | ${unit}/s | × net | p50 ms | p99 ms | mean µs (connections / rate) |`,
    '| --- | --- | ---: | ---: | ---: | ---: | ---: |'
  ]
  for (const c of CONFIGS) {
    const m = med[c.name]
    lines.push(`| ${c.name} | ${m.transport} | ${m.rps.toFixed(0)} | ${(m.rps / base.rps).toFixed(2)} | ${m.p50} | ${m.p99} | ${(connections / m.rps * 1e6).toFixed(0)} |`)
  }
  const perRound = results.fallback.map((f, i) => 1 - f.rps / ((results.net[i].rps + results['net again'][i].rps) / 2))
  const overhead = median(perRound) * 100
  const noise = median(results.net.map((n, i) => Math.abs(1 - results['net again'][i].rps / n.rps))) * 100
  lines.push('',
    `fallback overhead (hook on the client, plain net server, TCP): ${overhead.toFixed(1)} % of ${unit}/s vs plain net, paired per round, median (budget 3 %)${overhead > 3 ? '  OVER BUDGET' : ''}`,
    `noise floor: net vs net again differ by ${noise.toFixed(1)} % (median per round); rounds: ${perRound.map(x => (x * 100).toFixed(1) + ' %').join(', ')}`)
  process.stdout.write(lines.join('\n') + '\n')
  return { med, overhead }
}

module.exports = { run, parseArgs, median }
