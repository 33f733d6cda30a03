'use strict'
/**
 * The synchronous busy-poll pair on shm: 64 B request/response between this thread
 * (`writeSync` + `readIntoSync`) and an echo in a worker thread doing the same, against the
 * busy-poll floor of the machine (two threads ping-ponging a cache line in C) in the same run.
 * Prints the median and p99 half round trip (RTT/2, µs) of `--n` round trips (default 200,000)
 * per run, the median over `--runs` runs (default 3), and the CPU time per round trip.
 */
const { Worker } = require('worker_threads')
const fastsock = require('..')
const { native } = require('../dist/native')

const args = process.argv.slice(2)
const opt = (name, dflt) => { const i = args.indexOf(`--${name}`); return i >= 0 ? Number(args[i + 1]) : dflt }
const N = opt('n', 200000)
const RUNS = opt('runs', 3)
const SIZE = opt('size', 64)

const ECHO = `
const { parentPort } = require('worker_threads')
const fastsock = require(${JSON.stringify(require.resolve('..'))})
const server = fastsock.createServer({ transports: ['shm'] }, s => setImmediate(() => {
  const b = new Uint8Array(${SIZE})
  try { for (;;) { if (s.readIntoSync(b, { spinUs: 1000 }) < b.length) break; s.writeSync(b) } } catch {}
  s.destroy()
}))
server.listen(0, '127.0.0.1', () => parentPort.postMessage(server.address().port))
`

async function run () {
  const w = new Worker(ECHO, { eval: true })
  const port = await new Promise(resolve => w.once('message', resolve))
  const c = fastsock.connect({ port, host: '127.0.0.1', transports: ['shm'] })
  await new Promise((resolve, reject) => c.once('connect', resolve).once('error', reject))
  const b = new Uint8Array(SIZE)
  const lat = new Float64Array(N)
  for (let i = 0; i < 10000; i++) { c.writeSync(b); c.readIntoSync(b, { spinUs: 1000 }) } // warm-up
  const cpu0 = process.cpuUsage()
  for (let i = 0; i < N; i++) {
    const t0 = process.hrtime.bigint()
    c.writeSync(b)
    c.readIntoSync(b, { spinUs: 1000 })
    lat[i] = Number(process.hrtime.bigint() - t0) / 2000 // RTT/2 in µs
  }
  const cpu = process.cpuUsage(cpu0)
  lat.sort()
  c.destroy()
  await w.terminate()
  return { median: lat[N >> 1], p99: lat[Math.floor(N * 0.99)], cpuUs: (cpu.user + cpu.system) / N, transport: c.transport }
}

;(async () => {
  const rs = []
  for (let r = 0; r < RUNS; r++) rs.push(await run())
  const med = k => rs.map(x => x[k]).sort((a, b) => a - b)[rs.length >> 1]
  const floor = native ? native.spinPingPongNs(1e6) / 1e6 / 2 / 1000 : NaN
  console.log(`shm sync pair (writeSync + readIntoSync, spinUs 1000), ${SIZE} B, ${N} round trips x ${RUNS} runs; transport: ${rs[0].transport}`)
  console.log(`  RTT/2 median ${med('median').toFixed(3)} µs, p99 ${med('p99').toFixed(3)} µs (includes two hrtime reads)`)
  console.log(`  CPU per round trip (this thread): ${med('cpuUs').toFixed(3)} µs`)
  console.log(`  busy-poll floor (C, two threads, same run): ${floor.toFixed(3)} µs RTT/2 -> the pair is ${(med('median') / floor).toFixed(1)}x the floor`)
})()
