'use strict'
// fastsock/mpi: the object tier (sendObject/recvObject, structured clone) and transportOf
// ('shm' between ranks of one host by default, 'tcp' with init({ transports: ['tcp'] })).
const t = require('tap')
const path = require('path')
const { spawnRanks, describe } = require('../helpers/mpi-spawn')

const FIXTURE = path.join(__dirname, '..', 'fixtures', 'mpi', 'p2p.js')

async function run (t, scenario, np, env = {}) {
  const ranks = await spawnRanks(FIXTURE, { np, args: [scenario], env, timeoutMs: 30000 })
  const bad = ranks.filter(r => r.code !== 0 || !new RegExp(`^ok ${r.rank}\\b`, 'm').test(r.stdout))
  t.same(bad.map(r => r.rank), [], `${scenario} on ${np} rank(s): every rank ok\n${bad.length ? describe(ranks) : ''}`)
  return ranks
}

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
