'use strict'
// fastsock/mpi under Slurm's real `srun` on a one-node cluster this test starts and stops
// (test/helpers/slurm.js: its own munged, slurmctld, slurmd under a temp directory). P = 1..5
// ranks (srun --overcommit: more ranks than CPUs) find rank, size and local rank from SLURM_*,
// the store at the first host of SLURM_STEP_NODELIST on the step's reserved port; a Float64Array
// goes 0 → 1 → 0 over shm. The allocation's own shell (salloc, no SLURM_STEP_ID) is a singleton;
// mpi.abort(5) ends the step with 5. The job's secret comes from munge (lib/mpi/munge.ts): one
// per job, shared by every rank; ranks made to believe they are on separate nodes (what a
// multi-node step looks like to them) still start with it; when munged cannot be found, one
// node runs without a secret and separate nodes refuse to start, saying how to give one. A process of nobody attacking a running step (floods,
// forged handshakes) does not stop it, nor does one that takes the store's derived ports, or the
// user's private store directory, first. Needs root; skipped (with the reason) without the binaries.
const t = require('tap')
const path = require('path')
const { FIXTURES, IS_ROOT, IN_CI, need, run, byRank } = require('../helpers/mpi-launchers')
const { startCluster } = require('../helpers/slurm')
const { VICTIM, underAttack, checkUnharmed } = require('../helpers/intruder')

const COMM = path.join(FIXTURES, 'launch-comm.js')
const BOOT = path.join(FIXTURES, 'launch-bootstrap.js')
const BINS = ['srun', 'salloc', 'sinfo', 'squeue', 'scancel', 'slurmctld', 'slurmd', 'munged', 'munge']

