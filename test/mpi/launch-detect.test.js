'use strict'
// lib/mpi/launch.ts and lib/mpi/hostlist.ts: which launcher a process was started by, from
// explicit options and each launcher's variables (env://, Open MPI, MPICH Hydra, Slurm), the
// store's address, and the errors (ERR_INVALID_ARG_TYPE, ERR_OUT_OF_RANGE, ERR_MPI_LAUNCH).
// Pure functions on a given env: no processes here (the real launchers: launch-openmpi,
// slurm-srun, mpirun-*).
const t = require('tap')
const fs = require('fs')
const os = require('os')
const path = require('path')
const { detectLaunch, storePathFor, storeDir, portForJob, ensurePrivateDir, describeVars, MAX_SOCKET_PATH } = require('../../dist/mpi/launch.js')
const { expandHostlist, firstHost, expandTasksPerNode } = require('../../dist/mpi/hostlist.js')

const code = c => ({ code: c })

t.test('singleton without any launcher variable', async t => {
  const info = detectLaunch(undefined, {})
  t.match(info, { rank: 0, size: 1, localRank: 0, localSize: 1, launcher: 'singleton', jobId: '', store: null })
  t.ok(info.varsRead.includes('RANK') && info.varsRead.includes('OMPI_COMM_WORLD_RANK') && info.varsRead.includes('SLURM_PROCID'))
  t.match(detectLaunch({ timeoutMs: 5 }, {}), { launcher: 'singleton' })
})

t.test('explicit options win over every launcher', async t => {
  const env = { RANK: '3', WORLD_SIZE: '4', MASTER_ADDR: '10.0.0.1', MASTER_PORT: '29500', OMPI_COMM_WORLD_RANK: '1', OMPI_COMM_WORLD_SIZE: '2' }
  const info = detectLaunch({ rank: 1, size: 2, masterAddr: '127.0.0.1', masterPort: 4000 }, env)
  t.match(info, { rank: 1, size: 2, launcher: 'options', store: { host: '127.0.0.1', port: 4000 }, localKnown: false })
  t.match(detectLaunch({ rank: 1, size: 3, localRank: 0, localSize: 2, storePath: '/tmp/x.sock' }, {}),
    { rank: 1, size: 3, localRank: 0, localSize: 2, store: { path: '/tmp/x.sock' }, localKnown: true })
  // Options' store address missing: env's MASTER_* serve.
  t.match(detectLaunch({ rank: 0, size: 2 }, { MASTER_ADDR: 'h', MASTER_PORT: '5' }), { store: { host: 'h', port: 5 } })
  t.match(detectLaunch({ rank: 0, size: 1 }, {}), { store: null, localKnown: true })
  t.throws(() => detectLaunch({ rank: 0, size: 2 }, {}), code('ERR_MPI_LAUNCH'))
})

