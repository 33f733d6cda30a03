#!/usr/bin/env node
'use strict'
/**
 * Where a slow polled round trip goes (docs/polling.md, "Where a millisecond round trip goes"):
 * a 64 B ping-pong over shm between this process and a forked echo server, `--n` round trips
 * (default 5000), with the engine's counters (native.progressStats()) of both processes read
 * around it. Per configuration, interleaved over `--runs` rounds (default 3), medians:
 *
 *   default               fastsock's defaults: Node's four V8 platform workers per process, at
 *                         nice 19 once the first polling endpoint starts (FASTSOCK_HELPER_NICE)
 *   helpers at nice 0     FASTSOCK_HELPER_NICE=0: the workers at the main thread's priority
 *   --single-threaded-gc  garbage collection without worker threads (workers at nice 0)
 *   --v8-pool-size=0      one V8 worker thread (Node 20 reads 0 as CPUs − 1; the default is four)
 *   no Buffer per message fastsock's defaults, the client on `onread` (a fixed buffer) and the
 *                         server on `readInto` into a fixed array instead of 'data' events: no
 *                         Buffer made and no stream code run per message
 * and, in the same rounds, the same ping-pong over Node's net (TCP loopback, Node's defaults).
 *
 * Prints per configuration: RTT p50 / p99 / p99.9 (µs), p99 and p99.9 × net's, round trips over
 * 500 µs, and the contention back-offs of both processes (`processContended`: a spinning thread
 * that lost its CPU for over 200 µs). Asserts nothing.
 *
 *   node bench/tail-causes.js [--n 5000] [--runs 3] [--size 64]
 *
 * The columns on garbage collection come from perf_hooks' 'gc' entries of both processes: how
 * many of the slow round trips overlap a collection's pause in either, and how many of the
 * slowest 0.1 % (those p99.9 is read from). One configuration alone, under the scheduler's
 * trace: `node bench/tail-sched.js -- node bench/tail-causes.js --client <bytes> <n> fastsock|fastsock-noalloc|net`.
 */
const path = require('path')
const { fork, spawn } = require('child_process')
const { parseArgs } = require('util')
const { monoNs, writeTailLog } = require('./_tail-log')

/** [label, V8 flags, the library both ends use, environment] */
const NICE0 = { FASTSOCK_HELPER_NICE: '0' }
const CONFIGS = [['default', [], 'fastsock', {}], ['helpers at nice 0 (FASTSOCK_HELPER_NICE=0)', [], 'fastsock', NICE0],
  ['--single-threaded-gc', ['--single-threaded-gc'], 'fastsock', NICE0], ['--v8-pool-size=0', ['--v8-pool-size=0'], 'fastsock', NICE0],
  ['no Buffer per message (onread / readInto)', [], 'fastsock-noalloc', {}], ['net:tcp (Node net, defaults)', [], 'net', {}]]
const SLOW_US = 500

if (process.argv[2] === '--server') server(process.argv[3], Number(process.argv[4]))
else if (process.argv[2] === '--client') client(Number(process.argv[3]), Number(process.argv[4]), process.argv[5])
else main().catch(err => { process.stderr.write(`${err.stack}\n`); process.exit(1) })

/** The echo server (forked by the client, so it inherits the client's V8 flags); `size`: the message's bytes. */
function server (lib, size) {
  const stats = engineStats()
  const gcs = gcLog()
  const onConn = lib === 'fastsock-noalloc' ? s => echoInto(s, new Uint8Array(size)) : echo
  const srv = lib === 'net' ? require('net').createServer(onConn) : require('..').createServer({ transports: ['shm'] }, onConn)
  srv.listen(0, '127.0.0.1', () => process.send({ port: srv.address().port, stats: stats() }))
  process.on('message', () => setImmediate(() => process.send({ stats: stats(), gcs })))
}

