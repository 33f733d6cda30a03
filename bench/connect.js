'use strict'
/**
 * Connection set-up cost per rung: time from connect() to 'connect' (µs) against a fastsock
 * server in another process, for fastsock's tcp, unix and shm rungs and Node's net.connect,
 * interleaved, `--n` connections each (default 300). Prints median and p90.
 * The fast rungs pay verification (sock_diag + /proc) and the side-channel handshake.
 */
const net = require('net')
const { fork } = require('child_process')
const fastsock = require('..')

const args = process.argv.slice(2)
const N = (() => { const i = args.indexOf('--n'); return i >= 0 ? Number(args[i + 1]) : 300 })()

if (process.argv[2] === 'peer') {
  const server = fastsock.createServer(s => s.end())
  server.listen(0, '127.0.0.1', () => process.send(server.address().port))
  process.on('disconnect', () => process.exit(0))
  return
}

;(async () => {
  const peer = fork(__filename, ['peer'])
  const port = await new Promise(resolve => peer.once('message', resolve))
  const kinds = ['net', 'tcp', 'unix', 'shm']
  const t = Object.fromEntries(kinds.map(k => [k, []]))
  for (let i = 0; i < N; i++) {
    for (const k of kinds) {
      const t0 = process.hrtime.bigint()
      const c = k === 'net' ? net.connect(port, '127.0.0.1') : fastsock.connect({ port, host: '127.0.0.1', transports: [k] })
      await new Promise((resolve, reject) => c.once('connect', resolve).once('error', reject))
      t[k].push(Number(process.hrtime.bigint() - t0) / 1000)
      if (k !== 'net' && c.transport !== k) throw new Error(`asked for ${k}, got ${c.transport}`)
      c.destroy()
      await new Promise(resolve => c.once('close', resolve))
    }
  }
  peer.kill()
  console.log(`connect() to 'connect', µs, ${N} connections per channel (interleaved)`)
  for (const k of kinds) {
    const a = t[k].sort((x, y) => x - y)
    console.log(`${(k === 'net' ? 'net:tcp' : 'fastsock:' + k).padEnd(14)} median ${a[a.length >> 1].toFixed(0).padStart(6)}   p90 ${a[Math.floor(a.length * 0.9)].toFixed(0).padStart(6)}`)
  }
})()
