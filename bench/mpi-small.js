#!/usr/bin/env node
'use strict'
/**
 * fastsock/mpi's blocking tier at P = 2 for one small message (docs/mpi-collectives.md, "Two
 * ranks: no steps" and "No object made per call on the small path"): the p50 of one call in
 * OSU's loop (each call timed alone, a barrierSync between calls), µs:
 *
 *   exchange        sendSync then recvSync of 24 bytes on both ranks: the point-to-point floor
 *                   beneath a 2-rank collective (one frame each way, no descriptor, no reduction)
 *   barrierSync     comm.barrierSync()
 *   bcastSync       comm.bcastSync of 8 bytes from rank 0 (p50 at the root and at rank 1)
 *   allreduceSync   comm.allreduceSync of one float64, SUM
 *
 * over shm (fastsock's default chain) and over tcp (the same API over Node's net), each a job of
 * two fresh ranks, rounds interleaved across the patterns; each figure is the median of the
 * rounds' p50s. In the shm job a second copy of the collectives, loaded with FASTSOCK_MPI_PAIR=0
 * (the general steps instead of the 2-rank paths), drives the same communicator, interleaved:
 * column "steps" and shm ÷ steps. Then tcp and tcp ÷ shm.
 *
 * `--against <dist>`: another build's dist/ directory (e.g. a `git worktree` of an earlier commit,
 * built): its collectives drive the same communicator in the same shm job too, and a column prints
 * this build ÷ that one (below 1: this build is faster). Variants in one pair of processes are
 * what resolves a change of a few hundred ns on a shared VM, where separate jobs move the p50 by 2×.
 *
 *   node bench/mpi-small.js [--rounds 12] [--calls 20000] [--tcp-calls 2000] [--against ../old/dist]
 *
 * Prints figures, asserts nothing.
 */
const path = require('path')
const { parseArgs } = require('util')
const { median } = require('./_procs')
const { rankJob } = require('./_mpi-job')

const PATTERNS = ['exchange', 'barrierSync', 'bcastSync', 'allreduceSync']

if (process.argv[2] === '--rank') rank(JSON.parse(process.argv[3])).catch(err => { process.stderr.write(`${err.stack}\n`); process.exit(1) })
else main().catch(err => { process.stderr.write(`${err.stack}\n`); process.exit(1) })

/** One rank of a job: prints (rank 0) one JSON line { pattern: [p50 at rank 0, p50 at rank 1] }, µs. */
async function rank ({ transports, rounds, calls, against }) {
  const mpi = require('../dist/mpi')
  const comm = await mpi.init(transports === null ? undefined : { transports })
  const peer = comm.rank ^ 1
  // every connection up, every path compiled once, in the awaited tier
  await comm.barrier(); await comm.allreduce(new Float64Array(1), new Float64Array(1), mpi.SUM)
  const builds = [['', require('../dist/mpi/coll/index.js'), mpi.SUM]]
  if (transports === null) builds.push([' (steps)', ...collWithoutPairPaths()])
  if (against !== null) builds.push([' (against)', require(path.resolve(against, 'mpi/coll/index.js')), require(path.resolve(against, 'mpi/coll/ops.js')).SUM])
  const out24 = new Uint8Array(24); const in24 = new Uint8Array(24)
  const b8 = new Uint8Array(8); const f = new Float64Array(1); const g = new Float64Array(1)
  const variants = []
  variants.push(['exchange', () => { comm.sendSync(out24, peer, 3); comm.recvSync(in24, peer, 3) }])
  for (const [suffix, coll, sum] of builds) {
    variants.push([`barrierSync${suffix}`, () => coll.barrierSync(comm)])
    variants.push([`bcastSync${suffix}`, () => coll.bcastSync(comm, b8, 0)])
    variants.push([`allreduceSync${suffix}`, () => coll.allreduceSync(comm, f, g, sum)])
  }
  const coll = builds[0][1]
  // A call that cannot finish without the event loop (tcp) awaits its request (ERR_MPI_WOULD_BLOCK).
  const settle = (fn) => { try { fn(); return null } catch (e) { if (e.code !== 'ERR_MPI_WOULD_BLOCK') throw e; return e.request.wait() } }
  const p50s = {}
  const lat = new Float64Array(calls)
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? variants : [...variants].reverse()
    for (const [name, fn] of order) {
      for (let i = -Math.ceil(calls / 10); i < calls; i++) {
        const t0 = process.hrtime.bigint()
        const p = settle(fn)
        if (p !== null) await p
        if (i >= 0) lat[i] = Number(process.hrtime.bigint() - t0) / 1e3
        const q = settle(() => coll.barrierSync(comm))
        if (q !== null) await q
      }
      lat.sort()
      ;(p50s[name] ??= []).push(lat[calls >> 1])
    }
  }
  const mine = Float64Array.from(Object.keys(p50s), k => median(p50s[k]))
  if (comm.rank === 1) { await comm.send(mine, 0, 7); await mpi.finalize(); return }
  const theirs = new Float64Array(mine.length)
  await comm.recv(theirs, 1, 7)
  const res = {}
  Object.keys(p50s).forEach((k, i) => { res[k] = [mine[i], theirs[i]] })
  console.log(JSON.stringify(res))
  await mpi.finalize()
}

