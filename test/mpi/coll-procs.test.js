'use strict'
// The collectives on real processes (fastsock/mpi over shm between `node` ranks): every collective
// and forced algorithm for P = 1..4 (5..7: coll-procs-odd.test.js), compared on every rank with a result computed locally from
// every rank's input (test/fixtures/mpi/coll-ranks.js). Large messages, communicators, a killed
// rank and Open MPI's mpirun: coll-procs-misc.test.js. The exhaustive matrix runs in process:
// coll-fake-*.test.js.
const t = require('tap')
const path = require('path')
const { runScenario } = require('../helpers/mpi-spawn')

const FIXTURE = path.join(__dirname, '..', 'fixtures', 'mpi', 'coll-ranks.js')

/** `scenario` on `np` ranks: every rank must exit 0 having printed "ok <rank>". */
const run = (t, scenario, np, timeoutMs = 60000) => runScenario(t, FIXTURE, scenario, np, { timeoutMs })

t.test('every collective and algorithm, every op × kind (allreduce), P = 1..4', async t => {
  for (const np of [1, 2, 3, 4]) await run(t, 'all', np)
})

t.test('the blocking collectives (barrierSync, bcastSync, allreduceSync), mixed with the awaited ones, P = 1..5', async t => {
  for (const np of [1, 2, 3, 4, 5]) await run(t, 'blocking', np)
})

t.test('the awaited collectives on shm: within the turn when the peers are there, and bounded (two communicators in opposite orders complete), P = 1..5', async t => {
  for (const np of [1, 2, 3, 4, 5]) await run(t, 'awaited', np)
})

t.test('the awaited collectives without the blocking waits (FASTSOCK_MPI_AWAIT_BLOCK_MS=0) and over tcp', async t => {
  await runScenario(t, FIXTURE, 'awaited', 3, { timeoutMs: 60000, env: { FASTSOCK_MPI_AWAIT_BLOCK_MS: '0', AWAITED_ANY_TURN: '1' } })
  await runScenario(t, FIXTURE, 'awaited', 3, { timeoutMs: 60000, env: { COLL_TRANSPORTS: 'tcp' } })
})

t.test('over tcp the blocking collectives hand over to the awaited tier and complete', async t => {
  await runScenario(t, FIXTURE, 'blocking', 3, { timeoutMs: 60000, env: { COLL_TRANSPORTS: 'tcp' } })
})
