#!/usr/bin/env node
'use strict'
/**
 * What fastsock/mpi's collective layer costs per blocking call, without the point-to-point layer
 * under it (docs/mpi-benchmarks.md, "The collectives' tiers", "A typed array's length is a call on Node 20"): in one
 * process, `allreduceSync` of one float64 (SUM) over a stand-in 2-rank communicator whose
 * `_collSendNow` keeps the message and whose `_collRecvNow` hands the same bytes back (the
 * partner "sends" what this rank sent: its descriptor matches). Beside it the stand-in's own send
 * and receive (the floor) and, with --against, the same loop on another build's dist/ (a `git
 * worktree` of an earlier commit), interleaved round by round. ns per call, the median of the
 * rounds. The real layers beneath are in bench/mpi-layers.js; the whole call, against Node net,
 * in bench/mpi-small.js. Column "awaited": `await allreduce(...)` over the same stand-in (the
 * awaited tier runs the blocking tier's code under its bound: coll/tier.ts; the stand-in's
 * `_collBlockFor` does nothing), and awaited ÷ blocking: what the awaited tier adds per call
 * (a promise, a microtask, the bound). Prints figures, asserts nothing.
 *
 *   node bench/mpi-coll-layer.js [--rounds 7] [--calls 2000000] [--against /path/to/other/dist]
 */
const path = require('path')
const { parseArgs } = require('util')
const { median } = require('./_procs')

/** ns per call of `fn` over `calls` calls. */
function time (fn, calls) {
  const t0 = process.hrtime.bigint()
  for (let i = 0; i < calls; i++) fn(i)
  return Number(process.hrtime.bigint() - t0) / calls
}

/** The loops of one build (`dist`): allreduceSync over the stand-in, and the stand-in alone. */
function build (dist) {
  const coll = require(path.join(dist, 'mpi', 'coll', 'index.js'))
  const { SUM } = require(path.join(dist, 'mpi', 'coll', 'ops.js'))
  const kept = new Uint8Array(8192)
  let keptN = 0
  const echo = {
    rank: 0,
    size: 2,
    seq: 0,
    _collSeq () { return this.seq++ },
    _collSendNow (b) { kept.set(b); keptN = b.length; return true },
    _collRecvNow (b, source, tag) { for (let i = 0; i < keptN; i++) b[i] = kept[i]; return { source, tag, count: keptN } },
    _collIsend () { throw new Error('the stand-in has no asynchronous path') },
    _collIrecv () { throw new Error('the stand-in has no asynchronous path') },
    _collBlockFor () {}
  }
  const a = new Float64Array(1)
  const b = new Float64Array(1)
  const sb = new Uint8Array(24)
  const rb = new Uint8Array(24)
  return {
    allreduce: (i) => { a[0] = i; coll.allreduceSync(echo, a, b, SUM); if (b[0] !== 2 * i) throw new Error(`allreduceSync over the stand-in gave ${b[0]}, not ${2 * i}`) },
    floor: () => { echo._collSendNow(sb, 1, 5); echo._collRecvNow(rb, 1, 5) },
    // as OSU's loop calls it: the promise awaited at once; the result checked before the next call
    awaited: (i) => { if (i > 0 && b[0] !== 2 * (i - 1)) throw new Error(`allreduce over the stand-in gave ${b[0]}, not ${2 * (i - 1)}`); a[0] = i; return coll.allreduce(echo, a, b, SUM) }
  }
}

/** ns per call of the async `fn` over `calls` calls, each awaited. */
async function timeAwaited (fn, calls) {
  const t0 = process.hrtime.bigint()
  for (let i = 0; i < calls; i++) await fn(i)
  return Number(process.hrtime.bigint() - t0) / calls
}

async function main () {
  const { values } = parseArgs({ options: { rounds: { type: 'string', default: '7' }, calls: { type: 'string', default: '2000000' }, against: { type: 'string' } } })
  const rounds = Number(values.rounds)
  const calls = Number(values.calls)
  if (!(rounds >= 1) || !(calls >= 1)) throw new Error('--rounds and --calls take positive numbers')
  const builds = [['this build', build(path.join(__dirname, '..', 'dist'))]]
  if (values.against !== undefined) builds.push([`against ${values.against}`, build(path.resolve(values.against))])
  const warm = Math.min(calls, 200000)
  // a build whose awaited tier needs the stand-in's absent asynchronous path (before coll/tier.ts) has no awaited column
  const awaits = []
  for (const [, b] of builds) {
    time(b.allreduce, warm); time(b.floor, warm)
    try { await timeAwaited(b.awaited, warm); awaits.push(true) } catch { awaits.push(false) }
  }
  const rows = builds.map(([name]) => ({ name, allreduce: [], floor: [], awaited: [] }))
  for (let r = 0; r < rounds; r++) {
    for (let k = 0; k < builds.length; k++) {
      const b = builds[k][1]
      rows[k].allreduce.push(time(b.allreduce, calls)); rows[k].floor.push(time(b.floor, calls))
      if (awaits[k]) rows[k].awaited.push(await timeAwaited(b.awaited, calls))
    }
  }
  console.log(`allreduceSync of one float64 over a 2-rank stand-in that echoes the message; ns per call, median of ${rounds} rounds of ${calls}`)
  console.log('| build | allreduceSync | the stand-in alone | the collective layer | ÷ this build | awaited | awaited ÷ blocking |')
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: |')
  const base = median(rows[0].allreduce)
  for (const row of rows) {
    const all = median(row.allreduce)
    const floor = median(row.floor)
    const aw = row.awaited.length > 0 ? median(row.awaited) : NaN
    const awCells = Number.isNaN(aw) ? '- | -' : `${aw.toFixed(1)} | ${(aw / all).toFixed(2)}×`
    console.log(`| ${row.name} | ${all.toFixed(1)} | ${floor.toFixed(1)} | ${(all - floor).toFixed(1)} | ${(all / base).toFixed(2)}× | ${awCells} |`)
  }
}

main().catch(err => { process.stderr.write(`${err.stack}\n`); process.exit(1) })
