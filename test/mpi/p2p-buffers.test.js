'use strict'
// fastsock/mpi point-to-point on real processes (test/fixtures/mpi/p2p.js through
// test/helpers/mpi-spawn.js): every TypedArray kind, DataView and Buffer from 0 B to 16 MiB and
// around the eager threshold; non-overtaking; ANY_SOURCE / ANY_TAG, probe / iprobe; P = 1..5.
const t = require('tap')
const path = require('path')
const { runScenario } = require('../helpers/mpi-spawn')

const FIXTURE = path.join(__dirname, '..', 'fixtures', 'mpi', 'p2p.js')

/** `scenario` on `np` ranks (`env` added): every rank must exit 0 having printed "ok <rank>". */
const run = (t, scenario, np, env = {}) => runScenario(t, FIXTURE, scenario, np, { env, timeoutMs: 45000 })

t.test('every kind and size, ring of P ranks (P = 1, 3)', async t => {
  for (const np of [1, 3]) await run(t, 'kinds', np)
})

t.test('every kind and size with a 1 KiB eager threshold (rendezvous for most sizes)', async t => {
  await run(t, 'kinds', 2, { FASTSOCK_MPI_EAGER_BYTES: '1024' })
})

t.test('the eager threshold: 64 KiB by default, 256 KiB with more ranks on the host than CPUs, the option or variable over both', async t => {
  const cpus = require('os').availableParallelism()
  await run(t, 'eager', 2, { EXPECT: cpus >= 2 ? 'rendezvous' : 'eager' })
  await run(t, 'eager', 2, { EXPECT: 'eager', FASTSOCK_MPI_EAGER_BYTES: String(256 * 1024) })
  if (cpus + 1 > 8) { t.comment(`${cpus} CPUs: the oversubscribed case would need ${cpus + 1} ranks, skipped`); return }
  await run(t, 'eager', cpus + 1, { EXPECT: 'eager' })
  await run(t, 'eager', cpus + 1, { EXPECT: 'rendezvous', FASTSOCK_MPI_EAGER_BYTES: String(64 * 1024) })
})

t.test('sends to the own rank: posted receive first, send first, a posted receive too small (P = 1, 2)', async t => {
  for (const np of [1, 2]) await run(t, 'self', np)
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