t.test('option validation: types and ranges', async t => {
  t.throws(() => detectLaunch('x', {}), code('ERR_INVALID_ARG_TYPE'))
  t.throws(() => detectLaunch({ rank: '1', size: 2 }, {}), code('ERR_INVALID_ARG_TYPE'))
  t.throws(() => detectLaunch({ rank: 1 }, {}), code('ERR_INVALID_ARG_TYPE'))
  t.throws(() => detectLaunch({ size: 2 }, {}), code('ERR_INVALID_ARG_TYPE'))
  t.throws(() => detectLaunch({ rank: 2, size: 2, masterAddr: 'h', masterPort: 1 }, {}), code('ERR_OUT_OF_RANGE'))
  t.throws(() => detectLaunch({ rank: -1, size: 2 }, {}), code('ERR_OUT_OF_RANGE'))
  t.throws(() => detectLaunch({ rank: 0.5, size: 2 }, {}), code('ERR_OUT_OF_RANGE'))
  t.throws(() => detectLaunch({ rank: 0, size: 0 }, {}), code('ERR_OUT_OF_RANGE'))
  t.throws(() => detectLaunch({ masterPort: 70000 }, {}), code('ERR_OUT_OF_RANGE'))
  t.throws(() => detectLaunch({ masterPort: '1' }, {}), code('ERR_INVALID_ARG_TYPE'))
  t.throws(() => detectLaunch({ masterAddr: 5 }, {}), code('ERR_INVALID_ARG_TYPE'))
  t.throws(() => detectLaunch({ timeoutMs: 0 }, {}), code('ERR_OUT_OF_RANGE'))
  t.throws(() => detectLaunch({ timeoutMs: 'soon' }, {}), code('ERR_INVALID_ARG_TYPE'))
  t.throws(() => detectLaunch({ transports: 'shm' }, {}), code('ERR_INVALID_ARG_TYPE'))
  t.throws(() => detectLaunch({ transports: [] }, {}), code('ERR_OUT_OF_RANGE'))
  t.throws(() => detectLaunch({ localRank: 2, localSize: 2, rank: 0, size: 4, storePath: '/x' }, {}), code('ERR_OUT_OF_RANGE'))
  t.throws(() => detectLaunch({ localRank: 0 }, {}), code('ERR_INVALID_ARG_TYPE'))
  const err = t.throws(() => detectLaunch({ rank: 'x', size: 2 }, {}))
  t.ok(err instanceof TypeError)
})

t.test('env:// (torch.distributed, fastsock mpirun)', async t => {
  const env = { RANK: '2', WORLD_SIZE: '4', LOCAL_RANK: '0', LOCAL_WORLD_SIZE: '2', MASTER_ADDR: 'node1', MASTER_PORT: '29500', TORCHELASTIC_RUN_ID: 'run7' }
  const info = detectLaunch(undefined, env)
  t.match(info, { rank: 2, size: 4, localRank: 0, localSize: 2, launcher: 'env', jobId: 'run7', store: { host: 'node1', port: 29500 }, localKnown: true })
  t.same(info.varsRead.slice(0, 4), ['RANK', 'WORLD_SIZE', 'LOCAL_RANK', 'LOCAL_WORLD_SIZE'])
  // LOCAL_* absent: provisional, derived at bootstrap.
  t.match(detectLaunch(undefined, { RANK: '1', WORLD_SIZE: '3', MASTER_ADDR: 'a', MASTER_PORT: '1' }), { localRank: 1, localSize: 3, localKnown: false })
  // A world of one needs no store.
  t.match(detectLaunch(undefined, { RANK: '0', WORLD_SIZE: '1' }), { launcher: 'env', store: null })
  t.throws(() => detectLaunch(undefined, { RANK: '1' }), code('ERR_MPI_LAUNCH'))
  t.throws(() => detectLaunch(undefined, { WORLD_SIZE: '2' }), code('ERR_MPI_LAUNCH'))
  t.throws(() => detectLaunch(undefined, { RANK: '2', WORLD_SIZE: '2', MASTER_ADDR: 'a', MASTER_PORT: '1' }), code('ERR_MPI_LAUNCH'))
  t.throws(() => detectLaunch(undefined, { RANK: 'one', WORLD_SIZE: '2' }), /RANK=one/)
  t.throws(() => detectLaunch(undefined, { RANK: '0', WORLD_SIZE: '2' }), /MASTER_ADDR/)
  t.throws(() => detectLaunch(undefined, { RANK: '0', WORLD_SIZE: '2', MASTER_ADDR: 'a' }), /MASTER_PORT/)
  t.throws(() => detectLaunch(undefined, { RANK: '0', WORLD_SIZE: '2', MASTER_ADDR: 'a', MASTER_PORT: '99999' }), code('ERR_MPI_LAUNCH'))
  t.throws(() => detectLaunch(undefined, { RANK: '0', WORLD_SIZE: '2', MASTER_ADDR: 'a', MASTER_PORT: '1', LOCAL_WORLD_SIZE: '2' }), code('ERR_MPI_LAUNCH'))
  t.throws(() => detectLaunch(undefined, { RANK: '1', WORLD_SIZE: '4', MASTER_ADDR: 'a', MASTER_PORT: '1', LOCAL_RANK: '2', LOCAL_WORLD_SIZE: '2' }), code('ERR_MPI_LAUNCH'))
})

