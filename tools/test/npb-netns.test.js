'use strict'
// NPB class W across two network namespaces (the issue's cross-host check): rank 0 in namespace
// A, rank 1 in B, joined by a veth pair this test makes (addresses from the RFC 2544 benchmarking
// range 198.18.0.0/15, inside the namespaces only; the host's namespace is untouched), started
// with env:// variables as on two hosts. fastsock's side channel is per network namespace, so
// the two ranks cannot find each other's shared memory and talk over tcp, as two machines would.
// CG (point-to-point sendrecv every step) and IS (allreduce, alltoall, alltoallv, reduce) must
// verify, and rank 0 must report tcp. Needs root and iproute2 (`ip netns`); skipped with the
// reason otherwise (a failure under CI=true). No timing assertions.
const t = require('tap')
const fs = require('fs')
const os = require('os')
const path = require('path')
const { root, tools } = require('./helpers/cli')
const { run, cleanEnv } = require(path.join(root, 'test', 'helpers', 'mpi-launchers'))
const { netnsOrPlan } = require(path.join(root, 'test', 'helpers', 'netns'))

const RANK_MAIN = path.join(tools, 'dist', 'npb', 'rank-main.js')
const KERNELS = ['cg', 'is']

const netns = netnsOrPlan(t)
if (netns !== null) {
  t.test('class W, rank 0 in namespace A and rank 1 in B, env://', async (t) => {
    const pair = await netns.makePair(t, 'fsnpb', '198.19')
    if (pair === null) return
    const { NS, ADDR, id } = pair
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fastsock-npb-netns-'))
    t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }))
    let nextPort = 21000 + (id % 9000)
    for (const kernel of KERNELS) {
      const out = path.join(dir, `${kernel}.jsonl`)
      const config = JSON.stringify({ kernel, cls: 'W', blocking: false, corrupt: false, transports: null, out })
      // Two "hosts": the job needs a secret (docs/mpi-launch.md, "Threat model").
      const secret = require('crypto').randomBytes(32).toString('hex')
      const port = nextPort++
      const ranks = ['A', 'B'].map((s, rank) => run(netns.ipPath, ['netns', 'exec', NS[s], process.execPath, RANK_MAIN], {
        env: cleanEnv({
          RANK: String(rank),
          WORLD_SIZE: '2',
          MASTER_ADDR: ADDR.A,
          MASTER_PORT: String(port),
          FASTSOCK_MPI_SECRET: secret,
          FASTSOCK_NPB_CONFIG: config
        }),
        timeoutMs: 120000
      }))
      const res = await Promise.all(ranks)
      res.forEach((r, rank) => t.equal(r.code, 0, `${kernel}.W rank ${rank} exits 0${r.code === 0 ? '' : `\n${r.stderr.slice(-1500)}`}`))
      if (res.some((r) => r.code !== 0)) continue
      t.match(res[0].stdout, / Verification {4}= {15}SUCCESSFUL/, `${kernel}.W: rank 0's report says SUCCESSFUL`)
      const lines = fs.readFileSync(out, 'utf8').trim().split('\n').map((l) => JSON.parse(l))
      t.equal(lines.length, 1, `${kernel}.W: rank 0 wrote one result`)
      t.equal(lines[0].np, 2)
      t.equal(lines[0].result.verified, true, `${kernel}.W verified across the namespaces`)
      t.equal(lines[0].transport, 'tcp', `${kernel}.W: rank 0 talked to rank 1 over tcp`)
    }
  })
}
