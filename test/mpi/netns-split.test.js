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
const { FIXTURES, run, cleanEnv } = require('../helpers/mpi-launchers')
const { netnsOrPlan } = require('../helpers/netns')

const COMM = path.join(FIXTURES, 'launch-comm.js')

const netns = netnsOrPlan(t)
if (netns !== null) {
  t.test('namespaces A (ranks 0-2) and B (ranks 3-4)', async t => {
    const pair = await netns.makePair(t, 'fsmpi', '198.18')
    if (pair === null) return
    const { NS, ADDR, id } = pair
    const port = 20000 + (id % 10000)
    const placement = ['A', 'A', 'A', 'B', 'B']
    // Ranks on two "hosts": the job needs a secret (docs/mpi-launch.md, "Threat model").
    const secret = require('crypto').randomBytes(32).toString('hex')
    const runs = placement.map((s, rank) => run(netns.ipPath, ['netns', 'exec', NS[s], process.execPath, COMM], {
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