/**
 * This process's garbage collections as [startNs, endNs] on CLOCK_MONOTONIC (perf_hooks 'gc'
 * entries: the main thread's pause; comparable across processes) and their kind (1 minor,
 * 2 major, 4 incremental, 8 weak callbacks), filled as the observer reports them.
 */
function gcLog () {
  const { PerformanceObserver } = require('perf_hooks')
  const gcs = []
  new PerformanceObserver(list => {
    for (const e of list.getEntries()) gcs.push([monoNs(e.startTime), monoNs(e.startTime + e.duration), e.detail?.kind ?? 0])
  }).observe({ entryTypes: ['gc'] })
  return gcs
}

/** Of the slow round trips ([startNs, endNs]), how many overlap a collection in `gcs`. */
function overlapping (slow, gcs) {
  let n = 0
  for (const [a, b] of slow) if (gcs.some(([s, e]) => s < b && e > a)) n++
  return n
}

function echo (s) { s.on('data', d => s.write(d)) }

/** Echo each message read into `b` (socket.readInto: no Buffer per message); ends with the stream. */
async function echoInto (s, b) {
  try {
    for (;;) { await s.readInto(b); s.write(b) }
  } catch { /* the client closed */ }
}

/** The engine's counters of this process (zeros when fastsock's addon is not loaded: Node's net). */
function engineStats () {
  const { native } = require('../dist/native')
  return () => native.progressStats()
}

/** One run: prints one JSON line. */
function client (size, n, lib) {
  const stats = engineStats()
  const gcs = gcLog()
  const slowAt = [] // [startNs, endNs] (CLOCK_MONOTONIC) of each round trip over SLOW_US
  const child = fork(__filename, ['--server', lib, String(size)])
  const ask = () => new Promise(resolve => { child.once('message', resolve); child.send('stats') })
  child.once('message', ({ port, stats: server0 }) => {
    const noalloc = lib === 'fastsock-noalloc'
    let onBytes = null // set once connected: the ping-pong's step per n bytes received
    const onread = noalloc ? { buffer: new Uint8Array(size), callback: nb => { onBytes(nb) } } : undefined
    const c = lib === 'net' ? require('net').connect(port, '127.0.0.1') : require('..').connect({ port, host: '127.0.0.1', transports: ['shm'], onread })
    c.on('connect', () => {
      const buf = Buffer.alloc(size, 1)
      const lat = new Float64Array(n)
      let got = 0; let i = -100 // 100 untimed round trips first
      let t0 = 0n
      const client0 = stats()
      onBytes = async nb => {
        got += nb
        if (got < size) return
        got -= size
        if (i >= 0) {
          lat[i] = Number(process.hrtime.bigint() - t0) / 1000
          if (lat[i] > SLOW_US) slowAt.push([Number(t0), Number(t0) + lat[i] * 1000])
        }
        if (++i < n) { t0 = process.hrtime.bigint(); c.write(buf); return }
        const client1 = stats()
        writeTailLog(`${size} B ping-pong over ${lib === 'net' ? 'Node net' : `fastsock shm${noalloc ? ' (onread / readInto)' : ''}`}, round trips over ${SLOW_US} µs`, slowAt)
        await new Promise(resolve => setImmediate(resolve)) // the observer's last entries
        const { stats: server1, gcs: serverGcs } = await ask()
        lat.sort()
        const q = p => lat[Math.min(n - 1, Math.floor(p * n))]
        let slow = 0
        for (const x of lat) if (x > SLOW_US) slow++
        const contended = (client1.processContended - client0.processContended) + (server1.processContended - server0.processContended)
        const both = [...gcs, ...serverGcs]
        const majors = both.filter(g => g[2] === 2)
        const ms = g => (g[1] - g[0]) / 1e6
        const minors = both.filter(g => g[2] === 1).map(ms).sort((a, b) => a - b)
        // the slowest n/1000 round trips: the ones p99.9 is read from
        const top = slowAt.slice().sort((a, b) => (b[1] - b[0]) - (a[1] - a[0])).slice(0, Math.max(1, Math.floor(n / 1000)))
        const gc = {
          withGc: overlapping(slowAt, both), topWithGc: overlapping(top, both), top: top.length,
          minor: minors.length, minorP50Ms: minors.length > 0 ? minors[minors.length >> 1] : 0, minorMaxMs: minors.length > 0 ? minors[minors.length - 1] : 0,
          major: majors.length, longestMajorMs: Math.max(0, ...majors.map(ms))
        }
        process.stdout.write(JSON.stringify({ transport: c.transport ?? 'tcp', p50: q(0.5), p99: q(0.99), p999: q(0.999), slow, contended, gc }) + '\n')
        c.destroy()
        child.kill()
      }
      if (!noalloc) c.on('data', d => { onBytes(d.length) })
      t0 = process.hrtime.bigint()
      c.write(buf)
    })
  })
}