t.test("Open MPI's mpirun (the variables 4.1 sets here)", async t => {
  const env = {
    OMPI_COMM_WORLD_RANK: '1', OMPI_COMM_WORLD_SIZE: '3', OMPI_COMM_WORLD_LOCAL_RANK: '1', OMPI_COMM_WORLD_LOCAL_SIZE: '3',
    PMIX_NAMESPACE: '2022965249', OMPI_MCA_ess_base_jobid: '2022965249', OMPI_MCA_orte_num_nodes: '1', TMPDIR: '/tmp'
  }
  const info = detectLaunch(undefined, env)
  t.match(info, { rank: 1, size: 3, localRank: 1, localSize: 3, launcher: 'openmpi', jobId: '2022965249', localKnown: true })
  t.equal(info.store.path, storePathFor('openmpi:2022965249', { TMPDIR: '/tmp' }))
  t.match(info.store.path, /^\/tmp\/fastsock-mpi-\d+\/job-[0-9a-f]{16}\.sock$/)
  // The same job id gives the same path on every rank; another job another path.
  t.equal(detectLaunch(undefined, { ...env, OMPI_COMM_WORLD_RANK: '0', OMPI_COMM_WORLD_LOCAL_RANK: '0' }).store.path, info.store.path)
  t.not(detectLaunch(undefined, { ...env, PMIX_NAMESPACE: 'other' }).store.path, info.store.path)
  // Older variable for the job id.
  const { PMIX_NAMESPACE, OMPI_MCA_ess_base_jobid, ...noNs } = env
  t.match(detectLaunch(undefined, { ...noNs, OMPI_MCA_orte_ess_jobid: '77' }), { jobId: '77' })
  t.throws(() => detectLaunch(undefined, noNs), /job id/)
  // MASTER_* wins over the local path.
  t.match(detectLaunch(undefined, { ...env, MASTER_ADDR: 'h', MASTER_PORT: '9' }), { store: { host: 'h', port: 9 } })
  // Several hosts without MASTER_ADDR: error naming the fix.
  t.throws(() => detectLaunch(undefined, { ...env, OMPI_COMM_WORLD_LOCAL_SIZE: '2', OMPI_COMM_WORLD_LOCAL_RANK: '0' }), /MASTER_ADDR and MASTER_PORT/)
  t.throws(() => detectLaunch(undefined, { OMPI_COMM_WORLD_RANK: '0' }), code('ERR_MPI_LAUNCH'))
  t.throws(() => detectLaunch(undefined, { ...env, OMPI_COMM_WORLD_RANK: '3' }), code('ERR_MPI_LAUNCH'))
  t.match(detectLaunch(undefined, { OMPI_COMM_WORLD_RANK: '0', OMPI_COMM_WORLD_SIZE: '1' }), { launcher: 'openmpi', store: null })
})

t.test("MPICH Hydra's mpiexec", async t => {
  const env = { PMI_RANK: '0', PMI_SIZE: '2', MPI_LOCALRANKID: '0', MPI_LOCALNRANKS: '2', PMI_FD: '5' }
  const info = detectLaunch(undefined, env)
  t.match(info, { rank: 0, size: 2, localRank: 0, localSize: 2, launcher: 'hydra', jobId: `proxy-${process.ppid}` })
  t.ok('path' in info.store)
  t.match(detectLaunch(undefined, { ...env, PMI_KVSNAME: 'kvs_99_0' }), { jobId: 'kvs_99_0' })
  t.match(detectLaunch(undefined, { ...env, PMI_PORT: 'host:1234' }), { jobId: 'host:1234' })
  t.throws(() => detectLaunch(undefined, { PMI_RANK: '0' }), code('ERR_MPI_LAUNCH'))
  t.throws(() => detectLaunch(undefined, { ...env, MPI_LOCALNRANKS: '1' }), /span several hosts/)
  // Hydra inside a Slurm allocation (its proxies are srun tasks): Hydra's variables win.
  t.match(detectLaunch(undefined, { ...env, SLURM_STEP_ID: '0', SLURM_PROCID: '0', SLURM_NTASKS: '1' }), { launcher: 'hydra' })
  // srun --mpi=pmi2 sets PMI_RANK but no MPI_LOCALRANKID: Slurm's variables win.
  t.match(detectLaunch(undefined, { PMI_RANK: '1', PMI_SIZE: '2', SLURM_STEP_ID: '0', SLURM_PROCID: '1', SLURM_STEP_NUM_TASKS: '2', SLURM_STEP_NODELIST: 'n1' }), { launcher: 'slurm' })
})