/**
 * A second copy of this build's collective modules, loaded with FASTSOCK_MPI_PAIR=0 (read at load
 * time): [its index module, its SUM]. The copy shares the communicator and everything below it.
 */
function collWithoutPairPaths () {
  const dir = path.join(__dirname, '..', 'dist', 'mpi', 'coll') + path.sep
  const saved = new Map(Object.entries(require.cache).filter(([k]) => k.startsWith(dir)))
  for (const k of saved.keys()) delete require.cache[k]
  const before = process.env.FASTSOCK_MPI_PAIR
  process.env.FASTSOCK_MPI_PAIR = '0'
  try {
    return [require(path.join(dir, 'index.js')), require(path.join(dir, 'ops.js')).SUM]
  } finally {
    if (before === undefined) delete process.env.FASTSOCK_MPI_PAIR; else process.env.FASTSOCK_MPI_PAIR = before
    for (const k of Object.keys(require.cache)) if (k.startsWith(dir)) delete require.cache[k]
    for (const [k, m] of saved) require.cache[k] = m
  }
}

async function main () {
  const { values } = parseArgs({ options: { rounds: { type: 'string', default: '12' }, calls: { type: 'string', default: '20000' }, 'tcp-calls': { type: 'string', default: '2000' }, against: { type: 'string' } } })
  const rounds = Number(values.rounds); const calls = Number(values.calls); const tcpCalls = Number(values['tcp-calls'])
  for (const [k, v] of [['rounds', rounds], ['calls', calls], ['tcp-calls', tcpCalls]]) if (!(Number.isInteger(v) && v > 0)) throw new Error(`--${k}: ${v} is not a positive integer`)
  const against = values.against === undefined ? null : path.resolve(values.against)
  const job = (transports, n, env, ag, what) => rankJob(__filename, ['--rank', JSON.stringify({ transports, rounds, calls: n, against: ag })], env, what)
  const shm = await job(null, calls, {}, against, 'shm')
  const tcp = await job(['tcp'], tcpCalls, {}, null, 'tcp')
  // a pattern's figure: the mean of the two ranks' p50s (OSU averages its ranks); bcast shows both
  const fig = (res, k) => res[k] === undefined ? NaN : (res[k][0] + res[k][1]) / 2
  const f = x => Number.isNaN(x) ? '-' : x < 10 ? x.toFixed(2) : x.toFixed(1)
  const ratio = (a, b) => Number.isNaN(a) || Number.isNaN(b) ? '-' : `${(a / b).toFixed(2)}×`
  console.log(`fastsock/mpi blocking tier, P = 2, OSU's loop (a barrierSync between calls): p50 of one call, µs, median of ${rounds} interleaved rounds (shm: ${calls} calls a round, tcp: ${tcpCalls}); a figure is the mean of the two ranks' p50s`)
  console.log(`| pattern | shm | steps (FASTSOCK_MPI_PAIR=0) | shm ÷ steps |${against === null ? '' : ' against | shm ÷ against |'} tcp (Node net) | tcp ÷ shm |`)
  console.log(`| --- | ---: | ---: | ---: |${against === null ? '' : ' ---: | ---: |'} ---: | ---: |`)
  for (const p of PATTERNS) {
    const s = fig(shm, p); const st = fig(shm, `${p} (steps)`); const t = fig(tcp, p); const a = fig(shm, `${p} (against)`)
    const label = p === 'bcastSync' ? `bcastSync (root ${f(shm[p][0])}, rank 1 ${f(shm[p][1])})` : p
    console.log(`| ${label} | ${f(s)} | ${p === 'exchange' ? '-' : f(st)} | ${p === 'exchange' ? '-' : ratio(s, st)} |${against === null ? '' : ` ${f(a)} | ${ratio(s, a)} |`} ${f(t)} | ${ratio(t, s)} |`)
  }
}