const dep = need(t, BINS, "Debian's slurm-wlm and munge")
if (dep.skip) t.plan(0, dep.skip)
else if (!IS_ROOT) {
  if (IN_CI) t.fail('CI=true but not root: slurmd needs root')
  t.plan(0, 'starting slurmd needs root')
} else {
  let cluster = null
  t.before(async () => { cluster = await startCluster(dep.paths) })
  t.teardown(async () => { if (cluster) await cluster.stop() })

  const srun = (args, opts = {}) => run(dep.paths.srun, ['--overcommit', '-N1', ...args], { env: cluster.env, timeoutMs: 90000, ...opts })

  for (const np of [1, 2, 3, 4, 5]) {
    t.test(`srun --overcommit -n ${np} node launch-comm.js`, async t => {
      const r = await srun(['-n', String(np), process.execPath, COMM])
      t.equal(r.code, 0, `srun exits 0\n${r.stderr}\n${r.stdout}\n${r.code === 0 ? '' : cluster.logs()}`)
      const outs = byRank(r.json)
      t.equal(outs.length, np, 'one line per rank')
      outs.forEach((o, i) => {
        t.match(o, { rank: i, size: np, localRank: i, localSize: np })
        for (const tr of Object.values(o.transports)) t.equal(tr, 'shm', `rank ${i}: same-node peers ride shm`)
      })
      if (np > 1) t.equal(outs[0].echoed, true, 'Float64Array 0 → 1 → 0 intact')
    })
  }

  // Each rank sees a node of its own: SLURM_NODEID = its rank, one task per node.
  const apart = (extra = '', prog = [BOOT]) => ['sh', '-c', `SLURM_STEP_TASKS_PER_NODE="1(x$SLURM_STEP_NUM_TASKS)" SLURM_NODEID=$SLURM_PROCID SLURM_LOCALID=0 ${extra} exec "$0" "$@"`, process.execPath, ...prog]

  t.test('detection under srun: launcher, job.step id; the store a UNIX socket on one node, else on the first node', async t => {
    const r = await srun(['-n', '3', process.execPath, BOOT])
    t.equal(r.code, 0, r.stderr)
    const outs = byRank(r.json)
    t.equal(outs.length, 3)
    t.equal(new Set(outs.map(o => o.jobId)).size, 1, 'one job id')
    t.match(outs[0].jobId, /^\d+\.\d+$/)
    outs.forEach((o, i) => {
      t.match(o, { rank: i, size: 3, launcher: 'slurm', localRank: i, localSize: 3, got: `from ${(i + 1) % 3}` })
      t.match(o.store, { path: /fastsock-mpi-\d+\/job-[0-9a-f]{16}\.sock$/ }, 'every task on one node: a UNIX socket in the private directory')
    })
    const a = await srun(['-n', '3', ...apart()])
    t.equal(a.code, 0, a.stderr)
    byRank(a.json).forEach(o => {
      t.equal(o.store.host, cluster.node, 'the first host of SLURM_STEP_NODELIST')
      t.ok(o.store.port >= 12000 && o.store.port <= 12999, `the step's reserved port (${o.store.port})`)
    })
  })

  t.test('the secret comes from munge: one per job, also for ranks on separate nodes', async t => {
    const one = await srun(['-n', '3', process.execPath, BOOT])
    t.equal(one.code, 0, one.stderr)
    const a = byRank(one.json)
    t.equal(a.length, 3)
    t.match(a[0].secret, /^[0-9a-f]{16}$/, 'one host: a secret all the same')
    t.equal(new Set(a.map(o => o.secret)).size, 1, 'every rank has the same one')
    const two = await srun(['-n', '3', process.execPath, BOOT])
    t.not(byRank(two.json)[0].secret, a[0].secret, 'another job, another secret')
    const r = await srun(['-n', '3', ...apart()])
    t.equal(r.code, 0, `${r.stderr}\n${r.stdout}`)
    const outs = byRank(r.json)
    t.equal(outs.length, 3)
    outs.forEach((o, i) => t.match(o, { rank: i, size: 3, localRank: 0, localSize: 1, launcher: 'slurm', got: `from ${(i + 1) % 3}` }))
    t.match(outs[0].secret, /^[0-9a-f]{16}$/)
    t.equal(new Set(outs.map(o => o.secret)).size, 1, 'sealed by rank 0, opened by each')
  })

  t.test('without munged: one node runs without a secret, separate nodes refuse, saying how to give one', async t => {
    // The ranks read a slurm.conf whose munged socket does not exist (whatever runs on this host).
    const conf = path.join(cluster.dir, 'nomunge.conf')
    require('fs').writeFileSync(conf, 'AuthType=auth/munge\nAuthInfo=socket=/nonexistent/munge.socket.2\n')
    const one = await srun(['-n', '2', 'sh', '-c', `SLURM_CONF=${conf} exec "$0" "$@"`, process.execPath, BOOT])
    t.equal(one.code, 0, one.stderr)
    t.match(byRank(one.json), [{ rank: 0, secret: null, got: 'from 1' }, { rank: 1, secret: null, got: 'from 0' }], 'one node: loopback and uid checks, no secret')
    const r = await srun(['-n', '2', ...apart(`SLURM_CONF=${conf}`)])
    t.not(r.code, 0)
    const errs = r.json.filter(o => o.error)
    t.ok(errs.length > 0, r.stdout)
    for (const e of errs) {
      t.equal(e.error, 'ERR_MPI_LAUNCH')
      t.match(e.message, /span several hosts.*FASTSOCK_MPI_SECRET.*munged/)
    }
  })

  t.test('another user (nobody) flooding and forging against a running step cannot stop it (test/helpers/intruder.js)', async t => {
    const r = await underAttack(dep.paths.srun, ['--overcommit', '-N1', '-n', '3', process.execPath, VICTIM], { env: cluster.env })
    checkUnharmed(t, r, 3)
  })

  // Another user (nobody) takes the port a step's store would use before the step starts: the
  // port derived from job.step (the steps run without their reserved ports, which the test
  // cannot know ahead). A driver inside salloc learns the job id, starts the squatter on the
  // derived ports of steps 0 and 1, then runs step 0 on one node (its store a UNIX socket: the
  // port is not even used) and step 1 with the tasks as on separate nodes (a TCP store with
  // MUNGE: rank 0 moves to the next candidate port, the ranks take the store whose credential
  // opens and whose proof names its port). Each rank runs an allreduce and a ring, checked. The
  // squatter also holds the 7 other candidate ports the public derivation gives steps 1 and 2
  // (storeCandidates without a key: MUNGE's secret is learned only in the store's handshake):
  // step 1, whose ranks share a temporary HOME, takes ports from the per-user key there
  // (lib/mpi/auth.ts candidateKey) and runs; step 2, with a HOME that cannot hold the key, is
  // stopped (ERR_MPI_LAUNCH), as every such step was before the per-user key.
  t.test('a squatter of nobody on the derived store ports does not stop the steps', async t => {
    const home = require('fs').mkdtempSync(path.join(require('os').tmpdir(), 'fsq-home-'))
    t.teardown(() => require('fs').rmSync(home, { recursive: true, force: true }))
    const RANK = require('../helpers/store-squatter').ringRank({ n: 1024, timeoutMs: 30000, withJob: true })
    const DRIVER = `
const { spawnSync } = require('child_process')
const { portForJob, storeCandidates } = require(${JSON.stringify(path.join(__dirname, '..', '..', 'dist', 'mpi', 'launch'))})
const { firstHost } = require(${JSON.stringify(path.join(__dirname, '..', '..', 'dist', 'mpi', 'hostlist'))})
const { squatStore } = require(${JSON.stringify(path.join(__dirname, '..', 'helpers', 'store-squatter'))})
const [srun, rankProg, apartSh, refusedSh] = JSON.parse(process.argv[1])
;(async () => {
  const id = process.env.SLURM_JOB_ID
  const ports = [portForJob(id + '.0'), portForJob(id + '.1'), portForJob(id + '.2')]
  const host = firstHost(process.env.SLURM_JOB_NODELIST)
  const publicPorts = n => storeCandidates({ host, port: ports[n] }, { jobId: id + '.' + n, key: null, oneHost: false }).slice(1).map(c => c.port)
  const sq = await squatStore([...new Set([...ports, ...publicPorts(1), ...publicPorts(2)])])
  const step = args => {
    const r = spawnSync(srun, ['--overcommit', '-N1', '-n', '3', ...args], { encoding: 'utf8', timeout: 60000 })
    return { code: r.status, out: r.stdout, err: r.stderr }
  }
  const noResv = 'unset SLURM_STEP_RESV_PORTS; '
  const one = step(['sh', '-c', noResv + 'exec "$0" "$@"', process.execPath, '-e', rankProg])
  const apart = step(['sh', '-c', noResv + apartSh, process.execPath, '-e', rankProg])
  const refused = step(['sh', '-c', noResv + refusedSh, process.execPath, '-e', rankProg])
  const seen = await sq.stop()
  console.log(JSON.stringify({ driver: true, ports, public: publicPorts(2), one, apart, refused, seen }))
})().catch(err => { console.log(JSON.stringify({ driver: true, error: String(err.stack) })); process.exit(3) })
`
    const apartSh = apart(`HOME=${home}`)[2]
    const refusedSh = apart(`HOME=${path.join(home, 'none')}`)[2]
    const r = await run(dep.paths.salloc, ['-n', '3', '--overcommit', process.execPath, '-e', DRIVER, JSON.stringify([dep.paths.srun, RANK, apartSh, refusedSh])], { env: cluster.env, timeoutMs: 150000 })
    const d = r.json.find(o => o.driver)
    t.ok(d !== undefined && d.error === undefined, `the driver ran\n${r.stderr}\n${r.stdout}`)
    if (d === undefined || d.error !== undefined) return
    for (const [name, step, n] of [['one node', d.one, 0], ['separate nodes', d.apart, 1]]) {
      const lines = step.out.split('\n').filter(l => l.startsWith('{')).map(l => JSON.parse(l))
      t.equal(step.code, 0, `${name}: the step exits 0\n${step.err}\n${step.out}\n${step.code === 0 ? '' : cluster.logs()}`)
      t.same(lines.filter(o => o.ok).map(o => o.rank).sort(), [0, 1, 2], `${name}: every rank checked its allreduce and ring`)
      t.ok(lines.every(o => o.job === undefined || o.job.endsWith('.' + n)), `${name}: step ${n}, whose derived port (${d.ports[n]}) nobody held`)
    }
    t.ok(d.seen.connections > 0, `the separate-node ranks met the squatter and went on (${d.seen.connections} connections)`)
    t.equal(require('fs').statSync(path.join(home, '.fastsock', 'mpi-candidates.key')).mode & 0o777, 0o600, 'step 1 made the per-user key (mode 600)')
    const refused = d.refused.out.split('\n').filter(l => l.startsWith('{')).map(l => JSON.parse(l))
    t.not(d.refused.code, 0, 'without the per-user key, the squatter on all 8 public candidates stops step 2')
    t.ok(refused.some(o => o.error === 'ERR_MPI_LAUNCH' && d.public.every(p => o.message.includes(String(p)))), `rank 0 names the 7 public ports ${d.public.join(', ')}: ${d.refused.out}`)
  })

  t.test('a one-node step whose private store directory nobody made first (TMPDIR) still runs (its store moves to a loopback port)', async t => {
    const { squatDir } = require('../helpers/store-squatter')
    const d = squatDir()
    t.teardown(d.cleanup)
    const prog = `const mpi = require(${JSON.stringify(path.join(__dirname, '..', '..', 'dist', 'mpi'))})
      mpi.init().then(async comm => {
        const sum = new Float64Array(1)
        await comm.allreduce(new Float64Array([comm.rank + 1]), sum, mpi.SUM)
        console.log(JSON.stringify({ rank: comm.rank, ok: sum[0] === comm.size * (comm.size + 1) / 2 }))
        await mpi.finalize()
      }).catch(err => { console.log(JSON.stringify({ error: err.code, message: err.message })); process.exit(3) })`
    const r = await srun(['-n', '3', process.execPath, '-e', prog], { env: { ...cluster.env, TMPDIR: d.tmp } })
    t.equal(r.code, 0, `${r.stderr}\n${r.stdout}`)
    t.same(byRank(r.json).map(o => o.ok), [true, true, true], 'every rank checked its allreduce')
  })

  t.test("the allocation's own shell is no rank (salloc: no SLURM_STEP_ID)", async t => {
    const r = await run(dep.paths.salloc, ['-n', '2', '--overcommit', process.execPath, BOOT], { env: cluster.env, timeoutMs: 60000 })
    t.equal(r.code, 0, r.stderr)
    t.match(byRank(r.json), [{ rank: 0, size: 1, launcher: 'singleton' }])
  })

  t.test('mpi.abort(5) in one rank ends the step with 5', async t => {
    const prog = `const mpi = require(${JSON.stringify(path.join(__dirname, '..', '..', 'dist', 'mpi'))});
      mpi.init().then(async comm => { if (comm.rank === 2) await mpi.abort(5); await new Promise(r => setTimeout(r, 60000)) })`
    const r = await srun(['-n', '3', process.execPath, '-e', prog])
    t.equal(r.code, 5, r.stderr)
    t.ok(r.ms < 40000, `ended in ${r.ms} ms`)
  })
}
