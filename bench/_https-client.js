'use strict'
// https client for bench/https.js: one keep-alive connection, sequential GET / (µs per request),
// then sequential GET /big (1 MiB bodies, MB/s). Args: <port> <ms per workload> <server JSON>
// (its `path`: connect to that UNIX socket instead).
const https = require('https')
const { cert } = require('./_tls-fixture')
const { timed, transportOf } = require('./_wrapped-bench')
const [port, ms] = process.argv.slice(2).map(Number)
const socketPath = JSON.parse(process.argv[4] ?? '{}').path
const agent = new https.Agent({ keepAlive: true, maxSockets: 1 })
let seen = null
function get (p) {
  return new Promise((resolve, reject) => {
    const req = https.get({ host: '127.0.0.1', port, socketPath, path: p, ca: cert, agent }, res => {
      if (!seen) seen = { transport: transportOf(res.socket), serverTransport: res.headers['x-transport'] }
      const parts = []
      res.on('data', d => { parts.push(d) })
      res.on('end', () => resolve(Buffer.concat(parts)))
    })
    req.on('error', reject)
  })
}
async function main () {
  const serverCpu = async () => Number(String(await get('/cpu')))
  const small = await timed(ms, () => get('/'), serverCpu)
  const big = await timed(ms, () => get('/big'), serverCpu)
  process.stdout.write(JSON.stringify({
    ...seen,
    results: {
      'https keep-alive, 1 connection, sequential GET': { value: small.seconds * 1e6 / small.ops, unit: 'µs/req', better: 'lower' },
      'https keep-alive, CPU per request (both processes)': { value: small.cpuUs, unit: 'CPU µs/req', better: 'lower' },
      'https 1 MiB response bodies, 1 connection': { value: big.ops * (1 << 20) / big.seconds / 1e6, unit: 'MB/s', better: 'higher' },
      'https 1 MiB bodies, CPU per MiB (both processes)': { value: big.cpuUs, unit: 'CPU µs/MiB', better: 'lower' }
    }
  }) + '\n')
  agent.destroy()
}
main().catch(err => { process.stderr.write(`${err.stack}\n`); process.exit(1) })
process.on('SIGTERM', () => process.exit(0))