t.test("Slurm's srun", async t => {
  const env = {
    SLURM_JOB_ID: '41', SLURM_STEP_ID: '0', SLURM_PROCID: '3', SLURM_NTASKS: '4', SLURM_STEP_NUM_TASKS: '4',
    SLURM_LOCALID: '1', SLURM_NODEID: '1', SLURM_STEP_TASKS_PER_NODE: '2(x2)', SLURM_STEP_NODELIST: 'node[01-02]'
  }
  const info = detectLaunch(undefined, env)
  t.match(info, { rank: 3, size: 4, localRank: 1, localSize: 2, launcher: 'slurm', jobId: '41.0', localKnown: true })
  t.same(info.store, { host: 'node01', port: portForJob('41.0') })
  t.ok(info.store.port >= 20000 && info.store.port < 30000)
  t.not(portForJob('41.0'), portForJob('41.1'))
  t.match(detectLaunch(undefined, { ...env, SLURM_STEP_RESV_PORTS: '12000-12003' }), { store: { port: 12000 } })
  t.match(detectLaunch(undefined, { ...env, MASTER_ADDR: 'x', MASTER_PORT: '7' }), { store: { host: 'x', port: 7 } })
  t.match(detectLaunch(undefined, { ...env, SLURM_STEP_NODELIST: 'gpu[7-9],cpu1' }), { store: { host: 'gpu7' } })
  t.match(detectLaunch(undefined, { ...env, SLURM_STEP_TASKS_PER_NODE: '3,1', SLURM_NODEID: '0', SLURM_LOCALID: '2', SLURM_PROCID: '2' }), { localRank: 2, localSize: 3 })
  // Every task on one node: the store is a UNIX socket in the user's private directory (no port
  // another user could take first), named after the job and step.
  const oneNode = { ...env, SLURM_STEP_TASKS_PER_NODE: '4', SLURM_NODEID: '0', SLURM_STEP_NODELIST: 'node01', SLURM_STEP_RESV_PORTS: '12000-12003' }
  t.same(detectLaunch(undefined, oneNode).store, { path: storePathFor('slurm:41.0', {}) })
  t.not(detectLaunch(undefined, { ...oneNode, SLURM_STEP_ID: '1' }).store.path, storePathFor('slurm:41.0', {}), 'another step, another socket')
  t.match(detectLaunch(undefined, { ...oneNode, TMPDIR: '/var/tmp' }).store, { path: /^\/var\/tmp\/fastsock-mpi-\d+\// })
  t.match(detectLaunch(undefined, { ...oneNode, MASTER_ADDR: 'x', MASTER_PORT: '7' }), { store: { host: 'x', port: 7 } })
  // An sbatch script's own shell (no SLURM_STEP_ID) is no rank.
  const { SLURM_STEP_ID, ...batch } = env
  t.match(detectLaunch(undefined, batch), { launcher: 'singleton' })
  // Inconsistent or malformed.
  t.throws(() => detectLaunch(undefined, { ...env, SLURM_PROCID: '4' }), code('ERR_MPI_LAUNCH'))
  t.throws(() => detectLaunch(undefined, { ...env, SLURM_STEP_NODELIST: 'node[01-' }), code('ERR_MPI_LAUNCH'))
  t.throws(() => detectLaunch(undefined, { ...env, SLURM_NODEID: '5' }), code('ERR_MPI_LAUNCH'))
  const { SLURM_STEP_NUM_TASKS, SLURM_NTASKS, ...noSize } = env
  t.throws(() => detectLaunch(undefined, noSize), /SLURM_NTASKS/)
  const { SLURM_STEP_NODELIST, ...noList } = env
  t.throws(() => detectLaunch(undefined, noList), /node list/)
  t.match(detectLaunch(undefined, { ...noList, SLURM_JOB_NODELIST: 'a,b' }), { store: { host: 'a' } })
})

t.test('Slurm host lists and task counts', async t => {
  t.same(expandHostlist('node[01-03,7],gpu5'), ['node01', 'node02', 'node03', 'node7', 'gpu5'])
  t.same(expandHostlist('n[008-010]'), ['n008', 'n009', 'n010'])
  t.same(expandHostlist('r[1-2]n[1-2]'), ['r1n1', 'r1n2', 'r2n1', 'r2n2'])
  t.same(expandHostlist('a,b-c,d[1]e'), ['a', 'b-c', 'd1e'])
  t.same(expandHostlist(''), [])
  t.same(expandHostlist('vm'), ['vm'])
  t.equal(firstHost('node[01-03,7],gpu5'), 'node01')
  t.equal(firstHost('rack[3-4]n[07,9]'), 'rack3n07')
  t.equal(firstHost(''), undefined)
  for (const bad of ['n[1-', 'n]1[', 'n[a-b]', 'n[3-1]', 'n[[1]]', 'n[1-99999999]']) {
    t.throws(() => expandHostlist(bad), code('ERR_MPI_LAUNCH'), bad)
  }
  t.same(expandTasksPerNode('2(x3),1'), [2, 2, 2, 1])
  t.same(expandTasksPerNode('4'), [4])
  t.throws(() => expandTasksPerNode('2(3)'), code('ERR_MPI_LAUNCH'))
})

t.test('store socket path: length limit, private directory', async t => {
  const long = '/tmp/' + 'x'.repeat(100)
  t.equal(storeDir({ TMPDIR: long }), `/tmp/fastsock-mpi-${process.getuid()}`)
  t.ok(Buffer.byteLength(storePathFor('j', { TMPDIR: long })) <= MAX_SOCKET_PATH)
  t.equal(storeDir({ TMPDIR: '/var/tmp/' }), `/var/tmp/fastsock-mpi-${process.getuid()}`)
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'fsmpi-dir-'))
  t.teardown(() => fs.rmSync(base, { recursive: true, force: true }))
  const dir = path.join(base, 'priv')
  t.equal(ensurePrivateDir(dir, false), false, 'check only: absent')
  t.equal(ensurePrivateDir(dir), true)
  t.equal(fs.statSync(dir).mode & 0o777, 0o700)
  fs.chmodSync(dir, 0o755)
  t.throws(() => ensurePrivateDir(dir, false), code('ERR_MPI_LAUNCH'), 'a client refuses a group/world-readable directory')
  ensurePrivateDir(dir)
  t.equal(fs.statSync(dir).mode & 0o777, 0o700, 'the server tightens its own directory')
  const link = path.join(base, 'link')
  fs.symlinkSync(dir, link)
  t.throws(() => ensurePrivateDir(link), code('ERR_MPI_LAUNCH'), 'a symbolic link is refused')
})

t.test('describeVars names the variables read with their values', async t => {
  const env = { RANK: '1', WORLD_SIZE: '2', MASTER_ADDR: 'h', MASTER_PORT: '9' }
  const info = detectLaunch(undefined, env)
  const text = describeVars(info, env)
  t.match(text, /RANK=1/)
  t.match(text, /MASTER_ADDR=h/)
  t.match(text, /LOCAL_RANK unset/)
})
