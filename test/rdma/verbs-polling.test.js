'use strict'
// Adaptive busy polling on the `verbs` rung (docs/polling.md): a waiting connection's completion
// queue is polled by its loop's progress engine for a learned window before the CQ is armed and
// the loop sleeps on the completion channel. Against a verbs peer in another process, read from
// the endpoint's counters (pollStats, as shm's); no timing asserted. Runs inside the RDMA guest
// (npm run test:rdma); elsewhere every test is skipped with the reason.
const t = require('tap')
const fastsock = require('../..')
const { native } = require('../../dist/native')
const { rungHost, guestSkip } = require('../helpers/rungs')
const { spawnNode, once, within, sleep } = require('../helpers/util')
const { roundTrips: echoRoundTrips } = require('../helpers/echo')

const host = rungHost('verbs')
const skip = guestSkip('verbs')
const SLOW = 60000 // the guest's CPU is emulated
// Under the guest's emulated CPU a 64-byte round trip through Node and Soft-RoCE takes 0.5 to
// 2 ms, so waits mostly outlast the default 200 µs cap and its window seldom opens: the tests
// that need an open window raise the cap (the policy is the same; docs/polling.md).
const EMULATED_CAP_US = 2000
// The late peer answers after 20 ms, ten times that cap: a stall of the guest's CPU between a
// request and its wait (a few ms under emulation, seen once as a 1.7 ms wait against a 5 ms peer)
// still leaves the wait past the cap.
const LATE_MS = 20

/** A verbs connection to an echo peer in another process (test/fixtures/poll-peer.js). */
async function connectToPeer (t, options = {}) {
  const peer = spawnNode(t, [require.resolve('../fixtures/poll-peer.js'), JSON.stringify({ transports: ['verbs'], host: '0.0.0.0', lateMs: LATE_MS })])
  const { port } = await peer.waitFor(m => m.event === 'listening', SLOW)
  const c = fastsock.connect({ port, host, transports: ['verbs'], transportTimeoutMs: 20000, ...options })
  t.teardown(() => c.destroy())
  await once(c, 'connect', SLOW)
  t.equal(c.transport, 'verbs', 'connected on verbs')
  return c
}

/** `n` round trips of one 64-byte message, each echo checked (test/helpers/echo.js), within SLOW. */
const roundTrips = (c, n, kind) => echoRoundTrips(c, n, kind, SLOW)

const stats = c => c._fsShm.ep.pollStats()

/**
 * Quick round trips until the window is open (a wait past the cap, frequent when the host is
 * busy, halves it: a window open at a given moment takes a few tries). Its width, 0 if it never opened.
 */
async function openWindow (c) {
  for (let i = 0; i < 20 && stats(c).windowUs === 0; i++) await roundTrips(c, 20, 'e')
  return stats(c).windowUs
}

t.test('polling is on by default, capped at 200 µs', { skip, timeout: SLOW }, async t => {
  const c = await connectToPeer(t)
  const start = stats(c)
  t.equal(start.maxUs, 200, 'the window is capped at 200 µs by default')
  t.equal(start.windowUs, 0, 'a new connection starts with no window')
  await roundTrips(c, 100, 'e')
  const s = stats(c)
  t.ok(s.lastWaitUs > 0, `waits are observed (the last one ${s.lastWaitUs} µs)`)
  t.ok(s.windowUs <= 200, `the window stays within its cap (${s.windowUs} µs)`)
})

t.test('ping-pong: replies are caught while polling the completion queue', { skip, timeout: SLOW * 2 }, async t => {
  const c = await connectToPeer(t, { shmPollUs: EMULATED_CAP_US })
  await roundTrips(c, 500, 'e')
  const s = stats(c)
  // A contended CPU stops all spinning for a while (docs/polling.md): the counters say so.
  const contended = native.progressStats().processContended
  t.ok(s.hits > 0 || contended > 0, `replies were caught while polling (${s.hits} hits, ${s.misses} misses of 500 waits; ${contended} contention back-offs; ${s.spinNs} ns spun)`)
  t.ok(s.hits + s.misses > 0, 'the engine polled the connection (its window opened)')
  t.ok(s.windowUs <= s.maxUs, `the window stays within its cap (${s.windowUs} µs)`)
})

