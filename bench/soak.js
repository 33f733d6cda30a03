'use strict'
/**
 * Soak: connect / echo 100 bytes / close, `--cycles` times (default 10^5) per channel, client and
 * server in this one process, for fastsock's shm, unix and tcp rungs and for Node's net (server
 * and client). Every 10^4 cycles (`--every`) it prints, per channel: JS heap after GC (MB), RSS
 * (MB), open fds (/proc/self/fd entries) and mappings (/proc/self/maps lines); at the end the
 * growth after the first 1000 cycles (targets, issue 12: heap <= +2 MB and RSS <= +20 MB at
 * 10^4 cycles). Channels run one after another (a leak in one would show in the next's start).
 *
 *   node --expose-gc bench/soak.js [--cycles 100000] [--every 10000] [--only shm,unix]
 */
const fs = require('fs')
const net = require('net')
const fastsock = require('..')

const args = process.argv.slice(2)
const arg = (name, def) => { const i = args.indexOf(`--${name}`); return i >= 0 ? args[i + 1] : def }
const CYCLES = Number(arg('cycles', 100000))
const EVERY = Number(arg('every', 10000))
const WARMUP_CYCLES = Math.min(1000, CYCLES)
const ONLY = arg('only', 'net,tcp,unix,shm').split(',')
if (typeof global.gc !== 'function') {
  console.error('run with node --expose-gc bench/soak.js')
  process.exit(2)
}
const MESSAGE = Buffer.alloc(100, 7)

async function sample () {
  for (let i = 0; i < 3; i++) {
    global.gc()
    await new Promise(resolve => setImmediate(resolve))
  }
  global.gc()
  const m = process.memoryUsage()
  return {
    heapMB: m.heapUsed / 1e6,
    rssMB: m.rss / 1e6,
    fds: fs.readdirSync('/proc/self/fd').length,
    maps: fs.readFileSync('/proc/self/maps', 'utf8').split('\n').length - 1
  }
}

function cycle (kind, port) {
  return new Promise((resolve, reject) => {
    const c = kind === 'net' ? net.connect(port, '127.0.0.1') : fastsock.connect({ port, host: '127.0.0.1', transports: [kind] })
    let got = 0
    c.on('error', reject)
    c.on('connect', () => {
      if (kind !== 'net' && c.transport !== kind) reject(new Error(`asked for ${kind}, got ${c.transport}`))
      c.write(MESSAGE)
    })
    c.on('data', d => { got += d.length; if (got >= MESSAGE.length) c.end() })
    c.on('close', () => got >= MESSAGE.length ? resolve() : reject(new Error(`echo incomplete: ${got} bytes`)))
  })
}

const fmt = s => `heap ${s.heapMB.toFixed(2).padStart(7)} MB  rss ${s.rssMB.toFixed(1).padStart(7)} MB  fds ${String(s.fds).padStart(5)}  maps ${String(s.maps).padStart(6)}`

;(async () => {
  const summary = []
  for (const kind of ONLY) {
    const lib = kind === 'net' ? net : fastsock
    const server = lib.createServer(s => { s.on('error', () => {}); s.pipe(s) })
    await new Promise(resolve => server.listen(0, '127.0.0.1', resolve))
    const port = server.address().port
    const t0 = Date.now()
    let warm = null
    let last = null
    for (let i = 1; i <= CYCLES; i++) {
      await cycle(kind, port)
      if (i === WARMUP_CYCLES) {
        warm = await sample()
        console.log(`${kind.padEnd(5)} ${String(i).padStart(7)}  ${fmt(warm)}`)
      }
      if (i % EVERY === 0 || i === CYCLES) {
        last = await sample()
        console.log(`${kind.padEnd(5)} ${String(i).padStart(7)}  ${fmt(last)}  ${((Date.now() - t0) / i * 1000).toFixed(0)} µs/cycle`)
      }
    }
    await new Promise(resolve => server.close(resolve))
    summary.push({ kind, dHeap: last.heapMB - warm.heapMB, dRss: last.rssMB - warm.rssMB, dFds: last.fds - warm.fds, dMaps: last.maps - warm.maps })
  }
  console.log(`\ngrowth from cycle ${WARMUP_CYCLES} to ${CYCLES} (targets at 10^4 cycles: heap <= +2 MB, rss <= +20 MB)`)
  for (const s of summary) {
    console.log(`${(s.kind === 'net' ? 'net' : 'fastsock:' + s.kind).padEnd(14)} heap ${s.dHeap >= 0 ? '+' : ''}${s.dHeap.toFixed(2)} MB  rss ${s.dRss >= 0 ? '+' : ''}${s.dRss.toFixed(1)} MB  fds ${s.dFds >= 0 ? '+' : ''}${s.dFds}  maps ${s.dMaps >= 0 ? '+' : ''}${s.dMaps}`)
  }
})().catch(err => { console.error(err); process.exit(1) })
