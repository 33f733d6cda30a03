'use strict'
// fastsock/mpi's errors on real processes: truncation loses nothing; a SIGKILLed peer makes
// pending and later operations reject with ERR_MPI_PEER_LOST (within 1 s), also on ranks that
// never talked to it (the store's 'rankLost') and for ANY_SOURCE; bad arguments throw with
// Node's codes; Request wait timeout / abort signal.
const t = require('tap')
const path = require('path')
const { spawnRanks, describe, runScenario } = require('../helpers/mpi-spawn')

const FIXTURE = path.join(__dirname, '..', 'fixtures', 'mpi', 'p2p.js')

/** `scenario` on `np` ranks (`env` added): every rank must exit 0 having printed "ok <rank>". */
const run = (t, scenario, np, env = {}) => runScenario(t, FIXTURE, scenario, np, { env, timeoutMs: 30000 })

t.test('a receive too small rejects ERR_MPI_TRUNCATE; the message is received later whole', async t => {
  await run(t, 'truncate', 2)
  await run(t, 'truncate', 3)
})

t.test('bad arguments, Request.test/wait(timeout, signal), waitAny, testAll (P = 1, 2)', async t => {
  await run(t, 'args', 1)
  await run(t, 'args', 2)
})

for (const np of [2, 4]) {
  t.test(`a peer SIGKILLed mid-receive: survivors reject with ERR_MPI_PEER_LOST within 1 s (P = ${np})`, async t => {
    const job = spawnRanks(FIXTURE, { np, args: ['kill'], timeoutMs: 20000 })
    const victim = np - 1
    await job.waitForOutput(victim, /^ready/m, 15000)
    for (let r = 0; r < victim; r++) await job.waitForOutput(r, /^waiting/m, 15000)
    const killedAt = Date.now()
    t.ok(job.kill(victim, 'SIGKILL'), 'the victim was killed')
    const ranks = await job
    t.equal(ranks[victim].signal, 'SIGKILL', 'the victim died of SIGKILL')
    for (let r = 0; r < victim; r++) {
      const m = /lost after (\d+) ms at (\d+)/.exec(ranks[r].stdout)
      t.ok(ranks[r].code === 0 && m, `rank ${r} saw the loss with ERR_MPI_PEER_LOST${r === 0 ? '' : ' (ANY_SOURCE, never talked to the victim)'}\n${describe(ranks)}`)
      // The bound: within 1 s of the death (both clocks are this host's).
      if (m) t.ok(Number(m[2]) - killedAt < 1000, `rank ${r}: rejected ${Number(m[2]) - killedAt} ms after the SIGKILL`)
    }
  })
}

t.test('the fast path\'s spin is bounded: timers, wait timeout and signal run while a late peer is awaited', async t => {
  await run(t, 'spinbound', 2)
  await run(t, 'spinbound', 2, { FASTSOCK_MPI_SPIN_US: '0' })
  await run(t, 'spinbound', 2, { FASTSOCK_MPI_SPIN_US: '200' })
})

t.test('the yielding spin (FASTSOCK_MPI_YIELD=1, the default when ranks > CPUs) is bounded the same way', async t => {
  await run(t, 'spinbound', 2, { FASTSOCK_MPI_YIELD: '1' })
})

t.test('init() refuses bad polling and eager settings before it starts anything', async t => {
  const mpi = require('../../dist/mpi')
  const cases = [
    [{ FASTSOCK_MPI_YIELD: 'maybe' }, {}, /FASTSOCK_MPI_YIELD must be 0 or 1/],
    [{ FASTSOCK_MPI_SPIN_US: '-1' }, {}, /FASTSOCK_MPI_SPIN_US must be a number/],
    [{}, { eagerThresholdBytes: -1 }, /eagerThresholdBytes must be an integer/]
  ]
  for (const [env, opts, message] of cases) {
    Object.assign(process.env, env)
    try {
      await t.rejects(mpi.init(opts), { code: 'ERR_OUT_OF_RANGE', message }, JSON.stringify(env) + JSON.stringify(opts))
    } finally {
      for (const k of Object.keys(env)) delete process.env[k]
    }
  }
})

t.test('wait() spins after the caller\'s synchronous code: a send issued after wait() is not held behind the spin', async t => {
  await run(t, 'waitfirst', 2, { FASTSOCK_MPI_SPIN_US: '500000' })
})

t.test('FASTSOCK_MPI_SPIN_US=0 (no fast path): every kind and size, non-overtaking', async t => {
  await run(t, 'kinds', 2, { FASTSOCK_MPI_SPIN_US: '0' })
  await run(t, 'order', 2, { FASTSOCK_MPI_SPIN_US: '0' })
})

t.test('abort(3) on one rank ends every rank with exit code 3', async t => {
  const ranks = await spawnRanks(FIXTURE, { np: 3, args: ['abort'], timeoutMs: 20000 })
  t.same(ranks.map(r => r.code), [3, 3, 3], `every rank exits 3\n${describe(ranks)}`)
})

t.test("V8's workers: kept at nice 0 by a rank (init sets FASTSOCK_HELPER_NICE=0 unless set), nice 19 when asked", { skip: process.env.FASTSOCK_HELPER_NICE !== undefined && 'FASTSOCK_HELPER_NICE is set here' }, async t => {
  const cpus = require('os').availableParallelism()
  await runScenario(t, FIXTURE, 'helpers', 2, { env: { EXPECT_HELPERS: 'kept' }, timeoutMs: 30000 })
  if (cpus >= 2) await runScenario(t, FIXTURE, 'helpers', 2, { env: { EXPECT_HELPERS: 'niced', FASTSOCK_HELPER_NICE: '19' }, timeoutMs: 30000 })
  await runScenario(t, FIXTURE, 'helpers', cpus + 1, { env: { EXPECT_HELPERS: 'kept' }, timeoutMs: 60000 })
})
