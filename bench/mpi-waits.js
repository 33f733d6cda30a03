#!/usr/bin/env node
'use strict'
/**
 * fastsock/mpi, two ranks: the distribution of one iteration's time (µs) for the wait patterns
 * the collectives are made of, over shm (the default chain) and over tcp (Node net, the same
 * API), in the same run: p50, p90, p99, the mean (what OSU prints) and how many iterations took
 * over 50 µs (the stalls the mean carries).
 *
 *   pingpong   rank 0 send + recv, rank 1 recv + send (8 B): one round trip
 *   exchange   irecv + isend + waitAll on both ranks (8 B)
 *   waitfirst  irecv, wait() called, then isend, then await (the collectives' pattern, 8 B)
 *   barrier    comm.barrier()
 *   allreduce  comm.allreduce of one float64, SUM
 * and the blocking tier (docs/mpi.md "Blocking calls", docs/mpi-collectives.md "Blocking
 * collectives"; a call that throws ERR_MPI_WOULD_BLOCK, every one over tcp, awaits its request):
 *   pingpong-sync   sendSync + recvSync as pingpong (8 B)
 *   exchange-sync   sendSync then recvSync on both ranks at once (8 B)
 *   barrier-sync    comm.barrierSync()
 *   allreduce-sync  comm.allreduceSync of one float64, SUM
 *   allreduce-sync-osu  OSU's loop: comm.allreduceSync timed, then an untimed comm.barrierSync
 *   bcast-sync-osu      OSU's loop: comm.bcastSync from rank 0 timed, then an untimed
 *                       comm.barrierSync; its figures are the means over the ranks of each rank's
 *                       (as OSU averages the ranks' averages: the root's time is not the others')
 * barrier-sync, allreduce-sync and bcast-sync-osu run a third time over shm with
 * FASTSOCK_MPI_PAIR=0 ("shm, steps": the general steps instead of the direct paths,
 * docs/mpi-collectives.md "No steps"); their shm rows print p50 and mean ÷ that run's too (below
 * 1: the direct path is faster).
 *
 *   node bench/mpi-waits.js [--iterations 20000] [--warmup 2000] [--runs 1] [--patterns pingpong,barrier]
 *                           [--np 2] [--bytes 8]
 *
 * `--np`: ranks per job (the collectives; the point-to-point patterns take 2). `--bytes`: the
 * allreduce patterns' array, bytes: one float64 at 8 (the default), else Float32 elements as
 * OSU's; bcast-sync-osu's, a Uint8Array of that many bytes; a comma-separated list runs the sizes
 * one after the other in each job, as OSU's sweep. The column "GCs / 1000" counts the garbage collections of every rank (perf_hooks 'gc'
 * entries) that started during the timed iterations, per 1000 of them: each stalls the ranks
 * waiting on that one (docs/mpi-benchmarks.md, "The large allreduce's averages were its stalls").
 *
 * `--runs`: jobs per pattern and channel, interleaved across the channels; each figure is the
 * median over the runs (a single job's p50 swings 2-4× from one job to the next on a shared VM).
 *
 * Under bench/tail-sched.js (FASTSOCK_TAIL_LOG set), every rank of the shm jobs logs its 20
 * slowest timed iterations for it (bench/_tail-log.js): `node bench/tail-sched.js -- node
 * bench/mpi-waits.js --np 4 --patterns allreduce-sync-osu --bytes 65536 --channels shm`.
 *
 * `--channels`: a subset of shm,tcp (both by default; the steps row runs with shm).
 *
 * `--warmup`: untimed iterations of the same pattern first (V8 compiles the path meanwhile; its
 * compiler threads otherwise stall the first ~200 ms, docs/mpi-benchmarks.md). Each pattern and
 * channel is its own job of two fresh processes. Prints figures, asserts nothing.
 */
const { parseArgs } = require('util')
const { median } = require('./_procs')
const { rankJob } = require('./_mpi-job')
const { writeTailLog } = require('./_tail-log')

const PATTERNS = ['pingpong', 'exchange', 'waitfirst', 'barrier', 'allreduce', 'pingpong-sync', 'exchange-sync', 'barrier-sync', 'allreduce-sync', 'allreduce-sync-osu', 'bcast-sync-osu']
/** The patterns that take any number of ranks (the others are between two). */
const COLLECTIVE = ['barrier', 'allreduce', 'barrier-sync', 'allreduce-sync', 'allreduce-sync-osu', 'bcast-sync-osu']
/** The patterns also run with the 2-rank path off (FASTSOCK_MPI_PAIR=0). */
const STEPS_TOO = ['barrier-sync', 'allreduce-sync', 'bcast-sync-osu']
/** The patterns whose ranks differ (a root): their figures are the ranks' means. */
const PER_RANK_MEAN = ['bcast-sync-osu']
/** The patterns with an array (--bytes sweeps them). */
const SIZED = ['allreduce', 'allreduce-sync', 'allreduce-sync-osu', 'bcast-sync-osu']

