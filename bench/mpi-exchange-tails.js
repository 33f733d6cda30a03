#!/usr/bin/env node
'use strict'
/**
 * The tails of a 2-rank job's exchanges between compute phases, the pattern of NPB CG's
 * iterations (docs/npb.md, "Why CG at P = 2 is still 2.4× the reference"): per iteration each
 * rank reads a 16 MB array (~0.6 ms of compute on this machine), then an awaited sendrecv of
 * 56,000 B with its partner, one of 56,000 B to itself, and two of 8 B with its partner; `--iters`
 * iterations after 50 untimed. Three implementations in the same run, interleaved per run:
 * fastsock/mpi (the default chain: shm), the same JavaScript over Node's net (`tcp`), and the
 * same pattern in C over Open MPI (bench/native/exchange_tails.c, built with `mpicc -O2` into a
 * private cache directory; skipped, with the reason, without mpicc/mpirun). Prints, per
 * implementation, the medians over `--runs` of rank 0's 50th, 90th and 99th percentiles and
 * maximum of the partner exchange and of the 8-byte sums (µs), the sums over 1 ms (how many, and
 * the ms they took in all), and the sums' p99 against Open MPI's. `--env K=V,...` adds variables
 * to the fastsock ranks (e.g. FASTSOCK_MPI_SPIN_US=0: no polling).
 *
 *   node bench/mpi-exchange-tails.js [--runs 3] [--iters 1000] [--impls fastsock,tcp,openmpi] [--env K=V]
 *
 * Prints figures, asserts nothing.
 */
const { parseArgs } = require('util')
const { median } = require('./_procs')
const { rankJob } = require('./_mpi-job')
const { monoNs, writeTailLog } = require('./_tail-log')
const { execFile } = require('child_process')
const path = require('path')

/** The p-th fraction of sorted `a`. */
const pct = (a, p) => a[Math.floor(p * (a.length - 1))]

async function rank () {
  const mpi = require('../dist/mpi')
  const transports = process.env.FSXT_TRANSPORTS
  const comm = await mpi.init(transports ? { transports: transports.split(',') } : undefined)
  const peer = 1 - comm.rank
  const me = comm.rank
  const w = new Float64Array(7000)
  const q = new Float64Array(7000)
  const q2 = new Float64Array(7000)
  const s = new Float64Array(1)
  const r = new Float64Array(1)
  const big = new Float64Array(1 << 21)
  let sink = 0
  const compute = () => { let x = 0; for (let i = 0; i < big.length; i += 2) x += big[i]; sink += x }
  const iters = Number(process.env.FSXT_ITERS)
  const exch = []
  const sums = []
  const starts = []
  for (let it = 0; it < iters + 50; it++) {
    if (it === 50) { exch.length = 0; sums.length = 0; await comm.barrier() }
    compute()
    let t0 = performance.now()
    await comm.sendrecv(w, peer, 1, q, peer, 1)
    exch.push((performance.now() - t0) * 1000)
    await comm.sendrecv(w, me, 1, q2, me, 1)
    for (const tag of [2, 3]) {
      t0 = performance.now()
      await comm.sendrecv(s, peer, tag, r, peer, tag)
      const t1 = performance.now()
      sums.push((t1 - t0) * 1000)
      if (it >= 50) starts.push(t0)
    }
  }
  // For bench/tail-sched.js (FASTSOCK_TAIL_LOG): this rank's 20 slowest sums, on CLOCK_MONOTONIC.
  writeTailLog('8 B sum', sums.map((us, i) => [us, i]).sort((a, b) => b[0] - a[0]).slice(0, 20).map(([us, i]) => [monoNs(starts[i]), monoNs(starts[i] + us / 1000)]))
  const slow = sums.filter(x => x > 1000)
  exch.sort((a, b) => a - b)
  sums.sort((a, b) => a - b)
  const of = a => ({ p50: pct(a, 0.5), p90: pct(a, 0.9), p99: pct(a, 0.99), max: a[a.length - 1] })
  if (me === 0) console.log(JSON.stringify({ exch: of(exch), sums: of(sums), slow: slow.length, slowUs: slow.reduce((a, b) => a + b, 0), sink: sink === 1 }))
  await mpi.finalize()
}

/**
 * Open MPI's side: the C program built by the osu tool's builder (tools/src/osu/native.ts
 * buildNative: once per source and compiler, in its private cache directory), and a job of it;
 * or why not (`skipped`).
 */
