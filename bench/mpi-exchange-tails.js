#!/usr/bin/env node
'use strict'
/**
 * The tails of a 2-rank job's exchanges between compute phases, the pattern of NPB CG's
 * iterations (docs/npb.md, "Why CG at P = 2 is still 2.4× the reference"): per iteration each
 * rank reads a 16 MB array (~0.6 ms of compute on this machine), then an awaited sendrecv of
 * 56,000 B with its partner, one of 56,000 B to itself, and two of 8 B with its partner; `--iters`
 * iterations after 50 untimed. Prints, per run, the 50th, 90th and 99th percentiles and the
 * maximum of the partner exchange and of the 8-byte sums (µs, rank 0), then their medians over
 * `--runs`. `--transports tcp` runs the same over Node's net; `--env K=V,...` adds variables to
 * the ranks (e.g. FASTSOCK_MPI_SPIN_US=0: no polling).
 *
 *   node bench/mpi-exchange-tails.js [--runs 3] [--iters 1000] [--transports tcp] [--env K=V]
 *
 * Prints figures, asserts nothing.
 */
const { parseArgs } = require('util')
const { median } = require('./_procs')
const { rankJob } = require('./_mpi-job')

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
      sums.push((performance.now() - t0) * 1000)
    }
  }
  exch.sort((a, b) => a - b)
  sums.sort((a, b) => a - b)
  const of = a => ({ p50: pct(a, 0.5), p90: pct(a, 0.9), p99: pct(a, 0.99), max: a[a.length - 1] })
  if (me === 0) console.log(JSON.stringify({ exch: of(exch), sums: of(sums), sink: sink === 1 }))
  await mpi.finalize()
}

async function main () {
  const { values } = parseArgs({ options: { runs: { type: 'string', default: '3' }, iters: { type: 'string', default: '1000' }, transports: { type: 'string', default: '' }, env: { type: 'string', default: '' } } })
  const env = { FSXT_RANK: '1', FSXT_ITERS: values.iters, FSXT_TRANSPORTS: values.transports }
  for (const kv of values.env.split(',').filter(Boolean)) { const i = kv.indexOf('='); env[kv.slice(0, i)] = kv.slice(i + 1) }
  const rows = []
  for (let k = 0; k < Number(values.runs); k++) rows.push(await rankJob(__filename, [], env, 'exchange tails'))
  console.log(`2 ranks, ${values.iters} iterations of ~0.6 ms compute then a 56,000 B exchange, a 56,000 B send to itself and two 8 B sums (awaited), ${values.runs} runs, ${values.transports || 'the default chain'}${values.env ? `, ${values.env}` : ''}; µs, rank 0`)
  console.log('| run | exchange p50 | p90 | p99 | max | 8 B sum p50 | p90 | p99 | max |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |')
  const f = x => x.toFixed(0)
  const line = (name, e, s) => console.log(`| ${name} | ${f(e.p50)} | ${f(e.p90)} | ${f(e.p99)} | ${f(e.max)} | ${f(s.p50)} | ${f(s.p90)} | ${f(s.p99)} | ${f(s.max)} |`)
  rows.forEach((x, i) => line(String(i + 1), x.exch, x.sums))
  const m = (k, p) => median(rows.map(x => x[k][p]))
  const med = k => ({ p50: m(k, 'p50'), p90: m(k, 'p90'), p99: m(k, 'p99'), max: m(k, 'max') })
  line('median', med('exch'), med('sums'))
}

if (process.env.FSXT_RANK === '1') rank().catch(err => { console.error(err); process.exit(1) })
else main().catch(err => { console.error(err); process.exit(1) })
