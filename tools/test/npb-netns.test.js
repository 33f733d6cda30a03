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
const { spawnSync } = require('child_process')
const { root, tools } = require('./helpers/cli')
const { IS_ROOT, IN_CI, need, run, cleanEnv } = require(path.join(root, 'test', 'helpers', 'mpi-launchers'))

const RANK_MAIN = path.join(tools, 'dist', 'npb', 'rank-main.js')
const KERNELS = ['cg', 'is']

const dep = need(t, ['ip'], 'iproute2')
if (dep.skip) t.plan(0, dep.skip)
else if (!IS_ROOT) {
  if (IN_CI) t.fail('CI=true but not root: network namespaces need root')
  t.plan(0, 'network namespaces need root')
} else {
  const ip = (...args) => {
    const r = spawnSync(dep.paths.ip, args, { encoding: 'utf8', timeout: 10000 })
    if (r.status !== 0) throw new Error(`ip ${args.join(' ')}: ${(r.stderr || r.error || '').toString().trim()}`)
    return r.stdout
  }
  const id = process.pid % 100000
  const NS = { A: `fsnpb-a-${id}`, B: `fsnpb-b-${id}` }
  const DEV = { A: `fna${id}`, B: `fnb${id}` }
  const subnet = id % 250
  const ADDR = { A: `198.19.${subnet}.1`, B: `198.19.${subnet}.2` }

  t.test('class W, rank 0 in namespace A and rank 1 in B, env://', async (t) => {
    try {
      ip('netns', 'add', NS.A)
      t.teardown(() => { try { ip('netns', 'del', NS.A) } catch {} })
      ip('netns', 'add', NS.B)
      t.teardown(() => { try { ip('netns', 'del', NS.B) } catch {} })
      // Made in A with its peer in B: neither end ever exists in the host's namespace.
      ip('-n', NS.A, 'link', 'add', DEV.A, 'type', 'veth', 'peer', 'name', DEV.B, 'netns', NS.B)
      for (const s of ['A', 'B']) {
        ip('-n', NS[s], 'addr', 'add', `${ADDR[s]}/30`, 'dev', DEV[s])
        ip('-n', NS[s], 'link', 'set', DEV[s], 'up')
        ip('-n', NS[s], 'link', 'set', 'lo', 'up')
      }
      // Wait for carrier on both ends: a rank started before then does not list its own address.
      const until = Date.now() + 10000
      for (;;) {
        const down = ['A', 'B'].filter((s) => !/\bLOWER_UP\b/.test(ip('-n', NS[s], 'link', 'show', DEV[s])))
        if (down.length === 0) break
        if (Date.now() > until) throw new Error(`veth ${down.map((s) => DEV[s]).join(', ')} not running after 10 s`)
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
    } catch (err) {
      if (IN_CI) throw err
      t.skip(`cannot build the namespaces here: ${err.message}`)
      return
    }
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fastsock-npb-netns-'))
    t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }))
    let nextPort = 21000 + (id % 9000)
    for (const kernel of KERNELS) {
      const out = path.join(dir, `${kernel}.jsonl`)
      const config = JSON.stringify({ kernel, cls: 'W', blocking: false, corrupt: false, transports: null, out })
      // Two "hosts": the job needs a secret (docs/mpi-launch.md, "Threat model").
      const secret = require('crypto').randomBytes(32).toString('hex')
      const port = nextPort++
      const ranks = ['A', 'B'].map((s, rank) => run(dep.paths.ip, ['netns', 'exec', NS[s], process.execPath, RANK_MAIN], {
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
