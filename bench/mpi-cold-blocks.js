#!/usr/bin/env node
'use strict'
/**
 * A fresh job's first awaited 8-byte round trips, in blocks of 100 (docs/mpi.md, "Polling":
 * yielding while the CPUs look contended; docs/mpi-benchmarks.md, the cold start). Two fresh
 * ranks over shm per run, no warm-up of any kind; per run, rank 0's RTT/2 of each block of 100
 * awaited send/recv round trips (--blocks of them), then:
 *   first   the first block (µs RTT/2: connection set-up and the interpreter's code)
 *   median  the median block after the first
 *   worst   the slowest block after the first
 *   > 1 ms  how many blocks after the first took over 1 ms RTT/2 (each message waiting for a
 *           scheduler time slice)
 * `--burn N` runs N CPU-bound processes beside the job (a shared, loaded host); `--env K=V,...`
 * adds variables to the ranks (e.g. FASTSOCK_MPI_YIELD=1: every spin yields). Medians over --runs.
 *
 *   node bench/mpi-cold-blocks.js [--runs 5] [--blocks 30] [--burn 2] [--env FASTSOCK_MPI_YIELD=1]
 *
 * Prints figures, asserts nothing.
 */
const { spawn } = require('child_process')
const { parseArgs } = require('util')
const { median } = require('./_procs')
const { rankJob } = require('./_mpi-job')

async function rank () {
  const mpi = require('../dist/mpi')
  const blocks = Number(process.env.BLOCKS)
  const w = await mpi.init()
  const b = new Uint8Array(8)
  const peer = 1 - w.rank
  const out = []
  for (let k = 0; k < blocks; k++) {
    const t0 = process.hrtime.bigint()
    for (let i = 0; i < 100; i++) {
      if (w.rank === 0) { await w.send(b, peer, 1); await w.recv(b, peer, 1) } else { await w.recv(b, peer, 1); await w.send(b, peer, 1) }
    }
    out.push(Number(process.hrtime.bigint() - t0) / 200 / 1e3)
  }
  if (w.rank === 0) console.log(JSON.stringify({ blocks: out }))
  await mpi.finalize()
}

async function main () {
  const { values } = parseArgs({ options: { runs: { type: 'string', default: '5' }, blocks: { type: 'string', default: '30' }, burn: { type: 'string', default: '0' }, env: { type: 'string', default: '' } } })
  const env = { BLOCKS: values.blocks, FSCB_RANK: '1' }
  for (const kv of values.env.split(',').filter(Boolean)) { const i = kv.indexOf('='); env[kv.slice(0, i)] = kv.slice(i + 1) }
  const burners = Array.from({ length: Number(values.burn) }, () => spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }))
  const rows = []
  try {
    for (let r = 0; r < Number(values.runs); r++) {
      const { blocks } = await rankJob(__filename, [], env, 'cold blocks')
      const rest = blocks.slice(1)
      rows.push({ first: blocks[0], median: median(rest), worst: Math.max(...rest), slow: rest.filter(x => x > 1000).length })
    }
  } finally {
    for (const b of burners) b.kill()
  }
  const m = k => median(rows.map(x => x[k]))
  console.log(`fresh 2-rank jobs, awaited 8 B round trips in blocks of 100, ${values.blocks} blocks, ${values.runs} runs, ${values.burn} CPU-bound processes beside${values.env ? `, ${values.env}` : ''}`)
  console.log('| run | first block µs | median block µs | worst block µs | blocks > 1 ms |\n| --- | ---: | ---: | ---: | ---: |')
  rows.forEach((x, i) => console.log(`| ${i + 1} | ${x.first.toFixed(1)} | ${x.median.toFixed(2)} | ${x.worst.toFixed(1)} | ${x.slow} |`))
  console.log(`| median | ${m('first').toFixed(1)} | ${m('median').toFixed(2)} | ${m('worst').toFixed(1)} | ${m('slow')} |`)
}

if (process.env.FSCB_RANK === '1') rank().catch(err => { console.error(err); process.exit(1) })
else main().catch(err => { console.error(err); process.exit(1) })
