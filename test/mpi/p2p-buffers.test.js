'use strict'
// fastsock/mpi point-to-point on real processes (test/fixtures/mpi/p2p.js through
// test/helpers/mpi-spawn.js): every TypedArray kind, DataView and Buffer from 0 B to 16 MiB and
// around the eager threshold; non-overtaking; ANY_SOURCE / ANY_TAG, probe / iprobe; P = 1..5.
const t = require('tap')
const path = require('path')
const { spawnRanks, describe } = require('../helpers/mpi-spawn')

const FIXTURE = path.join(__dirname, '..', 'fixtures', 'mpi', 'p2p.js')

/** Runs `scenario` on `np` ranks; every rank must exit 0 having printed "ok <rank>". */
async function run (t, scenario, np, env = {}) {
  const ranks = await spawnRanks(FIXTURE, { np, args: [scenario], env, timeoutMs: 45000 })
  const bad = ranks.filter(r => r.code !== 0 || !new RegExp(`^ok ${r.rank}\\b`, 'm').test(r.stdout))
  t.same(bad.map(r => r.rank), [], `${scenario} on ${np} rank(s): every rank ok\n${bad.length ? describe(ranks) : ''}`)
  return ranks
}

t.test('every kind and size, ring of P ranks (P = 1, 3)', async t => {
  for (const np of [1, 3]) await run(t, 'kinds', np)
})

t.test('every kind and size with a 1 KiB eager threshold (rendezvous for most sizes)', async t => {
  await run(t, 'kinds', 2, { FASTSOCK_MPI_EAGER_BYTES: '1024' })
})

t.test('non-overtaking: 300 messages of mixed sizes arrive in order (P = 2, 5)', async t => {
  for (const np of [2, 5]) await run(t, 'order', np)
})

t.test('ANY_SOURCE, ANY_TAG, probe, iprobe, PROC_NULL (P = 1..5)', async t => {
  for (const np of [1, 2, 3, 4, 5]) await run(t, 'any', np)
})

t.test('crossing dials: all pairs at once end with one connection per pair, in order (P = 2, 4)', async t => {
  for (const np of [2, 4]) await run(t, 'cross', np)
})
