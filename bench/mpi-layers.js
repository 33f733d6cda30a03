#!/usr/bin/env node
'use strict'
/**
 * What fastsock/mpi's layers cost above the channel for a 2-rank blocking collective on one small
 * array (docs/mpi-benchmarks.md, "The collectives' tiers", "What the 8-byte call costs"). One job of two ranks on this host
 * (shm), each pattern called back to back (no barrier between calls: an iteration is one rank's
 * work plus the partner's message), patterns interleaved over `--rounds` rounds; ns per
 * iteration, the median of the rounds:
 *
 *   exchange          comm.sendSync then comm.recvSync of 24 bytes: the point-to-point path
 *   minimal allreduce the messages of an allreduce of one float64 (16-byte descriptor + 8 bytes)
 *                     through the same entry points the collectives use (the collective
 *                     context's send and receive without a request), the descriptor compared
 *                     and the sum taken by hand: what the call costs with its messages and
 *                     nothing else
 *   barrierSync, allreduceSync (one float64, SUM): as a program calls them (comm.xSync); the
 *                     column "above minimal" is what the collective layer adds (bcast is left
 *                     out: called back to back its root only sends, a rate, not a latency;
 *                     bench/mpi-small.js times it in OSU's loop)
 *
 * Before and after the job, `fastsock pipe`'s cross-core placement probe (tools/dist/pipe: one
 * cache line ping-ponged by two threads, RTT/2) says where the host put the two vCPUs: "near"
 * (~50 ns, a shared core or cache) or "far" (~200 ns and more); the figures move ~2× with it.
 * bench/sync-pair.js prints the shm ring's own floor beside that. Prints figures, asserts nothing.
 *
 *   node bench/mpi-layers.js [--rounds 7] [--calls 500000]
 */
const path = require('path')
const { parseArgs } = require('util')
const { median } = require('./_procs')
const { rankJob } = require('./_mpi-job')
const { tools } = require('./_built')
const { probePlacementIsolated } = require(path.join(tools, 'pipe', 'placement.js'))
const { describePlacement } = require(path.join(tools, 'pipe', 'limits.js'))

if (process.argv[2] === '--rank') rank(JSON.parse(process.argv[3])).catch(err => { process.stderr.write(`${err.stack}\n`); process.exit(1) })
else main().catch(err => { process.stderr.write(`${err.stack}\n`); process.exit(1) })

/** One rank: prints (rank 0) one JSON line { pattern: ns per iteration (median of the rounds) }. */
async function rank ({ rounds, calls }) {
  const mpi = require('../dist/mpi')
  const SUM = mpi.SUM
  const comm = await mpi.init()
  const peer = comm.rank ^ 1
  // every connection up, every path compiled once, in the awaited tier
  await comm.barrier(); await comm.allreduce(new Float64Array(1), new Float64Array(1), SUM)
  const out24 = new Uint8Array(24); const in24 = new Uint8Array(24)
  const a = new Float64Array(1); const b = new Float64Array(1)
  // the minimal allreduce's message: a descriptor's four words, then the float64
  const sb = Buffer.alloc(24); const rb = Buffer.alloc(24)
  const sw = new Uint32Array(sb.buffer, sb.byteOffset, 4); const sf = new Float64Array(sb.buffer, sb.byteOffset, 3)
  const rw = new Uint32Array(rb.buffer, rb.byteOffset, 4); const rf = new Float64Array(rb.buffer, rb.byteOffset, 3)
  const W0 = 0xc5000409; const W1 = 0x07000001
  const patterns = {
    exchange: () => { comm.sendSync(out24, peer, 3); comm.recvSync(in24, peer, 3) },
    'minimal allreduce': () => {
      sw[0] = W0; sw[1] = W1; sw[2] = 0; sw[3] = 1; sf[2] = a[0]
      if (!comm._collSendNow(sb, peer, 5)) throw new Error('the minimal allreduce could not send now')
      const st = comm._collRecvNow(rb, peer, 5)
      if (st === null || st.count !== 24 || rw[0] !== W0 || rw[1] !== W1 || rw[2] !== 0 || rw[3] !== 1) throw new Error('the minimal allreduce got another message')
      b[0] = a[0] + rf[2]
    },
    barrierSync: () => comm.barrierSync(),
    allreduceSync: () => comm.allreduceSync(a, b, SUM)
  }
  const ns = {}
  for (let r = 0; r < rounds; r++) {
    for (const [name, fn] of Object.entries(patterns)) {
      for (let i = 0; i < 10000; i++) fn()
      comm.barrierSync()
      const t0 = process.hrtime.bigint()
      for (let i = 0; i < calls; i++) fn()
      ;(ns[name] ??= []).push(Number(process.hrtime.bigint() - t0) / calls)
    }
  }
  const res = Object.fromEntries(Object.entries(ns).map(([k, v]) => [k, median(v)]))
  if (comm.rank === 0) console.log(JSON.stringify(res))
  await mpi.finalize()
}

async function main () {
  const { values } = parseArgs({ options: { rounds: { type: 'string', default: '7' }, calls: { type: 'string', default: '500000' } } })
  const rounds = Number(values.rounds); const calls = Number(values.calls)
  for (const [k, v] of [['rounds', rounds], ['calls', calls]]) if (!(Number.isInteger(v) && v > 0)) throw new Error(`--${k}: ${v} is not a positive integer`)
  const before = await probePlacementIsolated()
  const res = await rankJob(__filename, ['--rank', JSON.stringify({ rounds, calls })], {}, 'shm')
  const after = await probePlacementIsolated()
  const min = res['minimal allreduce']
  console.log(`fastsock/mpi at P = 2 over shm, calls back to back: ns per iteration, median of ${rounds} interleaved rounds of ${calls} calls`)
  console.log('| pattern | ns | above minimal |')
  console.log('| --- | ---: | ---: |')
  for (const [k, v] of Object.entries(res)) console.log(`| ${k} | ${v.toFixed(0)} | ${k === 'exchange' || k === 'minimal allreduce' ? '-' : (v - min).toFixed(0)} |`)
  console.log(`\ncross-core placement before the job: ${describePlacement(before)}`)
  console.log(`after the job: ${describePlacement(after)}`)
}
