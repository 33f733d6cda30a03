'use strict'
// An unmodified grpc-js server (bench/grpc.js) on 127.0.0.1, insecure (h2c, as local services
// and sidecars run). Prints { port }, or with BENCH_UNIX=1 { port: 0, path } (a UNIX path socket).
const diagnostics = require('diagnostics_channel')
const { grpc, definition, implementation } = require('./_grpc-service')
const { transportOf, cpuUs, unixPath } = require('./_wrapped-bench')
let last = null
diagnostics.subscribe('net.server.socket', m => { last = m.socket })
const server = new grpc.Server()
server.addService(definition, implementation(() => ({ transport: transportOf(last), cpuUs: cpuUs() })))
const sock = unixPath('grpc')
server.bindAsync(sock ? `unix:${sock}` : '127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, port) => {
  if (err) throw err
  process.stdout.write(JSON.stringify(sock ? { port: 0, path: sock } : { port }) + '\n')
})
process.on('SIGTERM', () => process.exit(0))
