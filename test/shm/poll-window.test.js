'use strict'
// The adaptive polling window (docs/polling.md) learns from the waits it sees, per connection:
// against a peer in another process that answers at once it grows and catches the replies while
// polling (hits); against the same peer answering 5 ms late it halves on every wait down to 0
// (no spinning) and grows again once the answers are quick. Read from the endpoint's counters,
// no timing asserted.
const t = require('tap')
const fastsock = require('../..')
const { native } = require('../../dist/native')
const { rungs } = require('../helpers/rungs')
const { spawnNode, once } = require('../helpers/util')
const { roundTrips } = require('../helpers/echo')

const skip = !rungs.includes('shm') && 'shm is not available here'


t.test('the window grows on quick answers and shrinks on late ones', { skip }, async t => {
  const peer = spawnNode(t, [require.resolve('../fixtures/poll-peer.js')])
  const { port } = await peer.waitFor(m => m.event === 'listening')
  const c = fastsock.connect({ port, host: '127.0.0.1', transports: ['shm'] })
  t.teardown(() => c.destroy())
  await once(c, 'connect')
  t.equal(c.transport, 'shm')
  const stats = () => c._fsShm.ep.pollStats()
  const start = stats()
  t.equal(start.maxUs, 200, 'polling is on by default, window capped at 200 µs')
  t.equal(start.windowUs, 0, 'a new connection starts with no window (nothing learned yet)')

  await roundTrips(c, 2000, 'e')
  const quick = stats()
  t.ok(quick.windowUs > 0, `quick answers grew the window from 0 (${quick.windowUs} µs)`)
  t.ok(quick.windowUs <= quick.maxUs, 'within the cap')
  // On a machine where other tasks want the CPU the engine backs off, and a peer that the
  // scheduler put on this process's CPU is not spun for (holds; docs/polling.md): then fewer or
  // no replies are caught by polling, and the counters say why.
  const { processContended: contended, holds } = native.progressStats()
  t.ok(quick.hits > 0 || contended > 0 || holds > 0, `replies were caught while polling (${quick.hits} hits of 2000; ${contended} contention back-offs, ${holds} holds)`)
  // A hit can also be the engine's first look, before any spin (the reply was there already), so
  // under contention or holds a few hits may come with no spinning at all.
  t.ok(quick.spinNs > 0 || contended + holds > 0, `polling spent some CPU (${quick.spinNs} ns; ${contended} back-offs, ${holds} holds)`)

  // A late peer: every wait (5 ms) is past the cap, so the window halves each time: from 200 µs
  // at most it is 0 after 8 waits.
  await roundTrips(c, 20, 'l')
  const late = stats()
  t.equal(late.windowUs, 0, 'late answers shrank the window to 0')
  t.ok(late.misses > quick.misses, `windows ran out while the peer was late (${late.misses - quick.misses} misses)`)
  t.ok(late.lastWaitUs >= 4000, `the last wait was the peer's 5 ms (${late.lastWaitUs} µs)`)
  const spinWhileLate = late.spinNs - quick.spinNs
  await roundTrips(c, 20, 'l')
  t.equal(stats().spinNs, late.spinNs, 'once the window is 0, late answers cost no spinning')
  t.ok(spinWhileLate < 20 * 200000, `spinning while the peer was late stayed under 20 full windows (${spinWhileLate} ns)`)

  await roundTrips(c, 500, 'e')
  t.ok(stats().windowUs > 0, `quick answers again: the window grew back from 0 (${stats().windowUs} µs)`)
})

t.test('shmPollUs: 0 never spins', { skip }, async t => {
  const peer = spawnNode(t, [require.resolve('../fixtures/poll-peer.js')])
  const { port } = await peer.waitFor(m => m.event === 'listening')
  const c = fastsock.connect({ port, host: '127.0.0.1', transports: ['shm'], shmPollUs: 0 })
  t.teardown(() => c.destroy())
  await once(c, 'connect')
  await roundTrips(c, 1000, 'e')
  const s = c._fsShm.ep.pollStats()
  t.equal(s.maxUs, 0, 'polling off')
  t.equal(s.windowUs, 0, 'no window')
  t.equal(s.hits + s.misses, 0, 'never polled')
  t.equal(s.spinNs, 0, 'never spun')
})
