'use strict'
// Unmodified http2 servers (bench/http2.js): h2c (http2.createServer) and h2 over TLS
// (http2.createSecureServer). GET / answers 'hello world', GET /big 1 MiB, GET /cpu this
// process's CPU time (µs); x-transport names the rung of the session's connection.
// Prints { port (h2c), tlsPort }, or with BENCH_UNIX=1 { port: 0, path, tlsPath } (UNIX path sockets).
const http2 = require('http2')
const { key, cert } = require('./_tls-fixture')
const { transportOf, cpuUs, unixPath } = require('./_wrapped-bench')
const big = Buffer.alloc(1 << 20, 7)
function onStream (stream, headers) {
  const p = headers[':path']
  stream.respond({ ':status': 200, 'x-transport': transportOf(stream.session.socket) })
  stream.end(p === '/cpu' ? String(cpuUs()) : p === '/big' ? big : 'hello world')
}
const plain = http2.createServer()
plain.on('stream', onStream)
const secure = http2.createSecureServer({ key, cert })
secure.on('stream', onStream)
const sock = unixPath('h2c')
const tlsSock = unixPath('h2')
if (sock) {
  plain.listen(sock, () => secure.listen(tlsSock, () =>
    process.stdout.write(JSON.stringify({ port: 0, path: sock, tlsPath: tlsSock }) + '\n')))
} else {
  plain.listen(0, '127.0.0.1', () => secure.listen(0, '127.0.0.1', () =>
    process.stdout.write(JSON.stringify({ port: plain.address().port, tlsPort: secure.address().port }) + '\n')))
}
process.on('SIGTERM', () => process.exit(0))
