'use strict'
// grpc-js client for bench/grpc.js, one channel: unary 100 B calls one at a time (calls/s),
// server streaming of 16 KiB messages (MB/s), bidi 1 KiB messages with 64 in flight (msg/s).
// Args: <port> <ms per workload> <server JSON> (its `path`: a UNIX socket to connect to).
const diagnostics = require('diagnostics_channel')
const { grpc, Client, calls } = require('./_grpc-service')
const { timed, transportOf } = require('./_wrapped-bench')
const [port, ms] = process.argv.slice(2).map(Number)
let last = null
diagnostics.subscribe('net.client.socket', m => { last = m.socket })
const sock = JSON.parse(process.argv[4] ?? '{}').path
const client = new Client(sock ? `unix:${sock}` : `127.0.0.1:${port}`, grpc.credentials.createInsecure())
const c = calls(client)
const serverCpu = async () => (await c.info()).cpuUs

function bidi (ms, inFlight, size) {
  return new Promise((resolve, reject) => {
    const call = client.Bidi()
    const msg = Buffer.alloc(size, 2)
    let n = 0
    let counting = false
    let t0 = 0n
    const warmEnd = Date.now() + ms / 4
    let end = 0
    call.on('data', () => {
      if (!counting && Date.now() >= warmEnd) { counting = true; n = 0; t0 = process.hrtime.bigint(); end = Date.now() + ms }
      n++
      if (!counting || Date.now() < end) call.write(msg)
      else if (n >= 0 && !call.writableEnded) { call.end() }
    })
    call.on('error', reject)
    call.on('end', () => resolve(n / (Number(process.hrtime.bigint() - t0) / 1e9)))
    for (let i = 0; i < inFlight; i++) call.write(msg)
  })
}

async function main () {
  const small = Buffer.alloc(100, 3)
  await c.unary(small)
  const seen = { transport: transportOf(last), serverTransport: (await c.info()).transport }
  const unary = await timed(ms, () => c.unary(small), serverCpu)
  const stream = await timed(ms, () => c.serverStream(256, 16384), serverCpu)
  const bidiRate = await bidi(ms, 64, 1024)
  process.stdout.write(JSON.stringify({
    ...seen,
    results: {
      'gRPC unary 100 B, 1 channel, one call at a time': { value: unary.ops / unary.seconds, unit: 'calls/s', better: 'higher' },
      'gRPC unary, CPU per call (both processes)': { value: unary.cpuUs, unit: 'CPU µs/call', better: 'lower' },
      'gRPC server streaming, 16 KiB messages': { value: stream.ops * 256 * 16384 / stream.seconds / 1e6, unit: 'MB/s', better: 'higher' },
      'gRPC bidi streaming, 1 KiB messages, 64 in flight': { value: bidiRate, unit: 'msg/s', better: 'higher' }
    }
  }) + '\n')
  client.close()
}
main().catch(err => { process.stderr.write(`${err.stack}\n`); process.exit(1) })
process.on('SIGTERM', () => process.exit(0))
