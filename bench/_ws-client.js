'use strict'
// <connections> ws clients to 127.0.0.1:<port>, each sending a 64-byte binary message and
// waiting for its echo, again and again, for <duration> s. Prints { rps (messages/s), p50, p99
// (round trip, ms), transport, serverTransport }.
const { WebSocket } = require('ws')
const [port, duration, connections] = process.argv.slice(2).map(Number)
const payload = Buffer.alloc(64, 1)

function client () {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/`)
    ws.once('error', reject)
    ws.once('open', () => {
      ws.send('hello')
      ws.once('message', m => resolve({ ws, transport: String(ws._socket.transport ?? 'net'), serverTransport: String(m) }))
    })
  })
}

async function main () {
  const clients = await Promise.all(Array.from({ length: connections }, client))
  const samples = []
  let count = 0
  const end = Date.now() + duration * 1000
  await Promise.all(clients.map(({ ws }) => new Promise(resolve => {
    let t0
    const send = () => { t0 = process.hrtime.bigint(); ws.send(payload) }
    ws.on('message', () => {
      const dt = Number(process.hrtime.bigint() - t0) / 1e6
      count++
      if (samples.length < 2e6) samples.push(dt)
      if (Date.now() < end) send()
      else resolve()
    })
    send()
  })))
  samples.sort((a, b) => a - b)
  const q = p => +samples[Math.min(samples.length - 1, Math.floor(p * samples.length))].toFixed(3)
  process.stdout.write(JSON.stringify({ rps: count / duration, p50: q(0.5), p99: q(0.99), transport: clients[0].transport, serverTransport: clients[0].serverTransport }) + '\n')
  for (const { ws } of clients) ws.terminate()
}
main()
process.on('SIGTERM', () => process.exit(0))
