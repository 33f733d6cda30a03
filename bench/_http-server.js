'use strict'
// An unmodified http server (bench/http.js): 'hello world' for every request. Prints { port }.
// Each response carries the transport of its connection in a header (when fastsock patched net).
const http = require('http')
const server = http.createServer((req, res) => {
  res.setHeader('x-transport', String(req.socket.transport ?? 'net'))
  res.end('hello world')
})
server.listen(0, '127.0.0.1', () => process.stdout.write(JSON.stringify({ port: server.address().port }) + '\n'))
process.on('SIGTERM', () => process.exit(0))
