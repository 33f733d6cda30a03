'use strict'
// Ranks split across two network namespaces this test makes (a veth pair; addresses from the
// RFC 2544 benchmarking range 198.18.0.0/15, inside the namespaces only: no traffic leaves this
// machine, the host's own namespace is untouched). Ranks 0-2 run in namespace A (the store at
// A's address), ranks 3-4 in B, with env:// variables. Same-namespace pairs ride shm, the others
// tcp, as comm.transportOf(rank) says: fastsock finds a same-host peer through its side channel,
// whose abstract UNIX names and "is this address mine" check are both per network namespace, so
// a peer in another namespace is a remote host to it even though /dev/shm is shared.
// Needs root and iproute2 (`ip netns`); skipped with the reason otherwise (CI=true: fails).
const t = require('tap')
const path = require('path')
const { spawnSync } = require('child_process')
const { FIXTURES, IS_ROOT, IN_CI, need, run, cleanEnv } = require('../helpers/mpi-launchers')

const COMM = path.join(FIXTURES, 'launch-comm.js')

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
  const NS = { A: `fsmpi-a-${id}`, B: `fsmpi-b-${id}` }
  const DEV = { A: `fsa${id}`, B: `fsb${id}` }
  const subnet = id % 250
  const ADDR = { A: `198.18.${subnet}.1`, B: `198.18.${subnet}.2` }

  t.test('namespaces A (ranks 0-2) and B (ranks 3-4)', async t => {
    try {
      ip('netns', 'add', NS.A)
      t.teardown(() => { try { ip('netns', 'del', NS.A) } catch {} })
      ip('netns', 'add', NS.B)
      t.teardown(() => { try { ip('netns', 'del', NS.B) } catch {} })
      // Created in A with its peer in B: neither end ever exists in the host's namespace.
      ip('-n', NS.A, 'link', 'add', DEV.A, 'type', 'veth', 'peer', 'name', DEV.B, 'netns', NS.B)
      for (const s of ['A', 'B']) {
        ip('-n', NS[s], 'addr', 'add', `${ADDR[s]}/30`, 'dev', DEV[s])
        ip('-n', NS[s], 'link', 'set', DEV[s], 'up')
        ip('-n', NS[s], 'link', 'set', 'lo', 'up')
      }
      // A veth end set up is not running until its peer is up too (carrier): libuv's interface
      // list, which tells a rank its own addresses, leaves out interfaces without IFF_RUNNING:
      // a rank started before then does not find its own address (its endpoint card and the
      // side channel's "is this address mine" check go wrong).
      const until = Date.now() + 10000
      for (;;) {
        const down = ['A', 'B'].filter(s => !/\bLOWER_UP\b/.test(ip('-n', NS[s], 'link', 'show', DEV[s])))
        if (down.length === 0) break
        if (Date.now() > until) throw new Error(`veth ${down.map(s => DEV[s]).join(', ')} not running after 10 s`)
        await new Promise(resolve => setTimeout(resolve, 20))
      }
    } catch (err) {
      if (IN_CI) throw err
      t.skip(`cannot build the namespaces here: ${err.message}`)
      return
    }
    const port = 20000 + (id % 10000)
    const placement = ['A', 'A', 'A', 'B', 'B']
    // Ranks on two "hosts": the job needs a secret (docs/mpi-launch.md, "Threat model").
    const secret = require('crypto').randomBytes(32).toString('hex')
    const runs = placement.map((s, rank) => run(dep.paths.ip, ['netns', 'exec', NS[s], process.execPath, COMM], {
      env: cleanEnv({ RANK: String(rank), WORLD_SIZE: String(placement.length), MASTER_ADDR: ADDR.A, MASTER_PORT: String(port), FASTSOCK_MPI_SECRET: secret }),
      timeoutMs: 90000
    }))
    const res = await Promise.all(runs)
    res.forEach((r, rank) => t.equal(r.code, 0, `rank ${rank} exits 0\n${r.stderr}\n${r.stdout}`))
    const outs = res.map(r => r.json[0])
    outs.forEach((o, rank) => {
      t.match(o, { rank, size: 5 })
      for (const [peer, transport] of Object.entries(o.transports)) {
        const same = placement[peer] === placement[rank]
        t.equal(transport, same ? 'shm' : 'tcp', `rank ${rank} (${placement[rank]}) → rank ${peer} (${placement[peer]}): ${same ? 'shm' : 'tcp'}`)
      }
    })
    t.equal(outs[0].echoed, true, 'Float64Array 0 → 1 → 0 intact')
  })
}
