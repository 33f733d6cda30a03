'use strict'
// An idle connection costs no spinning: once the replies stop, the progress engine polls a
// waiting connection for at most one window and then the connection sleeps on its doorbell, so
// its counters (and the engine's) stay flat. The peer is another process; no timing asserted.
const t = require('tap')
const fastsock = require('../..')
const { native } = require('../../dist/native')
const { rungs } = require('../helpers/rungs')
const { spawnNode, once, within, sleep } = require('../helpers/util')

const skip = !rungs.includes('shm') && 'shm is not available here'

t.test('an idle connection does not spin', { skip }, async t => {
  const peer = spawnNode(t, [require.resolve('../fixtures/poll-peer.js')])
  const { port } = await peer.waitFor(m => m.event === 'listening')
  const c = fastsock.connect({ port, host: '127.0.0.1', transports: ['shm'] })
  t.teardown(() => c.destroy())
  await once(c, 'connect')
  // Some quick round trips first, so that the window is open when the traffic stops.
  await within(new Promise(resolve => {
    let left = 500
    let got = 0
    c.on('data', d => {
      got += d.length
      while (got >= 64) {
        got -= 64
        if (--left === 0) return resolve()
        c.write(Buffer.alloc(64, 'e'))
      }
    })
    c.write(Buffer.alloc(64, 'e'))
  }), 20000, '500 round trips')
  const busy = c._fsShm.ep.pollStats()
  t.ok(busy.windowUs > 0, `the window is open after the traffic (${busy.windowUs} µs)`)
  await sleep(50) // longer than any window
  const before = { ep: c._fsShm.ep.pollStats(), engine: native.progressStats() }
  t.equal(before.ep.hot, false, 'the connection went to sleep on its doorbell')
  t.equal(before.engine.hot, 0, 'the engine polls nothing')
  await sleep(500)
  const after = { ep: c._fsShm.ep.pollStats(), engine: native.progressStats() }
  t.equal(after.ep.spinNs, before.ep.spinNs, 'no spinning for the connection over 500 ms idle')
  t.equal(after.ep.hits + after.ep.misses, before.ep.hits + before.ep.misses, 'no polling at all')
  t.equal(after.engine.spinNs, before.engine.spinNs, 'the engine did not spin either')
  t.equal(after.engine.processSpinNs, before.engine.processSpinNs, 'nor any loop of this process')
})
