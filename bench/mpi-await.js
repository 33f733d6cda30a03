#!/usr/bin/env node
'use strict'
/**
 * fastsock/mpi's awaited collectives against the blocking ones (issue 32; docs/mpi-collectives.md,
 * "The tiers"), in one job of P fresh ranks over shm, 8 bytes (barrier: none), OSU's loop (each
 * call timed alone, a barrier of the same tier between calls):
 *
 *   cold    the job's first --cold calls of each awaited form (allreduce, then bcast, then
 *           barrier, after init() and one barrier: no warm-up of any kind), mean µs, after the
 *           form's very first call (`first`, µs); and the same form's steady mean after the
 *           rounds below: cold ÷ steady
 *   steady  allreduce / allreduceSync, bcast / bcastSync, barrier / barrierSync: the mean of one
 *           call, median of --rounds interleaved rounds of --calls calls; awaited ÷ blocking
 *
 * A figure is rank 0's (bcast's root). `FASTSOCK_MPI_AWAIT_BLOCK_MS=0` (the awaited tier without
 * the blocking tier's waits, tier.ts) gives the event-loop path for comparison.
 *
 * `--stat min`: the fastest round instead of the median (on a machine other jobs load, the
 * round least disturbed).
 *
 *   node bench/mpi-await.js [--np 2,4] [--rounds 7] [--calls 5000] [--cold 1000] [--stat median|min]
 *
 * Prints figures, asserts nothing.
 */
const { parseArgs } = require('util')
const { median } = require('./_procs')
const { rankJob } = require('./_mpi-job')

const FORMS = ['allreduce', 'bcast', 'barrier']

if (process.argv[2] === '--rank') rank(JSON.parse(process.argv[3])).catch(err => { process.stderr.write(`${err.stack}\n`); process.exit(1) })
else main().catch(err => { process.stderr.write(`${err.stack}\n`); process.exit(1) })

async function rank ({ rounds, calls, cold, stat }) {
  const mpi = require('../dist/mpi')
  const comm = await mpi.init()
  const f = new Float64Array(1); const g = new Float64Array(1); const b8 = new Uint8Array(8)
  const awaited = {
    allreduce: () => comm.allreduce(f, g, mpi.SUM),
    bcast: () => comm.bcast(b8, 0),
    barrier: () => comm.barrier()
  }
  const blocking = {
    allreduce: () => comm.allreduceSync(f, g, mpi.SUM),
    bcast: () => comm.bcastSync(b8, 0),
    barrier: () => comm.barrierSync()
  }
  // A blocking call that cannot finish without the event loop awaits its request (ERR_MPI_WOULD_BLOCK).
  const settle = (fn) => { try { fn(); return null } catch (e) { if (e.code !== 'ERR_MPI_WOULD_BLOCK') throw e; return e.request.wait() } }
  const now = () => Number(process.hrtime.bigint()) / 1e3
  async function loopAwaited (fn, n) {
    let sum = 0
    for (let i = 0; i < n; i++) {
      const t0 = now()
      await fn()
      sum += now() - t0
      await comm.barrier()
    }
    return sum / n
  }
  async function loopBlocking (fn, n) {
    let sum = 0
    for (let i = 0; i < n; i++) {
      const t0 = now()
      const p = settle(fn)
      if (p !== null) await p
      sum += now() - t0
      const q = settle(() => comm.barrierSync())
      if (q !== null) await q
    }
    return sum / n
  }
  const res = { first: {}, cold: {}, steady: {} }
  await comm.barrier() // connections up (OSU's MPI_Init has made them); nothing else warmed
  for (const k of FORMS) {
    const t0 = now(); await awaited[k](); res.first[k] = now() - t0
    await comm.barrier()
    res.cold[k] = await loopAwaited(awaited[k], cold)
  }
  const means = {}
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? FORMS : [...FORMS].reverse()
    for (const k of order) {
      ;(means[`${k} await`] ??= []).push(await loopAwaited(awaited[k], calls))
      ;(means[`${k} blocking`] ??= []).push(await loopBlocking(blocking[k], calls))
    }
  }
  for (const [k, v] of Object.entries(means)) res.steady[k] = stat === 'min' ? Math.min(...v) : median(v)
  if (comm.rank === 0) console.log(JSON.stringify(res))
  await mpi.finalize()
}

async function main () {
  const { values } = parseArgs({ options: { np: { type: 'string', default: '2,4' }, rounds: { type: 'string', default: '7' }, calls: { type: 'string', default: '5000' }, cold: { type: 'string', default: '1000' }, stat: { type: 'string', default: 'median' } } })
  const nps = values.np.split(',').map(Number)
  const rounds = Number(values.rounds); const calls = Number(values.calls); const cold = Number(values.cold)
  for (const [k, v] of [['rounds', rounds], ['calls', calls], ['cold', cold]]) if (!(Number.isInteger(v) && v > 0)) throw new Error(`--${k}: ${v} is not a positive integer`)
  if (nps.some(n => !(Number.isInteger(n) && n >= 2))) throw new Error(`--np: ${values.np} is not a list of rank counts ≥ 2`)
  const stat = values.stat
  if (stat !== 'median' && stat !== 'min') throw new Error(`--stat: ${stat} is not median or min`)
  const f = x => x < 10 ? x.toFixed(2) : x.toFixed(1)
  console.log(`fastsock/mpi awaited vs blocking collectives over shm, OSU's loop: mean of one call at rank 0, µs; steady: ${stat} of ${rounds} interleaved rounds of ${calls} calls; cold: the job's first ${cold} awaited calls of each form`)
  console.log('| P | collective | awaited | blocking | awaited ÷ blocking | first call | cold | cold ÷ steady |')
  console.log('|---|---|---|---|---|---|---|---|')
  for (const np of nps) {
    const res = await rankJob(__filename, ['--rank', JSON.stringify({ rounds, calls, cold, stat })], {}, `P = ${np}`, np)
    for (const k of FORMS) {
      const a = res.steady[`${k} await`]; const b = res.steady[`${k} blocking`]; const c = res.cold[k]
      console.log(`| ${np} | ${k} | ${f(a)} | ${f(b)} | ${(a / b).toFixed(2)}× | ${f(res.first[k])} | ${f(c)} | ${(c / a).toFixed(2)}× |`)
    }
  }
}
