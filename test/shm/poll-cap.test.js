'use strict'
// The per-process cap on spinning (docs/polling.md): connections whose replies always come
// within the window (the peer computes 50 µs per reply) would keep the progress engine spinning
// most of the time; the cap (set to 10 % of a core
// for this process through FASTSOCK_POLL_CAP_PERCENT) holds the spinning to about 10 ms per
// 100 ms, read from the process counters, and the engine reports the throttling. The peer is
// another process.
process.env.FASTSOCK_POLL_CAP_PERCENT = '10' // read natively when the first connection polls
const t = require('tap')
const fastsock = require('../..')
const { native } = require('../../dist/native')
const { rungs } = require('../helpers/rungs')
const { spawnNode, once, sleep } = require('../helpers/util')

const skip = !rungs.includes('shm') && 'shm is not available here'
const CONNECTIONS = 2
const CAP_PERCENT = 10
// Per 100 ms: the cap's 10 ms, one more 10 ms period that a window of 100 ms may overlap (1 ms),
// and what one engine may spin past the budget before it looks again (a 20 µs slice per period).
const SLACK_MS = 2

t.test('the process cap holds with many hot connections', { skip }, async t => {
  const peer = spawnNode(t, [require.resolve('../fixtures/poll-peer.js')])
  const { port } = await peer.waitFor(m => m.event === 'listening')
  let stop = false
  const sockets = []
  for (let i = 0; i < CONNECTIONS; i++) {
    const c = fastsock.connect({ port, host: '127.0.0.1', transports: ['shm'] })
    sockets.push(c)
    await once(c, 'connect')
    let got = 0
    c.on('data', d => {
      got += d.length
      while (got >= 64) {
        got -= 64
        if (!stop) c.write(Buffer.alloc(64, 'w'))
      }
    })
  }
  t.teardown(() => { for (const c of sockets) c.destroy() })
  for (const c of sockets) c.write(Buffer.alloc(64, 'w'))
  await sleep(200) // windows learned
  t.equal(native.progressStats().capPercent, CAP_PERCENT, 'the cap comes from FASTSOCK_POLL_CAP_PERCENT')
  const samples = []
  const first = native.progressStats()
  let prev = { ns: process.hrtime.bigint(), stats: first }
  // 10 windows of 100 ms; more (up to 5 s) while the cap has not been reached yet or no window
  // has spun: a process that finds its CPU contended (another test file running beside this one)
  // rightly stops spinning (docs/polling.md, "Backing off when the CPU is contended"), and the cap
  // is tested once that passes.
  for (let i = 0; i < 50 && (i < 10 || native.progressStats().throttles === 0 || !samples.some(x => x.spinMs > 0)); i++) {
    await sleep(100)
    const cur = { ns: process.hrtime.bigint(), stats: native.progressStats() }
    const elapsedMs = Number(cur.ns - prev.ns) / 1e6
    samples.push({ elapsedMs, spinMs: (cur.stats.processSpinNs - prev.stats.processSpinNs) / 1e6 })
    prev = cur
  }
  stop = true
  const s = native.progressStats()
  t.ok(s.throttles > 0, `the cap was reached (${s.throttles} throttles in ${samples.length} windows; ${s.processContended - first.processContended} contention pauses): the connections wanted more spinning`)
  for (const { elapsedMs, spinMs } of samples) {
    const bound = elapsedMs * CAP_PERCENT / 100 + SLACK_MS * elapsedMs / 100
    t.ok(spinMs <= bound, `spun ${spinMs.toFixed(2)} ms in ${elapsedMs.toFixed(1)} ms (bound ${bound.toFixed(2)} ms)`)
  }
  t.ok(samples.some(x => x.spinMs > 0), 'the connections did spin, within the cap')
})