/** Two blocking calls in turn: undefined when both completed at once, else a promise of the rest. */
function inTurn (a, b) {
  const p = blocking(a)
  return p === undefined ? blocking(b) : p.then(() => blocking(b))
}

/** A blocking call: undefined once done, or (ERR_MPI_WOULD_BLOCK) its request's wait() to await. */
function blocking (call) {
  try { call(); return undefined } catch (e) { if (e.code !== 'ERR_MPI_WOULD_BLOCK') throw e; return e.request.wait() }
}

async function rank (pattern, channel, iterations, warmup, sizes) {
  const mpi = require('../dist/mpi')
  const comm = await mpi.init(channel === 'tcp' ? { transports: ['tcp'] } : {})
  const rows = []
  // the sizes one after the other in this job, as OSU's sweep (the pools and V8 carry over)
  for (const bytes of sizes) rows.push(await timeSize(mpi, comm, pattern, channel, iterations, warmup, bytes))
  if (comm.rank === 0) process.stdout.write(JSON.stringify({ rows, transport: comm.transportOf(1) }) + '\n')
  await mpi.finalize()
}

/** One size of `pattern`: rank 0's figures (every rank's GC count), null on the other ranks. */
async function timeSize (mpi, comm, pattern, channel, iterations, warmup, bytes) {
  const { PerformanceObserver, performance } = require('perf_hooks')
  const peer = 1 - comm.rank
  const sb = bytes === 8 ? new Float64Array(1) : new Float32Array(bytes / 4).fill(1)
  const rb = bytes === 8 ? new Float64Array(1) : new Float32Array(bytes / 4)
  const bb = new Uint8Array(bytes)
  const step = {
    pingpong: async () => {
      if (comm.rank === 0) { await comm.send(sb, peer, 1); await comm.recv(rb, peer, 1) } else { await comm.recv(rb, peer, 1); await comm.send(sb, peer, 1) }
    },
    exchange: () => mpi.waitAll([comm.irecv(rb, peer, 2), comm.isend(sb, peer, 2)]),
    waitfirst: async () => {
      const p = comm.irecv(rb, peer, 3).wait()
      const s = comm.isend(sb, peer, 3)
      await p
      await s.wait()
    },
    barrier: () => comm.barrier(),
    allreduce: () => comm.allreduce(sb, rb, mpi.SUM),
    'pingpong-sync': () => comm.rank === 0
      ? inTurn(() => comm.sendSync(sb, peer, 4), () => comm.recvSync(rb, peer, 4))
      : inTurn(() => comm.recvSync(rb, peer, 4), () => comm.sendSync(sb, peer, 4)),
    'exchange-sync': () => inTurn(() => comm.sendSync(sb, peer, 5), () => comm.recvSync(rb, peer, 5)),
    'barrier-sync': () => blocking(() => comm.barrierSync()),
    'allreduce-sync': () => blocking(() => comm.allreduceSync(sb, rb, mpi.SUM)),
    'allreduce-sync-osu': () => blocking(() => comm.allreduceSync(sb, rb, mpi.SUM)),
    'bcast-sync-osu': () => blocking(() => comm.bcastSync(bb, 0))
  }[pattern]
  // OSU's collective loop: an untimed barrier after each timed call.
  const after = pattern.endsWith('-osu') ? () => blocking(() => comm.barrierSync()) : () => undefined
  // A step returns undefined when it completed synchronously: no await (and no microtask) then.
  let p
  for (let i = 0; i < warmup; i++) { if ((p = step()) !== undefined) await p; if ((p = after()) !== undefined) await p }
  const gcStarts = []
  const obs = new PerformanceObserver(list => { for (const e of list.getEntries()) gcStarts.push(e.startTime) })
  obs.observe({ entryTypes: ['gc'] })
  const us = new Float64Array(iterations)
  const startNs = new Float64Array(iterations)
  const from = performance.now()
  for (let i = 0; i < iterations; i++) {
    const t0 = process.hrtime.bigint()
    if ((p = step()) !== undefined) await p
    us[i] = Number(process.hrtime.bigint() - t0) / 1000
    startNs[i] = Number(t0)
    if ((p = after()) !== undefined) await p
  }
  const to = performance.now()
  await new Promise(resolve => setImmediate(resolve)) // the observer's entries are delivered on the event loop
  for (const e of obs.takeRecords()) gcStarts.push(e.startTime)
  obs.disconnect()
  const gcs = new Float64Array([gcStarts.filter(t => t >= from && t <= to).length])
  await comm.allreduce(gcs, gcs, mpi.SUM) // every rank's
  const mean = us.reduce((a, b) => a + b, 0) / iterations
  const slow = us.filter(x => x > 50).length
  if (channel === 'shm') {
    const worst = Array.from(us.keys()).sort((a, b) => us[b] - us[a]).slice(0, 20)
    writeTailLog(`${pattern} ${bytes} B, rank ${comm.rank}`, worst.map(i => [startNs[i], startNs[i] + us[i] * 1000]))
  }
  us.sort()
  const q = f => us[Math.min(iterations - 1, Math.floor(iterations * f))]
  const mine = new Float64Array([q(0.5), q(0.9), q(0.99), mean, slow])
  if (PER_RANK_MEAN.includes(pattern)) {
    await comm.allreduce(mine, mine, mpi.SUM)
    for (let i = 0; i < mine.length; i++) mine[i] /= comm.size
  }
  if (comm.rank !== 0) return null
  return { bytes, p50: mine[0], p90: mine[1], p99: mine[2], mean: mine[3], slow: mine[4], gcs: gcs[0] * 1000 / iterations }
}

