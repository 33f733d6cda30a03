#!/usr/bin/env node
'use strict'
/**
 * Memory of idle connections after traffic: `--connections` (default 200) connections to an echo
 * server in its own process, `--mib` (default 4) MiB echoed on each (in batches of 20
 * connections), then `--idle-ms` (default 1000) of idle. Printed: anonymous RSS + shared memory
 * (RssAnon + RssShmem of /proc/PID/status, after a GC) of both processes, minus the same before
 * connecting, for Node `net` (TCP) and fastsock (its defaults: shm), median of `--runs`
 * (default 3), and the ratio fastsock / net. Target (issue 12): <= 2x.
 *
 *   node bench/idle-memory.js [--connections 200] [--mib 4] [--idle-ms 1000] [--runs 3]
 *
 * Also the peer of bench/many-idle.js: `node bench/idle-memory.js --serve net|fastsock`
 * listens on 127.0.0.1, echoes, prints { port } and, for each line on stdin, { mem, fds }.
 */
const { spawn } = require('child_process')
const fs = require('fs')
const net = require('net')
const readline = require('readline')
const v8 = require('v8')
const vm = require('vm')

v8.setFlagsFromString('--expose-gc')
const gc = vm.runInNewContext('gc') // a full GC before each measurement, in both processes

const args = process.argv.slice(2)
const opt = (name, dflt) => { const i = args.indexOf(`--${name}`); return i >= 0 ? Number(args[i + 1]) : dflt }

/** RssAnon, RssShmem (bytes) and open fds of process `pid` ('self' for this one: after a full GC). */
function memOf (pid = 'self') {
  if (pid === 'self') gc()
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8')
  const kb = name => Number((new RegExp(`${name}:\\s+(\\d+) kB`).exec(status) || [0, 0])[1]) * 1024
  return { anon: kb('RssAnon'), shmem: kb('RssShmem'), fds: fs.readdirSync(`/proc/${pid}/fd`).length }
}

/** The echo server (run with --serve): reports its memory on each stdin line. */
function serve (kind) {
  const lib = kind === 'fastsock' ? require('..') : net
  const server = lib.createServer(s => { s.on('error', () => {}); s.pipe(s) })
  server.maxConnections = Infinity
  const lines = readline.createInterface({ input: process.stdin })
  lines.on('line', () => process.stdout.write(JSON.stringify(memOf()) + '\n'))
  lines.on('close', () => process.exit(0))
  server.listen({ port: 0, host: '127.0.0.1', backlog: 4096 }, () => process.stdout.write(JSON.stringify({ port: server.address().port }) + '\n'))
}

/**
 * Starts the echo server of `kind` in its own process: { port, mem(), close() }. `nofile`: its
 * RLIMIT_NOFILE; `cpu`: the CPU it runs on (taskset), when given.
 */
async function startServer (kind, { nofile, cpu } = {}) {
  const argv = [__filename, '--serve', kind]
  const pin = cpu === undefined ? '' : `taskset -c ${cpu} `
  const child = nofile || pin
    ? spawn('sh', ['-c', `${nofile ? `ulimit -n ${nofile} && ` : ''}exec ${pin}"$0" "$@"`, process.execPath, ...argv], { stdio: ['pipe', 'pipe', 'inherit'] })
    : spawn(process.execPath, argv, { stdio: ['pipe', 'pipe', 'inherit'] })
  const lines = readline.createInterface({ input: child.stdout })
  const next = () => new Promise((resolve, reject) => {
    lines.once('line', l => resolve(JSON.parse(l)))
    child.once('exit', code => reject(new Error(`the ${kind} server exited (${code})`)))
  })
  const { port } = await next()
  return {
    port,
    pid: child.pid,
    mem: async () => { const r = next(); child.stdin.write('mem\n'); return r },
    close: () => new Promise(resolve => { child.once('exit', resolve); child.stdin.end() })
  }
}

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))
const median = xs => { const v = [...xs].sort((a, b) => a - b); return v[v.length >> 1] }
const MiB = 1 << 20
const fmt = b => `${(b / MiB).toFixed(1)} MiB`

/** Echoes `bytes` on `c` (in 64 KiB writes) and resolves when all came back. */
function echo (c, bytes) {
  return new Promise((resolve, reject) => {
    let got = 0
    const onData = d => { got += d.length; if (got >= bytes) { c.off('data', onData); resolve() } }
    c.on('data', onData)
    c.once('error', reject)
    const chunk = Buffer.alloc(64 * 1024, 7)
    let sent = 0
    const pump = () => {
      while (sent < bytes) {
        const n = Math.min(chunk.length, bytes - sent)
        sent += n
        if (!c.write(n === chunk.length ? chunk : chunk.subarray(0, n))) return void c.once('drain', pump)
      }
    }
    pump()
  })
}

async function run (kind, connections, bytes, idleMs) {
  const lib = kind === 'fastsock' ? require('..') : net
  const server = await startServer(kind)
  await sleep(200)
  const s0 = await server.mem()
  const c0 = memOf()
  const sockets = []
  for (let i = 0; i < connections; i += 20) {
    const batch = []
    for (let j = i; j < Math.min(connections, i + 20); j++) {
      const c = lib.connect({ port: server.port, host: '127.0.0.1' })
      await new Promise((resolve, reject) => c.once('connect', resolve).once('error', reject))
      batch.push(c)
    }
    await Promise.all(batch.map(c => echo(c, bytes)))
    sockets.push(...batch)
  }
  await sleep(idleMs)
  const s1 = await server.mem()
  const c1 = memOf()
  const transport = sockets[0].transport ?? 'tcp'
  for (const c of sockets) c.destroy()
  await server.close()
  const anon = (c1.anon - c0.anon) + (s1.anon - s0.anon)
  const shmem = (c1.shmem - c0.shmem) + (s1.shmem - s0.shmem)
  return { transport, anon, shmem, total: anon + shmem }
}

async function main () {
  const connections = opt('connections', 200)
  const mib = opt('mib', 4)
  const idleMs = opt('idle-ms', 1000)
  const runs = opt('runs', 3)
  const res = { net: [], fastsock: [] }
  for (let r = 0; r < runs; r++) for (const kind of ['net', 'fastsock']) res[kind].push(await run(kind, connections, mib * MiB, idleMs))
  console.log(`${connections} connections, ${mib} MiB echoed on each, then ${idleMs} ms idle: RssAnon + RssShmem of client + server minus before connecting (after a GC), median of ${runs} runs`)
  const row = {}
  for (const kind of ['net', 'fastsock']) {
    const r = res[kind]
    row[kind] = { anon: median(r.map(x => x.anon)), shmem: median(r.map(x => x.shmem)), total: median(r.map(x => x.total)) }
    const x = row[kind]
    console.log(`  ${kind.padEnd(8)} (${r[0].transport}): anonymous ${fmt(x.anon)}, shared ${fmt(x.shmem)}, total ${fmt(x.total)} (${(x.total / connections / 1024).toFixed(0)} KiB a connection); runs: ${r.map(y => fmt(y.total)).join(', ')}`)
  }
  console.log(`  fastsock / net: ${(row.fastsock.total / row.net.total).toFixed(2)}x (target <= 2x)`)
}

if (args[0] === '--serve') serve(args[1])
else if (require.main === module) main()

module.exports = { startServer, memOf, echo }
