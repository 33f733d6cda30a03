#!/usr/bin/env node
'use strict'
/**
 * A peer that answers late: 300 round trips of 64 B to a server that replies after 5 ms (a
 * server doing work), and the client's CPU time for them, fastsock with its defaults (shm,
 * adaptive polling on) against plain `net` (TCP loopback), interleaved, median of `--runs`
 * (default 5). The adaptive window (docs/polling.md) must stop spinning within a few round
 * trips: target, client CPU within 1.5x of plain net's.
 *
 *   node bench/late-peer.js [--runs 5] [--n 300] [--delay-ms 5]
 */
const net = require('net')
const fastsock = require('..')
const startPeer = require('./_peer')

const args = process.argv.slice(2)
const opt = (name, dflt) => { const i = args.indexOf(`--${name}`); return i >= 0 ? Number(args[i + 1]) : dflt }
const RUNS = opt('runs', 5)
const N = opt('n', 300)
const DELAY_MS = opt('delay-ms', 5)

const median = xs => { const v = [...xs].sort((a, b) => a - b); return v[v.length >> 1] }

async function once (kind) {
  const peer = await startPeer(kind, DELAY_MS)
  const lib = kind === 'fastsock' ? fastsock : net
  const c = lib.connect({ port: peer.port, host: '127.0.0.1' })
  await new Promise((resolve, reject) => c.once('connect', resolve).once('error', reject))
  const msg = Buffer.alloc(64, 1)
  const cpu0 = process.cpuUsage()
  const t0 = process.hrtime.bigint()
  await new Promise(resolve => {
    let left = N
    let got = 0
    c.on('data', d => {
      got += d.length
      for (; got >= 64; got -= 64) if (--left === 0) return resolve(); else c.write(msg)
    })
    c.write(msg)
  })
  const cpu = process.cpuUsage(cpu0)
  const wallMs = Number(process.hrtime.bigint() - t0) / 1e6
  const transport = c.transport ?? 'tcp'
  c.destroy()
  await peer.close()
  return { cpuMs: (cpu.user + cpu.system) / 1000, wallMs, transport }
}

;(async () => {
  const res = { net: [], fastsock: [] }
  for (let r = 0; r < RUNS; r++) for (const kind of ['net', 'fastsock']) res[kind].push(await once(kind))
  const f = res.fastsock
  const n = res.net
  const ratios = f.map((x, i) => x.cpuMs / n[i].cpuMs)
  console.log(`late peer: ${N} round trips of 64 B, the server replies after ${DELAY_MS} ms; client CPU (user+sys), median of ${RUNS} interleaved runs`)
  console.log(`  net (tcp):              ${median(n.map(x => x.cpuMs)).toFixed(1)} ms CPU, ${median(n.map(x => x.wallMs)).toFixed(0)} ms wall`)
  console.log(`  fastsock (${f[0].transport}, defaults): ${median(f.map(x => x.cpuMs)).toFixed(1)} ms CPU, ${median(f.map(x => x.wallMs)).toFixed(0)} ms wall`)
  console.log(`  client CPU fastsock / net: ${median(ratios).toFixed(2)}x (median of per-run ratios; target <= 1.5x)`)
})()
