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
 * barrier-sync and allreduce-sync run a third time over shm with FASTSOCK_MPI_PAIR=0 ("shm,
 * steps": the general steps instead of the 2-rank path, docs/mpi-collectives.md "Two ranks: no
 * steps"); their shm rows print p50 and mean ÷ that run's too (below 1: the 2-rank path is faster).
 *
 *   node bench/mpi-waits.js [--iterations 20000] [--warmup 2000] [--runs 1] [--patterns pingpong,barrier]
 *
 * `--runs`: jobs per pattern and channel, interleaved across the channels; each figure is the
 * median over the runs (a single job's p50 swings 2-4× from one job to the next on a shared VM).
 *
 * `--warmup`: untimed iterations of the same pattern first (V8 compiles the path meanwhile; its
 * compiler threads otherwise stall the first ~200 ms, docs/mpi-benchmarks.md). Each pattern and
 * channel is its own job of two fresh processes. Prints figures, asserts nothing.
 */
const { parseArgs } = require('util')
const { median } = require('./_procs')
const { rankJob } = require('./_mpi-job')

const PATTERNS = ['pingpong', 'exchange', 'waitfirst', 'barrier', 'allreduce', 'pingpong-sync', 'exchange-sync', 'barrier-sync', 'allreduce-sync']
/** The patterns also run with the 2-rank path off (FASTSOCK_MPI_PAIR=0). */
const STEPS_TOO = ['barrier-sync', 'allreduce-sync']

/** Two blocking calls in turn: undefined when both completed at once, else a promise of the rest. */
function inTurn (a, b) {
  const p = blocking(a)
  return p === undefined ? blocking(b) : p.then(() => blocking(b))
}

/** A blocking call: undefined once done, or (ERR_MPI_WOULD_BLOCK) its request's wait() to await. */
function blocking (call) {
  try { call(); return undefined } catch (e) { if (e.code !== 'ERR_MPI_WOULD_BLOCK') throw e; return e.request.wait() }
}

async function rank (pattern, channel, iterations, warmup) {
  const mpi = require('../dist/mpi')
  const comm = await mpi.init(channel === 'tcp' ? { transports: ['tcp'] } : {})
  const peer = 1 - comm.rank
  const sb = new Float64Array(1)
  const rb = new Float64Array(1)
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
    'allreduce-sync': () => blocking(() => comm.allreduceSync(sb, rb, mpi.SUM))
  }[pattern]
  // A step returns undefined when it completed synchronously: no await (and no microtask) then.
  let p
  for (let i = 0; i < warmup; i++) if ((p = step()) !== undefined) await p
  const us = new Float64Array(iterations)
  for (let i = 0; i < iterations; i++) {
    const t0 = process.hrtime.bigint()
    if ((p = step()) !== undefined) await p
    us[i] = Number(process.hrtime.bigint() - t0) / 1000
  }
  if (comm.rank === 0) {
    const mean = us.reduce((a, b) => a + b, 0) / iterations
    const slow = us.filter(x => x > 50).length
    us.sort()
    const q = f => us[Math.min(iterations - 1, Math.floor(iterations * f))]
    process.stdout.write(JSON.stringify({ p50: q(0.5), p90: q(0.9), p99: q(0.99), mean, slow, transport: comm.transportOf(peer) }) + '\n')
  }
  await mpi.finalize()
}

async function main () {
  const { values } = parseArgs({
    options: { iterations: { type: 'string', default: '20000' }, warmup: { type: 'string', default: '2000' }, runs: { type: 'string', default: '1' }, patterns: { type: 'string', default: PATTERNS.join(',') } }
  })
  const runs = Number(values.runs)
  if (!Number.isInteger(runs) || runs < 1) throw new Error('--runs takes a positive integer')
  const iterations = Number(values.iterations)
  const warmup = Number(values.warmup)
  const patterns = values.patterns.split(',')
  for (const p of patterns) if (!PATTERNS.includes(p)) throw new Error(`unknown pattern ${p}: one of ${PATTERNS.join(', ')}`)
  const f = x => x.toFixed(x < 10 ? 2 : 1)
  console.log(`fastsock/mpi wait patterns, 2 ranks, ${iterations} iterations after ${warmup} warm-up; µs per iteration${runs > 1 ? `; medians of ${runs} interleaved jobs` : ''}`)
  console.log('| pattern | channel | transport | p50 | p90 | p99 | mean | > 50 µs | p50 × tcp | mean × tcp | p50, mean ÷ steps |')
  console.log('| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |')
  for (const pattern of patterns) {
    const row = {}
    // [label, transport of the rank, environment]
    const channels = [['shm', 'shm', {}], ...(STEPS_TOO.includes(pattern) ? [['shm, steps', 'shm', { FASTSOCK_MPI_PAIR: '0' }]] : []), ['tcp', 'tcp', {}]]
    const all = Object.fromEntries(channels.map(([label]) => [label, []]))
    for (let run = 0; run < runs; run++) {
      for (const [label, channel, env] of channels) {
        all[label].push(await rankJob(__filename, ['--rank', pattern, channel, String(iterations), String(warmup)], env, `${pattern} over ${label}`))
      }
    }
    for (const [label] of channels) {
      const m = k => median(all[label].map(o => o[k]))
      row[label] = { p50: m('p50'), p90: m('p90'), p99: m('p99'), mean: m('mean'), slow: m('slow'), transport: all[label][0].transport }
    }
    for (const [label] of channels) {
      const r = row[label]
      const ratio = label !== 'tcp' ? `${f(row.tcp.p50 / r.p50)}× | ${f(row.tcp.mean / r.mean)}×` : '1 | 1'
      const steps = row['shm, steps'] !== undefined && label === 'shm' ? `${f(r.p50 / row['shm, steps'].p50)}×, ${f(r.mean / row['shm, steps'].mean)}×` : ''
      console.log(`| ${pattern} | ${label} | ${r.transport} | ${f(r.p50)} | ${f(r.p90)} | ${f(r.p99)} | ${f(r.mean)} | ${r.slow} | ${ratio} | ${steps} |`)
    }
  }
}

if (process.argv[2] === '--rank') {
  const [, , , pattern, channel, iterations, warmup] = process.argv
  rank(pattern, channel, Number(iterations), Number(warmup)).catch(err => { process.stderr.write(`${err.stack}\n`); process.exit(1) })
} else {
  main().catch(err => { process.stderr.write(`${err.message}\n`); process.exit(1) })
}
