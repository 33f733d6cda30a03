'use strict'
// fastsock/mpi under Open MPI's real `mpirun` (Debian's openmpi-bin): P = 1..5 ranks find
// their rank, size and local rank from OMPI_COMM_WORLD_*, meet through the store on a UNIX
// socket keyed by PMIX_NAMESPACE (no MASTER_ADDR), send a Float64Array 0 → 1 → 0 over shm; the
// same with MASTER_ADDR/MASTER_PORT passed with -x; mpi.abort(5) ends the job with 5. As root,
// mpirun needs --allow-run-as-root; --oversubscribe for more ranks than cores. No OMPI_MCA_*
// variable is needed: the ranks are Node processes that never call MPI_Init.
const t = require('tap')
const fs = require('fs')
const path = require('path')
const { FIXTURES, IS_ROOT, need, run, capture, byRank, cleanEnv } = require('../helpers/mpi-launchers')
const { freePort } = require('../../dist/internal.js')

const COMM = path.join(FIXTURES, 'launch-comm.js')
const BOOT = path.join(FIXTURES, 'launch-bootstrap.js')

const dep = need(t, ['mpirun'])
const version = dep.paths ? capture(dep.paths.mpirun, ['--version']) : null
const isOpenMpi = version !== null && /Open MPI|OpenRTE/.test(version)
if (dep.skip) t.plan(0, dep.skip)
else if (!isOpenMpi) t.plan(0, `mpirun is not Open MPI's (${(version || '').split('\n')[0]}); the Open MPI test needs openmpi-bin`)
else {
  const base = [...(IS_ROOT ? ['--allow-run-as-root'] : []), '--oversubscribe']
  const mpirun = (np, args, opts) => run(dep.paths.mpirun, [...base, '-np', String(np), ...args], opts)

  for (const np of [1, 2, 3, 4, 5]) {
    t.test(`mpirun -np ${np} node launch-comm.js`, async t => {
      const r = await mpirun(np, [process.execPath, COMM], { timeoutMs: 90000 })
      t.equal(r.code, 0, `mpirun exits 0\n${r.stderr}\n${r.stdout}`)
      const outs = byRank(r.json)
      t.equal(outs.length, np, 'one line per rank')
      outs.forEach((o, i) => {
        t.match(o, { rank: i, size: np, localRank: i, localSize: np })
        for (const [, tr] of Object.entries(o.transports)) t.equal(tr, 'shm', `rank ${i}: same-host peers ride shm`)
      })
      if (np > 1) t.equal(outs[0].echoed, true, 'Float64Array 0 → 1 → 0 intact')
    })
  }

  t.test('detection under mpirun: launcher, job id, UNIX socket store', async t => {
    const r = await mpirun(3, [process.execPath, BOOT], { timeoutMs: 60000 })
    t.equal(r.code, 0, r.stderr)
    const outs = byRank(r.json)
    t.equal(outs.length, 3)
    const jobIds = new Set(outs.map(o => o.jobId))
    t.equal(jobIds.size, 1, 'every rank sees the same job id')
    outs.forEach((o, i) => {
      t.match(o, { rank: i, size: 3, launcher: 'openmpi', got: `from ${(i + 1) % 3}` })
      t.match(o.store.path, /fastsock-mpi-\d+\/job-[0-9a-f]{16}\.sock$/)
    })
    t.notOk(fs.existsSync(outs[0].store.path), 'rank 0 removed the socket file')
  })

  t.test('mpirun -x MASTER_ADDR -x MASTER_PORT: a TCP store', async t => {
    const port = await freePort()
    const env = cleanEnv({ MASTER_ADDR: '127.0.0.1', MASTER_PORT: String(port) })
    const r = await mpirun(2, ['-x', 'MASTER_ADDR', '-x', 'MASTER_PORT', process.execPath, BOOT], { env, timeoutMs: 60000 })
    t.equal(r.code, 0, r.stderr)
    byRank(r.json).forEach(o => t.same(o.store, { host: '127.0.0.1', port }))
  })

  t.test('mpi.abort(5) in one rank ends the job with 5', async t => {
    const prog = `const mpi = require(${JSON.stringify(path.join(__dirname, '..', '..', 'dist', 'mpi'))});
      mpi.init().then(async comm => { if (comm.rank === 1) await mpi.abort(5); await new Promise(r => setTimeout(r, 60000)) })`
    const r = await mpirun(3, [process.execPath, '-e', prog], { timeoutMs: 60000 })
    t.equal(r.code, 5, r.stderr)
    t.ok(r.ms < 40000, `ended in ${r.ms} ms`)
  })
}
