'use strict'
// fastsock/mpi: the object tier (sendObject/recvObject, structured clone) and transportOf
// ('shm' between ranks of one host by default, 'tcp' with init({ transports: ['tcp'] })).
const t = require('tap')
const path = require('path')
const { runScenario } = require('../helpers/mpi-spawn')

const FIXTURE = path.join(__dirname, '..', 'fixtures', 'mpi', 'p2p.js')

/** `scenario` on `np` ranks (`env` added): every rank must exit 0 having printed "ok <rank>". */
const run = (t, scenario, np, env = {}) => runScenario(t, FIXTURE, scenario, np, { env, timeoutMs: 30000 })

t.test('sendObject / recvObject, small and large (P = 1, 3)', async t => {
  await run(t, 'object', 1)
  await run(t, 'object', 3)
})

t.test("transportOf: 'shm' between local ranks by default", async t => {
  const ranks = await run(t, 'transport', 3)
  for (const r of ranks) t.match(r.stdout, new RegExp(`^ok ${r.rank} shm$`, 'm'), `rank ${r.rank} reaches its neighbour over shm`)
})

t.test("transportOf: 'tcp' with init({ transports: ['tcp'] }), and the traffic works there", async t => {
  const ranks = await run(t, 'transport', 2, { P2P_TRANSPORTS: 'tcp' })
  for (const r of ranks) t.match(r.stdout, new RegExp(`^ok ${r.rank} tcp$`, 'm'), `rank ${r.rank} uses tcp`)
  await run(t, 'kinds', 2, { P2P_TRANSPORTS: 'tcp' })
  await run(t, 'order', 3, { P2P_TRANSPORTS: 'tcp' })
})
