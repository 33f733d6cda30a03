'use strict'
// Holds (docs/polling.md, "A peer on this CPU"): a wait whose reply must come from a peer that
// runs on this very CPU, with the request not yet taken, does not spin, and nothing of the loop
// spins while it lasts; against the same peer on another CPU the waits poll as usual. Both
// processes are pinned with taskset (util-linux); the peer is a real second process (the
// fixture's echo server). Read from the engine's counters, no timing asserted.
const t = require('tap')
const os = require('os')
const { execFileSync } = require('child_process')
const fastsock = require('../..')
const { native } = require('../../dist/native')
const { rungs } = require('../helpers/rungs')
const { spawnNode, once } = require('../helpers/util')
const { roundTrips } = require('../helpers/echo')

const ROUND_TRIPS = 2000

let taskset = false
try { execFileSync('taskset', ['-c', '0', 'true'], { stdio: 'ignore' }); taskset = true } catch {}
const allowed = (() => {
  try { return execFileSync('taskset', ['-pc', String(process.pid)], { encoding: 'utf8' }).trim().split(': ').pop() } catch { return null }
})()
const skip = (!rungs.includes('shm') && 'shm is not available here') ||
  (!taskset && 'taskset (util-linux) is not installed') ||
  (os.availableParallelism() < 2 && 'needs 2 CPUs (a peer on this CPU, then on another)')

/** Pins every thread of process `pid` to `cpus` (a taskset list). */
const pin = (pid, cpus) => execFileSync('taskset', ['-a', '-pc', cpus, String(pid)], { stdio: 'ignore' })


t.test('a peer on this CPU is not spun for; on another CPU it is polled', { skip }, async t => {
  t.teardown(() => { if (allowed !== null) pin(process.pid, allowed) })
  pin(process.pid, '0')
  const peer = spawnNode(t, ['-e',
    `require('child_process').execFileSync('taskset', ['-a', '-pc', '0', String(process.pid)]); require(${JSON.stringify(require.resolve('../fixtures/poll-peer.js'))})`])
  const { port } = await peer.waitFor(m => m.event === 'listening')
  const c = fastsock.connect({ port, host: '127.0.0.1', transports: ['shm'] })
  t.teardown(() => c.destroy())
  await once(c, 'connect')
  t.equal(c.transport, 'shm')
  const ep = c._fsShm.ep

  // Same CPU: the peer can only answer once this process stops running.
  const e0 = native.progressStats()
  const p0 = ep.pollStats()
  await roundTrips(c, ROUND_TRIPS)
  const e1 = native.progressStats()
  const p1 = ep.pollStats()
  const holds = e1.holds - e0.holds
  t.ok(holds > 0, `waits on the peer sharing CPU 0 were held (${holds} holds over ${ROUND_TRIPS} round trips)`)
  t.ok(p1.hits - p0.hits < holds, `fewer replies caught while polling (${p1.hits - p0.hits}) than held waits`)
  t.equal(e1.held, 0, 'no hold is left once every reply came')

  // Another CPU: the peer runs while this process polls; no wait is held.
  pin(process.pid, '1')
  await roundTrips(c, 200) // this side's CPU hint moves to CPU 1 at its next wait
  const e2 = native.progressStats()
  const p2 = ep.pollStats()
  await roundTrips(c, ROUND_TRIPS)
  const e3 = native.progressStats()
  const p3 = ep.pollStats()
  t.equal(e3.holds - e2.holds, 0, 'the peer on CPU 0 and this process on CPU 1: no wait held')
  t.ok(p3.hits - p2.hits > 0 || e3.processContended > e2.processContended,
    `replies were caught while polling (${p3.hits - p2.hits} hits; ${e3.processContended - e2.processContended} contention back-offs)`)
})
