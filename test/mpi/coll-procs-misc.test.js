'use strict'
// The collectives on real processes, continued (coll-procs.test.js has every collective × P):
// messages up to 4 MiB, dup/split/splitLocal isolation, a rank SIGKILLed while every rank loops
// allreduce, and the collectives under Open MPI's `mpirun` (skipped without it, failed in CI).
const t = require('tap')
const path = require('path')
const { spawnRanks, describe, runScenario } = require('../helpers/mpi-spawn')

const FIXTURE = path.join(__dirname, '..', 'fixtures', 'mpi', 'coll-ranks.js')

/** `scenario` on `np` ranks: every rank must exit 0 having printed "ok <rank>". */
const run = (t, scenario, np, timeoutMs = 60000) => runScenario(t, FIXTURE, scenario, np, { timeoutMs })

t.test('large messages up to 4 MiB (P = 2, 3)', async t => {
  for (const np of [2, 3]) await run(t, 'big', np, 90000)
})

t.test('dup / split / splitLocal isolation (P = 1, 4, 5)', async t => {
  for (const np of [1, 4, 5]) await run(t, 'comms', np)
})

t.test('a rank SIGKILLed while every rank loops allreduce: every survivor rejects with ERR_MPI_PEER_LOST', async t => {
  const np = 4
  const job = spawnRanks(FIXTURE, { np, args: ['kill'], timeoutMs: 90000 })
  const victim = np - 1
  for (let r = 0; r < np; r++) await job.waitForOutput(r, /^looped 20/m, 60000)
  const t0 = Date.now()
  t.ok(job.kill(victim, 'SIGKILL'), 'the victim was killed')
  const ranks = await job
  const elapsed = Date.now() - t0
  for (let r = 0; r < victim; r++) {
    const ok = ranks[r].code === 0 && /lost ERR_MPI_PEER_LOST/.test(ranks[r].stdout)
    t.ok(ok, `rank ${r} rejected with ERR_MPI_PEER_LOST${ok ? '' : '\n' + describe(ranks)}`)
  }
  t.ok(elapsed < 5000, `every survivor exited ${elapsed} ms after the kill (rejection within 1 s + exit)`)
})

t.test('under Open MPI\'s mpirun (P = 3): every collective and algorithm', async t => {
  const { IS_ROOT, need, run: runCmd } = require('../helpers/mpi-launchers')
  const dep = need(t, ['mpirun'])
  if (dep.skip) { t.skip(dep.skip); return }
  const args = [...(IS_ROOT ? ['--allow-run-as-root'] : []), '--oversubscribe', '-np', '3', process.execPath, FIXTURE, 'all']
  const r = await runCmd(dep.paths.mpirun, args, { timeoutMs: 90000 })
  t.equal(r.code, 0, `mpirun exits 0\n${r.stderr}`)
  for (let k = 0; k < 3; k++) t.match(r.stdout, new RegExp(`^ok ${k} `, 'm'), `rank ${k} ok`)
})
