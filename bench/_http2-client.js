'use strict'
// http2 client for bench/http2.js, one session per server: sequential GET / (µs per request) and
// 16 concurrent streams (requests/s), on h2c and on h2 over TLS; 1 MiB bodies over h2c (MB/s).
// Args: <port> <ms per workload> <server JSON> (its `path`/`tlsPath`: UNIX sockets to connect to).
const http2 = require('http2')
const net = require('net')
const tls = require('tls')
const { cert } = require('./_tls-fixture')
const { timed, transportOf } = require('./_wrapped-bench')
const [, msArg, serverJson] = process.argv.slice(2)
const ms = Number(msArg)
const server = JSON.parse(serverJson)
const seen = {}

function get (session, p, key) {
  return new Promise((resolve, reject) => {
    const req = session.request({ ':path': p })
    const parts = []
    req.on('response', h => { if (key && !seen[key]) seen[key] = { transport: transportOf(session.socket), serverTransport: h['x-transport'] } })
    req.on('data', d => parts.push(d))
    req.on('end', () => resolve(Buffer.concat(parts)))
    req.on('error', reject)
    req.end()
  })
}

async function workloads (session, label, results, withBig) {
  const serverCpu = async () => Number(String(await get(session, '/cpu')))
  await get(session, '/', label)
  const seq = await timed(ms, () => get(session, '/'), serverCpu)
  results[`${label} sequential requests, 1 session`] = { value: seq.seconds * 1e6 / seq.ops, unit: 'µs/req', better: 'lower' }
  results[`${label} sequential, CPU per request (both processes)`] = { value: seq.cpuUs, unit: 'CPU µs/req', better: 'lower' }
  const conc = await timed(ms, () => Promise.all(Array.from({ length: 16 }, () => get(session, '/'))), serverCpu)
  results[`${label} 16 concurrent streams, 1 session`] = { value: conc.ops * 16 / conc.seconds, unit: 'req/s', better: 'higher' }
  if (withBig) {
    const big = await timed(ms, () => get(session, '/big'), serverCpu)
    results[`${label} 1 MiB response bodies`] = { value: big.ops * (1 << 20) / big.seconds / 1e6, unit: 'MB/s', better: 'higher' }
  }
}

async function main () {
  const results = {}
  const h2c = server.path
    ? http2.connect('http://127.0.0.1', { createConnection: () => net.connect(server.path) })
    : http2.connect(`http://127.0.0.1:${server.port}`)
  await workloads(h2c, 'h2c', results, true)
  h2c.close()
  const h2 = server.tlsPath
    ? http2.connect('https://localhost', { createConnection: () => tls.connect({ path: server.tlsPath, ca: cert, servername: 'localhost', ALPNProtocols: ['h2'] }) })
    : http2.connect(`https://localhost:${server.tlsPort}`, { ca: cert })
  await workloads(h2, 'h2 (TLS)', results, false)
  h2.close()
  const t = seen.h2c
  const u = seen['h2 (TLS)']
  process.stdout.write(JSON.stringify({
    transport: t.transport === u.transport ? t.transport : `${t.transport},${u.transport}`,
    serverTransport: t.serverTransport === u.serverTransport ? t.serverTransport : `${t.serverTransport},${u.serverTransport}`,
    results
  }) + '\n')
}
main().catch(err => { process.stderr.write(`${err.stack}\n`); process.exit(1) })
process.on('SIGTERM', () => process.exit(0))
