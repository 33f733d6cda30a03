'use strict'
// The collectives on real processes (fastsock/mpi over shm between `node` ranks): every collective
// and forced algorithm for P = 1..4 (5..7: coll-procs-odd.test.js), compared on every rank with a result computed locally from
// every rank's input (test/fixtures/mpi/coll-ranks.js). Large messages, communicators, a killed
// rank and Open MPI's mpirun: coll-procs-misc.test.js. The exhaustive matrix runs in process:
// coll-fake-*.test.js.
const t = require('tap')
const path = require('path')
const { spawnRanks, describe } = require('../helpers/mpi-spawn')

const FIXTURE = path.join(__dirname, '..', 'fixtures', 'mpi', 'coll-ranks.js')

async function run (t, scenario, np, timeoutMs = 60000) {
  const ranks = await spawnRanks(FIXTURE, { np, args: [scenario], timeoutMs })
  const bad = ranks.filter(r => r.code !== 0 || !new RegExp(`^ok ${r.rank}\\b`, 'm').test(r.stdout))
  t.same(bad.map(r => r.rank), [], `${scenario} on ${np} rank(s): every rank ok${bad.length ? '\n' + describe(ranks) : ''}`)
}

t.test('every collective and algorithm, every op × kind (allreduce), P = 1..4', async t => {
  for (const np of [1, 2, 3, 4]) await run(t, 'all', np)
})

