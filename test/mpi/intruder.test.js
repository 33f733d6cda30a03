'use strict'
// Another user cannot stop a job (issue 33): while a process of nobody, knowing what ps and
// /proc show (store address, every rank's device port, the job id), floods the store and every
// rank's listener with silent and dribbling connections and loops forged store and device
// handshakes and garbage (test/helpers/intruder.js), the ranks of a job under fastsock mpirun
// (its secret in the ranks' environment, as env:// with FASTSOCK_MPI_SECRET), env:// by hand
// without a secret (loopback and uid checks) and Open MPI's mpirun communicate and check their
// results, and the job exits 0; the store never says OK to the intruder. srun: slurm-srun.test.js.
// Needs root (the intruder runs as nobody).
const t = require('tap')
const path = require('path')
const { IS_ROOT, need, cleanEnv } = require('../helpers/mpi-launchers')
const { VICTIM, underAttack, checkUnharmed } = require('../helpers/intruder')
const { freePort } = require('../../dist/cli/mpirun')

const CLI = path.join(__dirname, '..', '..', 'dist', 'cli', 'main.js')

if (!IS_ROOT) {
  t.plan(0, 'needs root to run the intruder as nobody')
} else {
  t.test('fastsock mpirun -n 3', async t => {
    const r = await underAttack(process.execPath, [CLI, 'mpirun', '-n', '3', process.execPath, VICTIM], { env: cleanEnv() })
    checkUnharmed(t, r, 3)
  })

  t.test('env:// by hand, no secret: loopback and uid checks', async t => {
    const port = await freePort()
    const env = cleanEnv({ WORLD_SIZE: '2', LOCAL_WORLD_SIZE: '2', MASTER_ADDR: '127.0.0.1', MASTER_PORT: String(port), FASTSOCK_MPI_JOB_ID: 'byhand' })
    // Two ranks by hand from one shell: rank 1 in the background, rank 0 in front; both must exit 0.
    const node = `"${process.execPath}" "${VICTIM}"`
    const r = await underAttack('sh', ['-c', `RANK=1 LOCAL_RANK=1 ${node} & RANK=0 LOCAL_RANK=0 ${node}; a=$?; wait $!; b=$?; [ $a -eq 0 ] && [ $b -eq 0 ]`], { env })
    checkUnharmed(t, r, 2)
  })

  const ompi = need(t, ['mpirun', 'ompi_info'], "Open MPI's mpirun")
  t.test("Open MPI's mpirun -np 3", { skip: ompi.skip }, async t => {
    const r = await underAttack(ompi.paths.mpirun, ['--allow-run-as-root', '--oversubscribe', '-np', '3', process.execPath, VICTIM], { env: cleanEnv() })
    const seen = checkUnharmed(t, r, 3)
    if (seen) t.ok(seen.store.connectErrors > 0 && seen.flood.opened === 3 * 300, 'the store is a UNIX socket in a mode-700 directory: not even reachable (only the devices\' floods connected)')
  })
}
