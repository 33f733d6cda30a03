'use strict'
/**
 * One-way streaming bandwidth with the receiver on Node's zero-allocation read API:
 * `onread: { buffer, callback }` (a fixed 1 MiB buffer, filled in place), for fastsock's shm
 * rung and Node's net over TCP and over a UNIX path, side by side in one run, plus memcpy.
 * The peer (a forked process) keeps the pipe full with 1 MiB writes for `--ms` (default 1500);
 * the receiver counts bytes. Median of `--runs` (default 3) interleaved runs.
 *
 * Why this exists beside `fastsock pipe --mode stream`: there the receiver uses 'data' events,
 * which cost a fresh Buffer per chunk (allocation + first touch, measured ~13 GB/s on these VMs
 * whatever the transport); onread is how a Node program receives at full speed today.
 *
 * Prints: MB/s (10^6 B/s) per channel, ratio vs net:tcp, % of memcpy (same run), and the ceiling
 * of a 'data' receiver: a fresh 64 KiB Buffer allocated and filled per chunk.
 */
const net = require('net')
const os = require('os')
const path = require('path')
const { fork } = require('child_process')
const fastsock = require('..')
const { floors: native } = require('../dist/internal')

const args = process.argv.slice(2)
const opt = (name, dflt) => { const i = args.indexOf(`--${name}`); return i >= 0 ? Number(args[i + 1]) : dflt }
const MS = opt('ms', 1500)
const RUNS = opt('runs', 3)
const CHUNK = 1 << 20

if (process.argv[2] === 'peer') {
  // Sender: one server per channel, each streams 1 MiB writes for MS, then ends.
  const kind = process.argv[3]
  const onConn = s => {
    const msg = Buffer.alloc(CHUNK, 7)
    const until = Date.now() + Number(process.argv[4])
    const pump = () => { while (Date.now() < until) if (!s.write(msg)) return s.once('drain', pump); s.end() }
    s.on('error', () => {})
    pump()
  }
  const server = kind === 'shm' ? fastsock.createServer({ transports: ['shm'] }, onConn) : net.createServer(onConn)
  const where = kind === 'net-unix' ? path.join(os.tmpdir(), `fastsock-bench-${process.pid}.sock`) : 0
  server.listen(where, kind === 'net-unix' ? undefined : '127.0.0.1', () => process.send(kind === 'net-unix' ? where : server.address().port))
  process.on('disconnect', () => process.exit(0))
  return
}

async function once (kind) {
  const peer = fork(__filename, ['peer', kind, String(MS)])
  const addr = await new Promise(resolve => peer.once('message', resolve))
  let bytes = 0
  const onread = { buffer: new Uint8Array(CHUNK), callback: n => { bytes += n } }
  const sock = kind === 'shm'
    ? fastsock.connect({ port: addr, host: '127.0.0.1', transports: ['shm'], onread })
    : net.connect(kind === 'net-unix' ? { path: addr, onread } : { port: addr, host: '127.0.0.1', onread })
  await new Promise((resolve, reject) => sock.once('connect', resolve).once('error', reject))
  const ran = sock.transport ?? kind.replace('net-', '')
  const t0 = process.hrtime.bigint()
  await new Promise(resolve => sock.once('end', resolve))
  const s = Number(process.hrtime.bigint() - t0) / 1e9
  sock.destroy()
  peer.kill()
  return { mbps: bytes / s / 1e6, ran }
}

const median = a => { const b = [...a].sort((x, y) => x - y); return b.length % 2 ? b[b.length >> 1] : (b[b.length / 2 - 1] + b[b.length / 2]) / 2 }

;(async () => {
  const kinds = ['net-tcp', 'net-unix', 'shm']
  const res = Object.fromEntries(kinds.map(k => [k, []]))
  const ran = {}
  for (let r = 0; r < RUNS; r++) {
    for (const k of kinds) {
      const x = await once(k)
      res[k].push(x.mbps)
      ran[k] = x.ran
    }
  }
  const memcpy = native ? CHUNK * 200 / native.memcpyTimeNs(CHUNK, 200) * 1000 : NaN
  const tcp = median(res['net-tcp'])
  console.log(`Streaming 1 MiB writes, receiver on onread (1 MiB buffer); median of ${RUNS} runs of ${MS} ms`)
  console.log('channel    ran    MB/s     x net:tcp  % of memcpy')
  for (const k of kinds) {
    const m = median(res[k])
    console.log(`${k.padEnd(10)} ${String(ran[k]).padEnd(6)} ${m.toFixed(0).padStart(7)}  ${(m / tcp).toFixed(2).padStart(8)}x  ${(m / memcpy * 100).toFixed(0).padStart(9)}%`)
  }
  console.log(`memcpy 1 MiB (hot, same run): ${memcpy.toFixed(0)} MB/s`)
  // What a 'data' receiver pays per chunk whatever the transport: a fresh 64 KiB Buffer, filled.
  const src = Buffer.alloc(CHUNK, 3)
  for (let i = 0; i < 2000; i++) src.copy(Buffer.allocUnsafe(65536), 0, 0, 65536) // warm-up
  const n = 20000
  const t0 = process.hrtime.bigint()
  for (let i = 0; i < n; i++) src.copy(Buffer.allocUnsafe(65536), 0, 0, 65536)
  const mbps = n * 65536 / (Number(process.hrtime.bigint() - t0) / 1e9) / 1e6
  console.log(`a fresh 64 KiB Buffer per chunk, allocated and filled ('data' path ceiling): ${mbps.toFixed(0)} MB/s`)
})()
