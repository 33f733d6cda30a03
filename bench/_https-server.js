'use strict'
// An unmodified https server (bench/https.js): GET / answers 'hello world', GET /big 1 MiB, GET /cpu its CPU time (µs).
// Each response names the transport of its connection in x-transport. Prints { port }.
const https = require('https')
const { key, cert } = require('./_tls-fixture')
const { transportOf, cpuUs } = require('./_wrapped-bench')
const big = Buffer.alloc(1 << 20, 7)
const server = https.createServer({ key, cert }, (req, res) => {
  res.setHeader('x-transport', transportOf(req.socket))
  if (req.url === '/cpu') return res.end(String(cpuUs()))
  res.end(req.url === '/big' ? big : 'hello world')
})
server.listen(0, '127.0.0.1', () => process.stdout.write(JSON.stringify({ port: server.address().port }) + '\n'))
process.on('SIGTERM', () => process.exit(0))
