'use strict'
// perf_hooks: a client's connect to an IP address is one 'net' PerformanceEntry for an observer
// watching 'net' (name 'connect', the address and port connected to in `detail`), as Node's
// connect records it (lib/net.js internalConnect/afterConnect; Node's test-net-perf_hooks.js),
// on every rung; the accepting side records none; an observer that disconnected gets nothing.
const t = require('tap')
const { PerformanceObserver, PerformanceEntry } = require('perf_hooks')
const { forEachRung, pair } = require('../helpers/rungs')

/** An observer of `type` collecting its entries; `settled()` waits for the dispatch turn. */
function observe (type) {
  const entries = []
  const obs = new PerformanceObserver(list => entries.push(...list.getEntries()))
  obs.observe({ type })
  const settled = () => new Promise(resolve => setImmediate(() => setImmediate(resolve)))
  return { entries, obs, settled }
}

forEachRung(t, async (t, rung) => {
  t.test('one net entry per client connect', async t => {
    const { entries, obs, settled } = observe('net')
    t.teardown(() => obs.disconnect())
    const { client, port } = await pair(rung, { t })
    await settled()
    t.equal(entries.length, 1, `one entry (got ${entries.map(e => JSON.stringify(e)).join(', ')})`)
    const [e] = entries
    t.ok(e instanceof PerformanceEntry, 'a PerformanceEntry')
    t.equal(e.name, 'connect')
    t.equal(e.entryType, 'net')
    t.type(e.startTime, 'number')
    t.ok(e.duration >= 0, `duration ${e.duration} ms`)
    t.same(e.detail, { host: client.remoteAddress, port }, 'detail: the address and port connected to')
    t.same(e.toJSON(), { name: 'connect', entryType: 'net', startTime: e.startTime, duration: e.duration, detail: e.detail })
  })

  t.test('an observer of other types, or one that disconnected, gets none', async t => {
    const marks = observe('mark')
    const net = observe('net')
    net.obs.disconnect()
    t.teardown(() => marks.obs.disconnect())
    await pair(rung, { t })
    await marks.settled()
    t.same(marks.entries, [])
    t.same(net.entries, [])
  })
})
