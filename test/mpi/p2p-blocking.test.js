'use strict'
// fastsock/mpi's blocking tier (Request.waitSync, Comm.sendSync / recvSync; docs/mpi.md,
// "Blocking calls") on real processes: every size and kind arrives whole, eager exchanges on shm
// complete without the event loop, the first exchange and a transport without synchronous I/O
// (tcp) throw ERR_MPI_WOULD_BLOCK with a request that completes when awaited; matching order,
// truncation, timeout, ANY_SOURCE; an idle blocking receive sleeps; a SIGKILLed peer is an error.
const t = require('tap')
const path = require('path')
const { spawnRanks, describe, runScenario } = require('../helpers/mpi-spawn')

const FIXTURE = path.join(__dirname, '..', 'fixtures', 'mpi', 'p2p.js')
const run = (t, scenario, np, env = {}) => runScenario(t, FIXTURE, scenario, np, { env, timeoutMs: 60000 })

t.test('sendSync / recvSync: sizes, kinds, order, truncation, timeout (shm, P = 2 and 3)', async t => {
  await run(t, 'blocking', 2)
  await run(t, 'blocking', 3)
  await run(t, 'blocking', 3, { FASTSOCK_MPI_YIELD: '1' })
})

t.test('over tcp the blocking calls throw ERR_MPI_WOULD_BLOCK and complete when awaited', async t => {
  await run(t, 'blocking', 2, { P2P_TRANSPORTS: 'tcp' })
})

t.test('a blocking receive waiting for a late peer sleeps after its polling window', async t => {
  await run(t, 'blocking-idle', 2)
})

t.test('a peer SIGKILLed under a blocking receive: ERR_MPI_PEER_LOST within 1 s', async t => {
  const job = spawnRanks(FIXTURE, { np: 2, args: ['blocking-kill'], timeoutMs: 20000 })
  await job.waitForOutput(1, /^ready/m, 15000)
  await job.waitForOutput(0, /^waiting/m, 15000)
  await new Promise(resolve => setTimeout(resolve, 50)) // rank 0 is inside recvSync
  const killedAt = Date.now()
  t.ok(job.kill(1, 'SIGKILL'), 'the victim was killed')
  const ranks = await job
  const m = /lost after (\d+) ms at (\d+)/.exec(ranks[0].stdout)
  t.ok(ranks[0].code === 0 && m, `rank 0 saw the loss\n${describe(ranks)}`)
  if (m) t.ok(Number(m[2]) - killedAt < 1000, `thrown ${Number(m[2]) - killedAt} ms after the SIGKILL`)
})