async function openMpi () {
  let native
  try {
    native = require('../tools/dist/osu/native')
  } catch (err) {
    return { skipped: `the tools package is not built (${err.code || err.message})` }
  }
  const ompi = await native.detectOpenMpi()
  if (ompi.skipped !== null) return { skipped: ompi.skipped }
  const bin = await native.buildNative(ompi, process.env, path.join(__dirname, 'native', 'exchange_tails.c'), 'exchange_tails')
  return {
    skipped: null,
    version: ompi.version,
    job: (iters) => new Promise((resolve, reject) => {
      execFile(ompi.mpirun, [...native.mpirunFlags(2), '-np', '2', bin, String(iters)], { timeout: 300000 }, (err, stdout, stderr) => {
        if (err) return reject(new Error(`exchange_tails: ${err.message.trim()}\n${String(stderr).slice(-2000)}`))
        const line = stdout.split('\n').find(l => l.startsWith('{'))
        if (line === undefined) return reject(new Error(`exchange_tails printed no result: ${stdout.slice(-500)}`))
        resolve(JSON.parse(line))
      })
    })
  }
}

async function main () {
  const { values } = parseArgs({ options: { runs: { type: 'string', default: '3' }, iters: { type: 'string', default: '1000' }, impls: { type: 'string', default: 'fastsock,tcp,openmpi' }, env: { type: 'string', default: '' } } })
  const runs = Number(values.runs); const iters = Number(values.iters)
  if (!(Number.isInteger(runs) && runs > 0) || !(Number.isInteger(iters) && iters > 0)) throw new Error(`--runs ${values.runs} --iters ${values.iters}: positive integers expected`)
  const impls = values.impls.split(',').filter(Boolean)
  const unknown = impls.filter(i => !['fastsock', 'tcp', 'openmpi'].includes(i))
  if (unknown.length > 0) throw new Error(`--impls: unknown ${unknown.join(', ')} (fastsock, tcp, openmpi)`)
  const extra = {}
  for (const kv of values.env.split(',').filter(Boolean)) { const i = kv.indexOf('='); extra[kv.slice(0, i)] = kv.slice(i + 1) }
  const ompi = impls.includes('openmpi') ? await openMpi() : null
  const jobs = {
    fastsock: () => rankJob(__filename, [], { ...extra, FSXT_RANK: '1', FSXT_ITERS: String(iters), FSXT_TRANSPORTS: '' }, 'exchange tails (fastsock)'),
    tcp: () => rankJob(__filename, [], { ...extra, FSXT_RANK: '1', FSXT_ITERS: String(iters), FSXT_TRANSPORTS: 'tcp' }, 'exchange tails (tcp)'),
    openmpi: () => ompi.job(iters)
  }
  const active = impls.filter(i => i !== 'openmpi' || (ompi !== null && ompi.skipped === null))
  const rows = Object.fromEntries(active.map(i => [i, []]))
  for (let k = 0; k < runs; k++) {
    const order = k % 2 === 0 ? active : [...active].reverse()
    for (const i of order) rows[i].push(await jobs[i]())
  }
  console.log(`2 ranks, ${iters} iterations of ~0.6 ms compute then a 56,000 B exchange, a 56,000 B send to itself and two 8 B sums; medians of ${runs} runs (the implementations interleaved); µs, rank 0${values.env ? `; fastsock and tcp with ${values.env}` : ''}`)
  console.log('| implementation | exchange p50 | p90 | p99 | max | 8 B sum p50 | p90 | p99 | max | sums over 1 ms | their time, ms | sum p99 ÷ Open MPI |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |')
  const f = x => x < 10 ? x.toFixed(1) : x.toFixed(0)
  const med = (i, k, p) => median(rows[i].map(x => x[k][p]))
  const ompiP99 = rows.openmpi !== undefined ? med('openmpi', 'sums', 'p99') : null
  const names = { fastsock: 'fastsock/mpi (shm)', tcp: 'the same over Node\'s net', openmpi: `Open MPI's C${ompi && ompi.version ? ` (${ompi.version})` : ''}` }
  for (const i of active) {
    const e = p => f(med(i, 'exch', p))
    const s = p => f(med(i, 'sums', p))
    const ratio = ompiP99 !== null ? `${(med(i, 'sums', 'p99') / ompiP99).toFixed(1)}×` : '-'
    console.log(`| ${names[i]} | ${e('p50')} | ${e('p90')} | ${e('p99')} | ${e('max')} | ${s('p50')} | ${s('p90')} | ${s('p99')} | ${s('max')} | ${median(rows[i].map(x => x.slow))} | ${(median(rows[i].map(x => x.slowUs)) / 1000).toFixed(1)} | ${ratio} |`)
  }
  if (ompi !== null && ompi.skipped !== null) console.log(`\nOpen MPI skipped: ${ompi.skipped}`)
}

if (process.env.FSXT_RANK === '1') rank().catch(err => { console.error(err); process.exit(1) })
else main().catch(err => { console.error(err); process.exit(1) })