async function main () {
  const { values } = parseArgs({ options: { n: { type: 'string', default: '5000' }, runs: { type: 'string', default: '3' }, size: { type: 'string', default: '64' } } })
  const n = Number(values.n); const runs = Number(values.runs); const size = Number(values.size)
  const rows = CONFIGS.map(() => [])
  for (let r = 0; r < runs; r++) {
    for (let k = 0; k < CONFIGS.length; k++) {
      const [label, flags, lib, env] = CONFIGS[k]
      const out = await new Promise((resolve, reject) => {
        const p = spawn(process.execPath, [...flags, __filename, '--client', String(size), String(n), lib], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ...env } })
        let text = ''
        p.stdout.on('data', d => { text += d })
        p.on('exit', code => code === 0 ? resolve(JSON.parse(text.trim().split('\n').pop())) : reject(new Error(`run ${label} exited ${code}`)))
      })
      if (out.transport !== (lib === 'net' ? 'tcp' : 'shm')) throw new Error(`${label}: the ping-pong ran over ${out.transport}`)
      rows[k].push(out)
    }
  }
  const med = (xs) => { const v = [...xs].sort((a, b) => a - b); return v[v.length >> 1] }
  const f = x => x < 10 ? x.toFixed(1) : Math.round(x).toLocaleString('en-US')
  const m = rows.map(rs => ({ p50: med(rs.map(x => x.p50)), p99: med(rs.map(x => x.p99)), p999: med(rs.map(x => x.p999)) }))
  const net = m[m.length - 1]
  console.log(`${size} B ping-pong, fastsock over shm and Node's net over TCP, ${n} round trips per run, medians of ${runs} interleaved runs (${path.basename(process.execPath)} ${process.version})`)
  console.log(`| configuration | p50 µs | p99 µs | p99.9 µs | p99 / p99.9 × net | round trips > ${SLOW_US} µs (each run) | of those, during a GC; of the slowest 0.1 % (each run) | scavenges: count, p50 / max ms; mark-compacts (both processes, each run) | contention back-offs, both processes (each run) |`)
  console.log('| --- | ---: | ---: | ---: | ---: | --- | --- | --- | --- |')
  rows.forEach((rs, k) => {
    const gcs = rs.map(x => `${x.gc.withGc}; ${x.gc.topWithGc} of ${x.gc.top}`).join(', ')
    const counts = rs.map(x => `${x.gc.minor}, ${x.gc.minorP50Ms.toFixed(2)} / ${x.gc.minorMaxMs.toFixed(2)}; ${x.gc.major}`).join(' · ')
    console.log(`| ${CONFIGS[k][0]} | ${f(m[k].p50)} | ${f(m[k].p99)} | ${f(m[k].p999)} | ${(m[k].p99 / net.p99).toFixed(2)} / ${(m[k].p999 / net.p999).toFixed(2)} | ${rs.map(x => x.slow).join(', ')} | ${gcs} | ${counts} | ${CONFIGS[k][2] === 'net' ? '-' : rs.map(x => x.contended).join(', ')} |`)
  })
}
