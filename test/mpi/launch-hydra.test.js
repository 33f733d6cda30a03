'use strict'
// fastsock/mpi under MPICH's Hydra (`mpiexec.hydra`, Debian's mpich; it coexists with Open MPI:
// mpirun and mpicc keep resolving to Open MPI, whose alternatives have the higher priority).
// Ranks read PMI_RANK, PMI_SIZE, MPI_LOCALRANKID, MPI_LOCALNRANKS; Hydra exports no job id, so
// the store's UNIX socket is keyed by the pid of the hydra_pmi_proxy every local rank descends
// from (also through a wrapper script). P = 1, 2, 5; mpi.abort(5) ends the job with 5.
const t = require('tap')
const fs = require('fs')
const os = require('os')
const path = require('path')
const { FIXTURES, need, run, byRank } = require('../helpers/mpi-launchers')

const COMM = path.join(FIXTURES, 'launch-comm.js')
const BOOT = path.join(FIXTURES, 'launch-bootstrap.js')

const dep = need(t, ['mpiexec.hydra'], "Debian's mpich")
if (dep.skip) t.plan(0, dep.skip)
else {
  const hydra = (np, args, opts) => run(dep.paths['mpiexec.hydra'], ['-n', String(np), ...args], { timeoutMs: 90000, ...opts })

  for (const np of [1, 2, 5]) {
    t.test(`mpiexec.hydra -n ${np} node launch-comm.js`, async t => {
      const r = await hydra(np, [process.execPath, COMM])
      t.equal(r.code, 0, `exits 0\n${r.stderr}\n${r.stdout}`)
      const outs = byRank(r.json)
      t.equal(outs.length, np)
      outs.forEach((o, i) => {
        t.match(o, { rank: i, size: np, localRank: i, localSize: np })
        for (const tr of Object.values(o.transports)) t.equal(tr, 'shm')
      })
      if (np > 1) t.equal(outs[0].echoed, true, 'Float64Array 0 → 1 → 0 intact')
    })
  }

  t.test('detection under Hydra, directly and through a wrapper script', async t => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fsmpi-hydra-'))
    t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }))
    const wrapper = path.join(dir, 'wrap.sh')
    fs.writeFileSync(wrapper, `#!/bin/sh\n"${process.execPath}" "${BOOT}"\necho done\n`, { mode: 0o700 })
    for (const cmd of [[process.execPath, BOOT], [wrapper]]) {
      const r = await hydra(3, cmd)
      t.equal(r.code, 0, r.stderr)
      const outs = byRank(r.json)
      t.equal(outs.length, 3)
      t.equal(new Set(outs.map(o => o.jobId)).size, 1, `${path.basename(cmd[cmd.length - 1])}: one job id on every rank`)
      outs.forEach((o, i) => {
        t.match(o, { rank: i, size: 3, launcher: 'hydra', jobId: /^proxy-\d+$/, got: `from ${(i + 1) % 3}` })
        t.match(o.store.path, /fastsock-mpi-\d+\/job-[0-9a-f]{16}\.sock$/)
      })
      t.notOk(fs.existsSync(outs[0].store.path), 'rank 0 removed the socket file')
    }
  })

  t.test('mpi.abort(5) in one rank ends the job with 5', async t => {
    const prog = `const mpi = require(${JSON.stringify(path.join(__dirname, '..', '..', 'dist', 'mpi'))});
      mpi.init().then(async comm => { if (comm.rank === 0) await mpi.abort(5); await new Promise(r => setTimeout(r, 60000)) })`
    const r = await hydra(3, [process.execPath, '-e', prog])
    t.equal(r.code, 5, r.stderr)
    t.ok(r.ms < 40000, `ended in ${r.ms} ms`)
  })
}
