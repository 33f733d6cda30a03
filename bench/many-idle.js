#!/usr/bin/env node
'use strict'
/**
 * Many concurrent idle connections in one server process: `--connections` (default 10000)
 * connections from this process to an echo server in its own process (bench/idle-memory.js
 * --serve), both under `ulimit -n` raised to `--nofile` (default 40000, or the hard limit if lower; this script re-executes
 * itself under `sh -c 'ulimit -n ...'` when its own limit is lower), each with one 64-byte round
 * trip, then `--idle-ms` (default 1000) idle. Printed per connection, for Node `net` (TCP) and
 * fastsock (its defaults: shm): memory (RssAnon + RssShmem after a GC, minus before connecting)
 * of the server and of the client, fds of each, and the median round trip (µs) of 200 64-byte
 * echoes on one connection with all the others idle, against the same with that connection
 * alone (the cost of the idle ones on a busy one: e.g. a doorbell scan per ring), each measured
 * after `--warmup` (default 1000) round trips, so that both medians are of a warm process (the
 * memory measures run a full GC in both processes just before the second). `--pin`: this process
 * on CPU 0 and the server on CPU 1 (taskset): without it the round trips follow the scheduler's
 * placement (both processes on one CPU: the server's waits are held, docs/polling.md, and each
 * request wakes it through its doorbell).
 *
 *   node bench/many-idle.js [--connections 10000] [--idle-ms 1000] [--nofile 40000] [--warmup 1000] [--pin] [--only net|fastsock]
 *
 * (Raising the hard limit needs CAP_SYS_RESOURCE: `prlimit --nofile=40000 -- node bench/many-idle.js`.)
 */
const { spawnSync } = require('child_process')
const net = require('net')
const { startServer, memOf } = require('./idle-memory')

const args = process.argv.slice(2)
const opt = (name, dflt) => { const i = args.indexOf(`--${name}`); return i >= 0 ? args[i + 1] : dflt }
const CONNECTIONS = Number(opt('connections', 10000))
const IDLE_MS = Number(opt('idle-ms', 1000))
const hardNofile = () => Number(spawnSync('sh', ['-c', 'ulimit -Hn'], { encoding: 'utf8' }).stdout.trim()) || 0
const NOFILE = Number(opt('nofile', Math.min(40000, hardNofile() || 40000)))
const ONLY = opt('only', null)
const WARMUP = Number(opt('warmup', 1000))
const PIN = args.includes('--pin')

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))
const median = xs => { const v = [...xs].sort((a, b) => a - b); return v[v.length >> 1] }

/** One 64-byte echo on `c`: resolves with its round trip in µs. */
function roundTrip (c) {
  return new Promise(resolve => {
    const t0 = process.hrtime.bigint()
    let got = 0
    const onData = d => { got += d.length; if (got >= 64) { c.off('data', onData); resolve(Number(process.hrtime.bigint() - t0) / 1e3) } }
    c.on('data', onData)
    c.write(Buffer.alloc(64, 1))
  })
}

async function rttMedian (c, n = 200) {
  const xs = []
  for (let i = 0; i < n; i++) xs.push(await roundTrip(c))
  return median(xs)
}

async function run (kind) {
  const lib = kind === 'fastsock' ? require('..') : net
  const server = await startServer(kind, { nofile: NOFILE, cpu: PIN ? 1 : undefined })
  await sleep(200)
  const s0 = await server.mem()
  const c0 = memOf()
  const connect = () => new Promise((resolve, reject) => {
    const c = lib.connect({ port: server.port, host: '127.0.0.1' })
    c.once('connect', () => resolve(c)).once('error', reject)
  })
  const first = await connect()
  await rttMedian(first, WARMUP) // the JIT and the polling window warm
  const aloneUs = await rttMedian(first)
  const sockets = [first]
  const t0 = Date.now()
  while (sockets.length < CONNECTIONS) {
    const batch = await Promise.all(Array.from({ length: Math.min(200, CONNECTIONS - sockets.length) }, connect))
    await Promise.all(batch.map(roundTrip))
    sockets.push(...batch)
  }
  const setupS = (Date.now() - t0) / 1e3
  await sleep(IDLE_MS)
  const s1 = await server.mem()
  const c1 = memOf()
  await rttMedian(first, WARMUP) // warm again: the full GCs of the memory measures above flush code
  const busyUs = await rttMedian(first)
  const transports = {}
  for (const c of sockets) transports[c.transport ?? 'tcp'] = (transports[c.transport ?? 'tcp'] || 0) + 1
  for (const c of sockets) c.destroy()
  await server.close()
  const per = (a, b) => ((a.anon + a.shmem) - (b.anon + b.shmem)) / CONNECTIONS / 1024
  return {
    transports,
    setupS,
    serverKiB: per(s1, s0),
    clientKiB: per(c1, c0),
    serverFds: (s1.fds - s0.fds) / CONNECTIONS,
    clientFds: (c1.fds - c0.fds) / CONNECTIONS,
    aloneUs,
    busyUs
  }
}

async function main () {
  console.log(`${CONNECTIONS} concurrent idle connections (one 64 B round trip each, then ${IDLE_MS} ms idle), server in its own process, ulimit -n ${NOFILE}${PIN ? ', this process on CPU 0 and the server on CPU 1' : ''}`)
  const res = {}
  for (const kind of ['net', 'fastsock']) {
    if (ONLY && ONLY !== kind) continue
    const r = res[kind] = await run(kind)
    console.log(`  ${kind.padEnd(8)} ${JSON.stringify(r.transports)}: memory a connection: server ${r.serverKiB.toFixed(1)} KiB, client ${r.clientKiB.toFixed(1)} KiB; ` +
      `fds a connection: server ${r.serverFds.toFixed(2)}, client ${r.clientFds.toFixed(2)}; set-up ${r.setupS.toFixed(1)} s; ` +
      `64 B round trip: ${r.aloneUs.toFixed(0)} µs alone, ${r.busyUs.toFixed(0)} µs beside ${CONNECTIONS - 1} idle`)
  }
  if (res.net && res.fastsock) {
    const mem = x => x.serverKiB + x.clientKiB
    console.log(`  fastsock / net: memory ${(mem(res.fastsock) / mem(res.net)).toFixed(2)}x, server fds ${(res.fastsock.serverFds / res.net.serverFds).toFixed(2)}x`)
  }
}

function currentNofile () {
  const r = spawnSync('sh', ['-c', 'ulimit -n'], { encoding: 'utf8' })
  return Number(r.stdout.trim()) || 0
}

if (!process.env.FASTSOCK_MANY_IDLE_CHILD && (currentNofile() < NOFILE || PIN)) {
  // Raise this process's own limit: re-execute under the shell's ulimit (needs the hard limit,
  // or root, for values above it), and under taskset with --pin.
  const r = spawnSync('sh', ['-c', `ulimit -n ${NOFILE} && exec ${PIN ? 'taskset -c 0 ' : ''}"$0" "$@"`, process.execPath, __filename, ...args],
    { stdio: 'inherit', env: { ...process.env, FASTSOCK_MANY_IDLE_CHILD: '1' } })
  process.exit(r.status ?? 1)
} else {
  main().catch(err => { console.error(err); process.exit(1) })
}