async function main () {
  const { values } = parseArgs({
    options: { iterations: { type: 'string', default: '20000' }, warmup: { type: 'string', default: '2000' }, runs: { type: 'string', default: '1' }, patterns: { type: 'string', default: PATTERNS.join(',') }, np: { type: 'string', default: '2' }, bytes: { type: 'string', default: '8' }, channels: { type: 'string', default: 'shm,tcp' } }
  })
  const np = Number(values.np)
  const sizes = values.bytes.split(',').map(Number)
  if (!Number.isInteger(np) || np < 2) throw new Error('--np takes an integer >= 2')
  for (const b of sizes) if (!(b === 8 || (Number.isInteger(b) && b >= 4 && b % 4 === 0))) throw new Error('--bytes takes 8 or multiples of 4, comma-separated')
  const runs = Number(values.runs)
  if (!Number.isInteger(runs) || runs < 1) throw new Error('--runs takes a positive integer')
  const iterations = Number(values.iterations)
  const warmup = Number(values.warmup)
  const patterns = values.patterns.split(',')
  for (const p of patterns) if (!PATTERNS.includes(p)) throw new Error(`unknown pattern ${p}: one of ${PATTERNS.join(', ')}`)
  const wanted = values.channels.split(',')
  for (const c of wanted) if (c !== 'shm' && c !== 'tcp') throw new Error(`unknown channel ${c}: shm, tcp`)
  if (np !== 2) for (const p of patterns) if (!COLLECTIVE.includes(p)) throw new Error(`${p} is between two ranks: --np ${np} takes ${COLLECTIVE.join(', ')}`)
  const f = x => x.toFixed(x < 10 ? 2 : 1)
  console.log(`fastsock/mpi wait patterns, ${np} ranks, ${iterations} iterations after ${warmup} warm-up; µs per iteration${runs > 1 ? `; medians of ${runs} interleaved jobs` : ''}`)
  console.log('| pattern | bytes | channel | transport | p50 | p90 | p99 | mean | > 50 µs | GCs / 1000 | p50 × tcp | mean × tcp | p50, mean ÷ steps |')
  console.log('| --- | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |')
  for (const pattern of patterns) {
    // [label, transport of the rank, environment]
    const channels = [['shm', 'shm', {}], ...(STEPS_TOO.includes(pattern) ? [['shm, steps', 'shm', { FASTSOCK_MPI_PAIR: '0' }]] : []), ['tcp', 'tcp', {}]].filter(([, ch]) => wanted.includes(ch))
    const all = Object.fromEntries(channels.map(([label]) => [label, []]))
    // the patterns without an array time one size
    const sweep = SIZED.includes(pattern) ? sizes : [8]
    for (let run = 0; run < runs; run++) {
      for (const [label, channel, env] of channels) {
        all[label].push(await rankJob(__filename, ['--rank', pattern, channel, String(iterations), String(warmup), sweep.join(',')], env, `${pattern} over ${label}`, np))
      }
    }
    sweep.forEach((bytes, k) => {
      const row = {}
      for (const [label] of channels) {
        const m = key => median(all[label].map(o => o.rows[k][key]))
        row[label] = { p50: m('p50'), p90: m('p90'), p99: m('p99'), mean: m('mean'), slow: m('slow'), gcs: m('gcs'), transport: all[label][0].transport }
      }
      for (const [label] of channels) {
        const r = row[label]
        const ratio = row.tcp === undefined ? '- | -' : label !== 'tcp' ? `${f(row.tcp.p50 / r.p50)}× | ${f(row.tcp.mean / r.mean)}×` : '1 | 1'
        const steps = row['shm, steps'] !== undefined && label === 'shm' ? `${f(r.p50 / row['shm, steps'].p50)}×, ${f(r.mean / row['shm, steps'].mean)}×` : ''
        console.log(`| ${pattern} | ${bytes} | ${label} | ${r.transport} | ${f(r.p50)} | ${f(r.p90)} | ${f(r.p99)} | ${f(r.mean)} | ${r.slow} | ${f(r.gcs)} | ${ratio} | ${steps} |`)
      }
    })
  }
}

if (process.argv[2] === '--rank') {
  const [, , , pattern, channel, iterations, warmup, sizes] = process.argv
  rank(pattern, channel, Number(iterations), Number(warmup), sizes.split(',').map(Number)).catch(err => { process.stderr.write(`${err.stack}\n`); process.exit(1) })
} else {
  main().catch(err => { process.stderr.write(`${err.message}\n`); process.exit(1) })
}
