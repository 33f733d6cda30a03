'use strict'
// An unmodified https server (bench/https.js): GET / answers 'hello world', GET /big 1 MiB, GET /cpu its CPU time (µs).
// Each response names the transport of its connection in x-transport. Prints { port }, or
// { port: 0, path } on a UNIX path socket (BENCH_UNIX=1).
const https = require('https')
const { key, cert } = require('./_tls-fixture')
const { transportOf, cpuUs, unixPath } = require('./_wrapped-bench')
const big = Buffer.alloc(1 << 20, 7)
const server = https.createServer({ key, cert }, (req, res) => {
  res.setHeader('x-transport', transportOf(req.socket))
  if (req.url === '/cpu') return res.end(String(cpuUs()))
  res.end(req.url === '/big' ? big : 'hello world')
})
const sock = unixPath('https')
if (sock) server.listen(sock, () => process.stdout.write(JSON.stringify({ port: 0, path: sock }) + '\n'))
else server.listen(0, '127.0.0.1', () => process.stdout.write(JSON.stringify({ port: server.address().port }) + '\n'))
process.on('SIGTERM', () => process.exit(0))
