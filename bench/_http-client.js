'use strict'
// autocannon against 127.0.0.1:<port> for <duration> s with <connections> connections (keep-alive,
// no pipelining). Prints { rps, p50, p99, transport, serverTransport } (latencies in ms).
const autocannon = require('autocannon')
const http = require('http')
const [port, duration, connections] = process.argv.slice(2).map(Number)

function probe () {
  return new Promise((resolve, reject) => {
    const req = http.get({ port, host: '127.0.0.1', agent: false }, res => {
      const out = { transport: String(res.socket.transport ?? 'net'), serverTransport: res.headers['x-transport'] }
      res.resume()
      res.on('end', () => resolve(out))
    })
    req.on('error', reject)
  })
}

probe().then(seen => {
  autocannon({ url: `http://127.0.0.1:${port}/`, connections, duration, pipelining: 1 }, (err, r) => {
    if (err) throw err
    process.stdout.write(JSON.stringify({ rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors: r.errors, ...seen }) + '\n')
  })
})
process.on('SIGTERM', () => process.exit(0))
