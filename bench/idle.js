#!/usr/bin/env node
'use strict'
/**
 * Idle connections cost no CPU: `--connections` (default 200) connections, each with a 'data'
 * listener, exchange 20 quick round trips (so that their polling windows are open), then sit
 * idle for `--ms` (default 3000) while both processes' CPU time is measured. fastsock with its
 * defaults (shm, adaptive polling on) against plain `net` (TCP), median of `--runs` (default 3).
 * Target: under 1% of one core (client + server).
 *
 *   node bench/idle.js [--connections 200] [--ms 3000] [--runs 3]
 */
const net = require('net')
const fastsock = require('..')
const startPeer = require('./_peer')

const args = process.argv.slice(2)
const opt = (name, dflt) => { const i = args.indexOf(`--${name}`); return i >= 0 ? Number(args[i + 1]) : dflt }
const CONNECTIONS = opt('connections', 200)
const IDLE_MS = opt('ms', 3000)
const RUNS = opt('runs', 3)

const median = xs => { const v = [...xs].sort((a, b) => a - b); return v[v.length >> 1] }
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

/** 20 round trips of 64 B on `c`. */
function warm (c) {
  return new Promise(resolve => {
    let left = 20
    let got = 0
    c.on('data', d => {
      got += d.length
      for (; got >= 64; got -= 64) if (--left === 0) resolve(); else if (left > 0) c.write(Buffer.alloc(64))
    })
    c.write(Buffer.alloc(64))
  })
}

async function once (kind) {
  const peer = await startPeer(kind, 0)
  const lib = kind === 'fastsock' ? fastsock : net
  const sockets = []
  for (let i = 0; i < CONNECTIONS; i++) {
    const c = lib.connect({ port: peer.port, host: '127.0.0.1' })
    await new Promise((resolve, reject) => c.once('connect', resolve).once('error', reject))
    sockets.push(c)
  }
  await Promise.all(sockets.map(warm))
  const transport = sockets[0].transport ?? 'tcp'
  await sleep(100)
  await peer.cpuUs()
  const cpu0 = process.cpuUsage()
  const t0 = process.hrtime.bigint()
  await sleep(IDLE_MS)
  const cpu = process.cpuUsage(cpu0)
  const serverUs = await peer.cpuUs()
  const wallUs = Number(process.hrtime.bigint() - t0) / 1e3
  for (const c of sockets) c.destroy()
  await peer.close()
  return { clientPct: 100 * (cpu.user + cpu.system) / wallUs, serverPct: 100 * serverUs / wallUs, transport }
}

;(async () => {
  const res = { net: [], fastsock: [] }
  for (let r = 0; r < RUNS; r++) for (const kind of ['net', 'fastsock']) res[kind].push(await once(kind))
  console.log(`${CONNECTIONS} idle connections for ${IDLE_MS} ms after 20 round trips each; CPU in % of one core, median of ${RUNS} runs`)
  for (const kind of ['net', 'fastsock']) {
    const r = res[kind]
    const c = median(r.map(x => x.clientPct))
    const s = median(r.map(x => x.serverPct))
    console.log(`  ${kind.padEnd(8)} (${r[0].transport}): client ${c.toFixed(2)}%, server ${s.toFixed(2)}%, both ${(c + s).toFixed(2)}% (target for fastsock: < 1%)`)
  }
})()
