'use strict'
// `fastsock npb` with its Node ranks under the other launchers, class W (the issue's longer
// check): Open MPI's mpirun, Slurm's srun on a one-node cluster this test starts and stops
// (test/helpers/slurm.js), and plain env:// variables. Each kernel of the build verifies on 2
// ranks over shm. Skipped with the reason without the binaries (a failure under CI=true).
const t = require('tap')
const path = require('path')
const { run: runCli, root, tools } = require('./helpers/cli')
const { IS_ROOT, IN_CI, need } = require(path.join(root, 'test', 'helpers', 'mpi-launchers'))
const { startCluster } = require(path.join(root, 'test', 'helpers', 'slurm'))
const registry = require(path.join(tools, 'dist', 'npb', 'kernels', 'index.js'))

const run = (args, opts) => runCli(['npb', ...args], { timeout: 300_000, ...opts })
const KERNELS = ['cg', 'ep', 'ft', 'is', 'mg'].filter((k) => registry.kernelAvailable(k))

async function check (t, launcher, env) {
  for (const name of KERNELS) {
    const res = await run([name, '--class', 'W', '--np', '2', '--impls', 'fastsock', '--launcher', launcher, '--json', '-'], env ? { env } : {})
    t.equal(res.code, 0, `${name}.W under ${launcher}: exit status 0${res.code === 0 ? '' : ` (${res.stderr.slice(-1500)})`}`)
    if (res.code !== 0) continue
    const doc = JSON.parse(res.stdout)
    t.same(doc.runs.map((r) => [r.np, r.verified, r.transport]), [[2, true, 'shm']], `${name}.W under ${launcher}: verified over shm`)
  }
}

t.test('env:// variables', async (t) => check(t, 'env'))

t.test("Open MPI's mpirun", async (t) => {
  const dep = need(t, ['mpirun'], "Open MPI's mpirun")
  if (dep.skip) return t.skip(dep.skip)
  await check(t, 'mpirun')
})

t.test("Slurm's srun", async (t) => {
  const dep = need(t, ['srun', 'salloc', 'sinfo', 'squeue', 'scancel', 'slurmctld', 'slurmd', 'munged', 'munge'], "Debian's slurm-wlm and munge")
  if (dep.skip) return t.skip(dep.skip)
  if (!IS_ROOT) {
    if (IN_CI) t.fail('CI=true but not root: slurmd needs root')
    return t.skip('starting slurmd needs root')
  }
  const cluster = await startCluster(dep.paths)
  t.teardown(async () => { await cluster.stop() })
  await check(t, 'srun', cluster.env)
})
