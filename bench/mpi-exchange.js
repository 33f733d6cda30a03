#!/usr/bin/env node
'use strict'
/**
 * fastsock/mpi's large blocking allreduce at P = 2 (`allreduceSync` of a Float32Array, SUM:
 * recursive doubling, one exchange of the whole array and one reduction), per call, under the
 * settings that decide its time, interleaved over `--runs` jobs (medians of the jobs):
 *
 *   default                 both directions at once up to 512 KiB, one at a time above
 *                           (ORDERED_EXCHANGE_BYTES, lib/mpi/coll/util.ts); V8's helper threads
 *                           at nice 19 (FASTSOCK_HELPER_NICE); vector reduction kernels
 *   both directions at once FASTSOCK_MPI_ORDERED_BYTES=1e15: every exchange in both directions
 *   one direction at a time FASTSOCK_MPI_ORDERED_BYTES=0: every exchange one direction at a time
 *   helpers at nice 0       FASTSOCK_HELPER_NICE=0
 *   scalar kernels          FASTSOCK_MPI_SIMD=0
 *
 * Prints per size and setting: p10 / p50 / p90 / mean µs per call, calls over 400 µs (stalls),
 * the reduction's share of the p50 (timed inside the calls), and calls that needed the event loop
 * (ERR_MPI_WOULD_BLOCK). Asserts nothing.
 *
 *   node bench/mpi-exchange.js [--sizes 64K,256K,1M] [--calls 1000] [--runs 3]   (~3 min)
 */
const { parseArgs } = require('util')
const { median } = require('./_procs')
const { rankJob } = require('./_mpi-job')

const SETTINGS = [
  ['default', {}],
  ['both directions at once', { FASTSOCK_MPI_ORDERED_BYTES: '1e15' }],
  ['one direction at a time', { FASTSOCK_MPI_ORDERED_BYTES: '0' }],
  ['helpers at nice 0', { FASTSOCK_HELPER_NICE: '0' }],
  ['scalar kernels', { FASTSOCK_MPI_SIMD: '0' }]
]

const parseSize = s => { const m = /^(\d+)([KM]?)$/i.exec(s.trim()); if (!m) throw new Error(`bad size ${s}`); return Number(m[1]) * ({ '': 1, K: 1024, M: 1 << 20 })[m[2].toUpperCase()] }

async function rank (bytes, calls) {
  const mpi = require('../dist/mpi')
  const comm = await mpi.init()
  const n = bytes / 4
  const a = new Float32Array(n).fill(comm.rank + 1)
  const c = new Float32Array(n)
  let applyNs = 0n
  const apply = mpi.SUM.apply
  mpi.SUM.apply = function (...args) { const t = process.hrtime.bigint(); apply.apply(this, args); applyNs += process.hrtime.bigint() - t }
  let handedOver = 0
  const call = async () => {
    try { comm.allreduceSync(a, c, mpi.SUM) } catch (e) {
      if (e.code !== 'ERR_MPI_WOULD_BLOCK') throw e
      handedOver++
      await e.request.wait()
    }
  }
  for (let i = 0; i < 200; i++) await call()
  await comm.barrier()
  applyNs = 0n; handedOver = 0
  const us = new Float64Array(calls)
  for (let i = 0; i < calls; i++) {
    const t0 = process.hrtime.bigint()
    await call()
    us[i] = Number(process.hrtime.bigint() - t0) / 1000
  }
  if (c[0] !== 3) throw new Error(`wrong sum ${c[0]}`)
  if (comm.rank === 0) {
    const mean = us.reduce((x, y) => x + y, 0) / calls
    const stalls = us.filter(x => x > 400).length
    us.sort()
    const q = f => us[Math.min(calls - 1, Math.floor(calls * f))]
    process.stdout.write(JSON.stringify({ p10: q(0.1), p50: q(0.5), p90: q(0.9), mean, stalls, applyUs: Number(applyNs) / 1000 / calls, handedOver }) + '\n')
  }
  await mpi.finalize()
}

async function main () {
  const { values } = parseArgs({ options: { sizes: { type: 'string', default: '64K,256K,1M' }, calls: { type: 'string', default: '1000' }, runs: { type: 'string', default: '3' } } })
  const sizes = values.sizes.split(',').map(parseSize)
  const calls = Number(values.calls); const runs = Number(values.runs)
  const f = x => x.toFixed(x < 10 ? 2 : 0)
  console.log(`fastsock/mpi allreduceSync (Float32Array, SUM), P = 2, ${calls} calls after 200, medians of ${runs} interleaved jobs; µs per call`)
  console.log('| size | setting | p10 | p50 | p90 | mean | calls > 400 µs | reduction µs/call | calls handed to the event loop |')
  console.log('| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |')
  for (const bytes of sizes) {
    const rows = SETTINGS.map(() => [])
    for (let r = 0; r < runs; r++) {
      for (let k = 0; k < SETTINGS.length; k++) {
        rows[k].push(await rankJob(__filename, ['--rank', String(bytes), String(calls)], SETTINGS[k][1], `${SETTINGS[k][0]} at ${bytes} B`))
      }
    }
    rows.forEach((rs, k) => {
      const m = key => median(rs.map(x => x[key]))
      console.log(`| ${bytes >= 1 << 20 ? `${bytes / (1 << 20)} MiB` : `${bytes / 1024} KiB`} | ${SETTINGS[k][0]} | ${f(m('p10'))} | ${f(m('p50'))} | ${f(m('p90'))} | ${f(m('mean'))} | ${rs.map(x => x.stalls).join(', ')} | ${f(m('applyUs'))} | ${rs.map(x => x.handedOver).join(', ')} |`)
    })
  }
}

if (process.argv[2] === '--rank') {
  rank(Number(process.argv[3]), Number(process.argv[4])).catch(err => { process.stderr.write(`${err.stack}\n`); process.exit(1) })
} else {
  main().catch(err => { process.stderr.write(`${err.message}\n`); process.exit(1) })
}
