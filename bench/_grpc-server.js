'use strict'
// An unmodified grpc-js server (bench/grpc.js) on 127.0.0.1, insecure (h2c, as local services
// and sidecars run). Prints { port }.
const diagnostics = require('diagnostics_channel')
const { grpc, definition, implementation } = require('./_grpc-service')
const { transportOf, cpuUs } = require('./_wrapped-bench')
let last = null
diagnostics.subscribe('net.server.socket', m => { last = m.socket })
const server = new grpc.Server()
server.addService(definition, implementation(() => ({ transport: transportOf(last), cpuUs: cpuUs() })))
server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, port) => {
  if (err) throw err
  process.stdout.write(JSON.stringify({ port }) + '\n')
})
process.on('SIGTERM', () => process.exit(0))
