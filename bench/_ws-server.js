'use strict'
// An unmodified ws echo server (bench/ws.js). Prints { port }. The first message of each
// connection is answered with the transport of its socket (when fastsock patched net).
const http = require('http')
const { WebSocketServer } = require('ws')
const server = http.createServer()
const wss = new WebSocketServer({ server })
wss.on('connection', (ws, req) => {
  let first = true
  ws.on('message', (m, isBinary) => {
    if (first) { first = false; return ws.send(String(req.socket.transport ?? 'net')) }
    ws.send(m, { binary: isBinary })
  })
})
server.listen(0, '127.0.0.1', () => process.stdout.write(JSON.stringify({ port: server.address().port }) + '\n'))
process.on('SIGTERM', () => process.exit(0))