t.test('shmPollUs: 0 never spins', { skip, timeout: SLOW }, async t => {
  const c = await connectToPeer(t, { shmPollUs: 0 })
  await roundTrips(c, 300, 'e')
  const s = stats(c)
  t.equal(s.maxUs, 0, 'polling off')
  t.equal(s.windowUs, 0, 'no window')
  t.equal(s.hits + s.misses, 0, 'never polled')
  t.equal(s.spinNs, 0, 'never spun')
})

t.test('an idle connection does not spin', { skip, timeout: SLOW }, async t => {
  const c = await connectToPeer(t, { shmPollUs: EMULATED_CAP_US })
  await roundTrips(c, 100, 'e')
  const open = await openWindow(c)
  t.ok(open > 0, `the window is open when the traffic stops (${open} µs)`)
  await sleep(50) // longer than any window
  const before = { ep: stats(c), engine: native.progressStats() }
  t.equal(before.ep.hot, false, 'the connection went to sleep on its completion channel')
  t.equal(before.engine.hot, 0, 'the engine polls nothing')
  await sleep(200)
  const after = { ep: stats(c), engine: native.progressStats() }
  t.equal(after.ep.spinNs, before.ep.spinNs, 'no spinning for the connection over 200 ms idle')
  t.equal(after.ep.hits + after.ep.misses, before.ep.hits + before.ep.misses, 'no polling at all')
  t.equal(after.engine.spinNs, before.engine.spinNs, 'the engine did not spin either')
  // Still alive: the next reply comes through the armed CQ.
  await roundTrips(c, 5, 'e')
})

t.test('a late peer: each window runs out, the CQ is armed, and the reply still comes (the doorbell path)', { skip, timeout: SLOW }, async t => {
  const c = await connectToPeer(t, { shmPollUs: EMULATED_CAP_US })
  await roundTrips(c, 100, 'e')
  t.ok(await openWindow(c) > 0, `the window is open (${stats(c).windowUs} µs)`)
  const quick = stats(c)
  await roundTrips(c, 20, 'l') // every echo after LATE_MS: past the cap, each window runs out
  const late = stats(c)
  t.ok(late.misses > quick.misses, `windows ran out into a sleep (${late.misses - quick.misses} misses)`)
  t.ok(late.lastWaitUs > EMULATED_CAP_US, `the last wait, the peer's ${LATE_MS} ms, outlasted the cap (${late.lastWaitUs} µs)`)
  t.equal(late.windowUs, 0, 'late answers halved the window down to 0')
  await roundTrips(c, 20, 'l')
  t.equal(stats(c).spinNs, late.spinNs, 'once the window is 0, late answers cost no spinning')
  const back = await openWindow(c)
  t.ok(back > 0, `quick answers again: the window grew back (${back} µs)`)
})

t.test('both ends polled in one loop: 4 MiB of small writes arrive in order', { skip, timeout: SLOW }, async t => {
  // Credits return while both connections are hot in the same engine: no lost wake-up.
  const { pair } = require('../helpers/rungs')
  const { client, serverSocket } = await pair('verbs', { t })
  t.equal(stats(client).maxUs, 200, 'polling on, client end')
  t.equal(stats(serverSocket).maxUs, 200, 'polling on, server end')
  const total = 4 << 20
  const chunk = 1000
  let got = 0
  let bad = -1
  serverSocket.on('data', d => {
    for (let i = 0; i < d.length && bad < 0; i++) if (d[i] !== ((got + i) & 0xff)) bad = got + i
    got += d.length
  })
  for (let sent = 0; sent < total; sent += chunk) {
    const b = Buffer.alloc(Math.min(chunk, total - sent))
    for (let i = 0; i < b.length; i++) b[i] = (sent + i) & 0xff
    if (!client.write(b)) await once(client, 'drain', SLOW)
  }
  await within(new Promise(resolve => { const tick = () => got >= total ? resolve() : setTimeout(tick, 5); tick() }), SLOW, 'every byte')
  t.equal(bad, -1, 'in order, intact')
  t.equal(got, total, 'every byte')
})
