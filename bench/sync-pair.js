'use strict'
/**
 * The synchronous busy-poll pair on shm: 64 B request/response between this thread
 * (`writeSync` + `readIntoSync`) and an echo in a worker thread doing the same, against two
 * floors measured in the same run, before each run: the machine's (two threads ping-ponging one
 * cache line in C: native.spinPingPongNs) and the ring's (two threads ping-ponging `--size`-byte
 * messages in C over two of fastsock's rings with the pair's protocol, no JS: native.ringPingPongNs).
 * Prints the median and p99 half round trip (RTT/2, µs) of `--n` round trips (default 200,000)
 * per run, the median over `--runs` runs (default 3) of each figure and of the ratios, and the
 * CPU time per round trip. A floor is the median of many ~1 ms native batches (floorUs).
 * `--size` is a power of two up to 4096 (the ring floor's limit).
 */
const { Worker } = require('worker_threads')
const fastsock = require('..')
const { floors: native } = require('../dist/internal')

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

const FLOOR_BATCH = 2000
/**
 * A native ping-pong's RTT/2 in µs: the median over 101 batches of FLOOR_BATCH round trips (a
 * batch lasts about a millisecond, so few are preempted, and the median drops those few).
 */
function floorUs (pingPongNs) {
  pingPongNs() // wake both vCPUs up first (a halted vCPU answers ~1 µs late)
  const us = new Float64Array(101)
  for (let i = 0; i < us.length; i++) us[i] = pingPongNs() / FLOOR_BATCH / 2 / 1000
  return us.sort()[us.length >> 1]
}

/** The median cost (µs) of the two hrtime reads around each round trip. */
function hrtimePairUs () {
  const d = new Float64Array(10001)
  for (let i = 0; i < d.length; i++) {
    const t0 = process.hrtime.bigint()
    d[i] = Number(process.hrtime.bigint() - t0) / 1000
  }
  return d.sort()[d.length >> 1]
}

async function run () {
  const lineUs = native ? floorUs(() => native.spinPingPongNs(FLOOR_BATCH)) : NaN
  const ringUs = native && native.ringPingPongNs ? floorUs(() => native.ringPingPongNs(FLOOR_BATCH, SIZE)) : NaN
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
  const median = lat[N >> 1]
  return {
    median, p99: lat[Math.floor(N * 0.99)], cpuUs: (cpu.user + cpu.system) / N, transport: c.transport,
    lineUs, ringUs, hrtimeUs: hrtimePairUs(), xLine: median / lineUs, xRing: median / ringUs
  }
}

;(async () => {
  const rs = []
  for (let r = 0; r < RUNS; r++) rs.push(await run())
  const med = k => rs.map(x => x[k]).sort((a, b) => a - b)[rs.length >> 1]
  console.log(`shm sync pair (writeSync + readIntoSync, spinUs 1000), ${SIZE} B, ${N} round trips x ${RUNS} runs; transport: ${rs[0].transport}`)
  console.log(`  RTT/2 median ${med('median').toFixed(3)} µs, p99 ${med('p99').toFixed(3)} µs (includes the two hrtime reads around each round trip: ${med('hrtimeUs').toFixed(3)} µs together)`)
  console.log(`  CPU per round trip (both threads): ${med('cpuUs').toFixed(3)} µs`)
  console.log(`  floors (C, two threads, same run): cache line ${med('lineUs').toFixed(3)} µs RTT/2, the ring with the pair's protocol ${med('ringUs').toFixed(3)} µs RTT/2`)
  console.log(`  the pair is ${med('xLine').toFixed(2)}x the cache-line floor, ${med('xRing').toFixed(2)}x the ring floor`)
})()
