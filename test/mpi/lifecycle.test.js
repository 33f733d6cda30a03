'use strict'
// The job's lifecycle as MPI and mpi4py users expect (issue 33, items 1 and 2), with real
// launchers (fastsock mpirun; Open MPI's mpirun when installed) and 3 ranks of
// lifecycle-prog.js: a forgotten finalize ends the job by itself; an error caught and only logged
// ends it (the others' barrier rejects ERR_MPI_COLL_MISMATCH naming the rank); an unhandled
// rejection aborts every rank non-zero, saying which rank failed and why; the skipped last
// barrier rejects on the other ranks; a wait past the bound is reported with what the store
// knows; calls after finalize throw ERR_MPI_FINALIZED; a rank that never joins is named. Each job
// must end on its own well inside the harness's 40 s kill (a hang is a failure); the times are
// printed, not asserted.
const t = require('tap')
const path = require('path')
const { need, run, cleanEnv, IS_ROOT, capture } = require('../helpers/mpi-launchers')

const PROG = path.join(__dirname, 'lifecycle-prog.js')
const CLI = path.join(__dirname, '..', '..', 'dist', 'cli', 'main.js')
const KILL_MS = 40000

const fastsockRun = (scenario, env = {}) => run(process.execPath, [CLI, 'mpirun', '-n', '3', process.execPath, PROG, scenario], { env: cleanEnv({ FASTSOCK_MPI_WATCH_MS: '1500', ...env }), timeoutMs: KILL_MS })

const doneTimes = out => [...out.matchAll(/DONE (\d) (\d+)/g)].map(m => Number(m[2]))

t.test('fastsock mpirun: a forgotten finalize ends the job by itself', async t => {
  const r = await fastsockRun('forget')
  t.notOk(r.timedOut, 'the job ended by itself')
  t.equal(r.code, 0, r.stderr)
  t.equal(doneTimes(r.stdout).length, 3, 'every rank finished its program')
  t.comment(`job ended ${r.ms} ms after the start`)
})

t.test('fastsock mpirun: a slow message is waited for (no early finalize), with a report', async t => {
  const r = await fastsockRun('slow-recv')
  t.notOk(r.timedOut)
  t.equal(r.code, 0, r.stderr)
  t.match(r.stdout, /GOT 7/, 'rank 1 received the message sent 3 s late')
  t.match(r.stderr, /rank 1 has waited \d+ s in a receive from rank 0 \(tag 1\) on communicator 0 for rank 0: rank 0 running/, 'the wait past the bound is reported once')
})

t.test('fastsock mpirun: an awaited receive holds the event loop (it does not drain to beforeExit while waiting)', async t => {
  // Without the hold, the rank's loop had no ref'd handle while it waited (the job's connections
  // are unref'd for the forgotten-finalize case): libuv's run returned, 'beforeExit' was emitted
  // every 50 ms, and Node drained V8's background tasks each time (in Node 20 that could deadlock).
  const r = await fastsockRun('drain')
  t.notOk(r.timedOut)
  t.equal(r.code, 0, r.stderr)
  t.match(r.stdout, /DRAINS 0 GOT 9/, "no 'beforeExit' while the receive was pending")
})

t.test('fastsock mpirun: an error caught and only logged ends the job', async t => {
  const r = await fastsockRun('caught')
  t.notOk(r.timedOut, 'the job ended by itself')
  t.match(r.stderr, /boom in rank 1/)
  t.match(r.stderr, /ERR_MPI_COLL_MISMATCH/, "the others' barrier rejects")
  t.match(r.stderr, /world rank 1 entered finalize while world rank 0 waits/, 'naming the rank')
  t.comment(`job ended ${r.ms} ms after the start`)
})

t.test('fastsock mpirun: the skipped last barrier rejects on the others', async t => {
  const r = await fastsockRun('skip-barrier')
  t.notOk(r.timedOut)
  const rejected = [...r.stdout.matchAll(/REJECTED (\d) (\S+) (\d+) (.*)/g)]
  t.same(rejected.map(m => m[1]).sort(), ['0', '1'], 'ranks 0 and 1 reject')
  for (const m of rejected) {
    t.equal(m[2], 'ERR_MPI_COLL_MISMATCH')
    t.match(m[4], /collective #1 of communicator 0: world rank 2 entered finalize/)
  }
  const skipper = Number(/DONE 2 (\d+)/.exec(r.stdout)?.[1])
  t.comment(`rejected ${rejected.map(m => Number(m[3]) - skipper).join(', ')} ms after rank 2 finalized`)
  t.match(r.stderr, /rank 2 has waited \d+ s in finalize for ranks 0, 1/, "the finalizing rank's wait is reported")
})

t.test('fastsock mpirun: an unhandled rejection aborts the job, naming the rank', async t => {
  const r = await fastsockRun('rejection')
  t.notOk(r.timedOut)
  t.not(r.code, 0, 'the job fails')
  t.match(r.stderr, /rank 2 failed \(unhandled rejection: RangeError: bad thing in rank 2\); aborting the job/)
})

t.test('fastsock mpirun: init(), world() and the communicator\'s calls after finalize throw ERR_MPI_FINALIZED', async t => {
  const r = await fastsockRun('after-finalize')
  t.equal(r.code, 0, r.stderr)
  t.equal([...r.stdout.matchAll(/AFTER ERR_MPI_FINALIZED/g)].length, 18, 'six calls (init, world, send, recv, allreduce, barrierSync) on each of 3 ranks')
  t.notMatch(r.stdout, /NO ERROR/)
})

t.test('fastsock mpirun: a rank that never calls init is named', async t => {
  const r = await fastsockRun('never-init')
  t.notOk(r.timedOut)
  t.match(r.stdout, /INIT ERR_MPI_STORE_TIMEOUT .*rank 2 never joined/)
  t.notMatch(r.stdout, /card\//, 'no store key in the message')
})

t.test('fastsock mpirun: recvObject gives the Status; sendObject of an uncloneable value has a code', async t => {
  const r = await fastsockRun('object')
  t.equal(r.code, 0, r.stderr)
  t.equal([...r.stdout.matchAll(/SEND ERR_INVALID_ARG_TYPE TypeError cause/g)].length, 3, 'every rank: TypeError ERR_INVALID_ARG_TYPE with the cause')
  t.match(r.stdout, /RECV x source=0 tag=4 count=true/, 'value and Status')
})

const dep = need(t, ['mpirun'])
const version = dep.paths ? capture(dep.paths.mpirun, ['--version']) : null
t.test("Open MPI's mpirun", { skip: dep.skip || (!/Open MPI/.test(version || '') && "mpirun is not Open MPI's") }, async t => {
  const mpirun = scenario => run(dep.paths.mpirun, [...(IS_ROOT ? ['--allow-run-as-root'] : []), '--oversubscribe', '-np', '3', process.execPath, PROG, scenario],
    { env: cleanEnv({ FASTSOCK_MPI_WATCH_MS: '1500' }), timeoutMs: KILL_MS })
  const f = await mpirun('forget')
  t.notOk(f.timedOut, 'a forgotten finalize ends the job')
  t.equal(f.code, 0, f.stderr)
  const s = await mpirun('skip-barrier')
  t.notOk(s.timedOut)
  t.equal([...s.stdout.matchAll(/REJECTED \d ERR_MPI_COLL_MISMATCH/g)].length, 2, 'the skipped barrier rejects on ranks 0 and 1')
  const u = await mpirun('rejection')
  t.not(u.code, 0)
  t.match(u.stderr, /rank 2 failed \(unhandled rejection: RangeError: bad thing in rank 2\)/)
})
