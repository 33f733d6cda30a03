'use strict'
// The loop's ready list (docs/wire-protocol.md, "The ready list"; docs/polling.md): a wake-up
// checks the endpoints their peers named, not every sleeping one. One connection echoing beside
// IDLE idle ones, polling off (a reply that does not land before the reader sleeps is a
// doorbell wake-up): the engine takes at most about one token per round trip and never checks
// all sleepers (no scan); tokens are handed back when the connections close. The peer is another process (test/fixtures/poll-peer.js).
const t = require('tap')
const fastsock = require('../..')
const { native } = require('../../dist/native')
const { rungs } = require('../helpers/rungs')
const { spawnNode, once, within, sleep, waitFor } = require('../helpers/util')

const skip = !rungs.includes('shm') && 'shm is not available here'
const IDLE = 200
const ROUND_TRIPS = 200

/** `n` round trips of 64 bytes on `c` (the peer echoes at once). */
function roundTrips (c, n) {
  return within(new Promise(resolve => {
    let left = n
    let got = 0
    const onData = d => {
      got += d.length
      while (got >= 64) {
        got -= 64
        if (--left === 0) {
          c.off('data', onData)
          return resolve()
        }
        c.write(Buffer.alloc(64, 'e'))
      }
    }
    c.on('data', onData)
    c.write(Buffer.alloc(64, 'e'))
  }), 20000, `${n} round trips`)
}

t.test('a wake-up costs the endpoints woken, not the endpoints asleep', { skip }, async t => {
  const peer = spawnNode(t, [require.resolve('../fixtures/poll-peer.js')])
  const { port } = await peer.waitFor(m => m.event === 'listening')
  const connect = () => new Promise((resolve, reject) => {
    const c = fastsock.connect({ port, host: '127.0.0.1', transports: ['shm'], pollUs: 0 })
    c.once('connect', () => resolve(c)).once('error', reject)
  })
  const tokens0 = native.progressStats().tokens
  const sockets = []
  t.teardown(() => { for (const c of sockets) c.destroy() })
  for (let i = 0; i <= IDLE; i++) sockets.push(await connect())
  const busy = sockets[0]
  for (const c of sockets.slice(1)) c.resume() // idle readers: each asleep on the doorbell
  await roundTrips(busy, 20)
  await sleep(20)
  const before = native.progressStats()
  t.ok(before.sleeping >= IDLE, `the idle connections sleep on the doorbell (${before.sleeping})`)
  t.equal(before.tokens - tokens0, IDLE + 1, 'one token per connection')
  await roundTrips(busy, ROUND_TRIPS)
  const after = native.progressStats()
  const listed = after.listed - before.listed
  t.equal(after.scans, before.scans, 'no wake-up checked every sleeping endpoint')
  // A reply that lands before the reader sleeps (its arming re-checks the ring) needs no wake-up.
  t.ok(listed > 0 && listed <= ROUND_TRIPS * 2, `at most about one token per round trip: ${listed} for ${ROUND_TRIPS}`)
  for (const c of sockets) c.destroy()
  await waitFor(() => native.progressStats().tokens === tokens0, 5000, 'every token handed back')
  t.pass('every token handed back once the connections closed')
})

t.test('tokens are reused: connections that come and go do not use more of them', { skip }, async t => {
  const peer = spawnNode(t, [require.resolve('../fixtures/poll-peer.js')])
  const { port } = await peer.waitFor(m => m.event === 'listening')
  const tokens0 = native.progressStats().tokens
  for (let i = 0; i < 50; i++) {
    const c = fastsock.connect({ port, host: '127.0.0.1', transports: ['shm'] })
    await once(c, 'connect')
    await roundTrips(c, 2)
    c.destroy()
    await once(c, 'close')
  }
  await waitFor(() => native.progressStats().tokens === tokens0, 5000, 'every token handed back')
  t.pass('50 connections one after another hand every token back')
})
