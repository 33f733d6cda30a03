'use strict'
// The chain owns each attempt's one timer and one AbortSignal (ConnectRequest.signal), as Node's
// internalConnectMultiple owns its attempt timer: a rung that never answers is abandoned at
// transportTimeoutMs with ERR_FASTSOCK_TRANSPORT_TIMEOUT and the next rung runs; the signal the
// rung got is aborted with that error; a channel the rung brings after that is discarded; a
// socket destroyed during an attempt aborts its signal with an AbortError and reports no failure.
// The unix rung's connector (the side channel) is replaced in this process by one that answers
// when the test says, so only the chain can end the attempt.
const t = require('tap')
const net = require('net')
const { fastsock, rungs } = require('../helpers/rungs')
const { listen, once, within, sleep, quiet } = require('../helpers/util')
const { rungOf } = require('../../dist/transports/registry')
const { channel } = require('../../dist/contract')

const skip = rungs.includes('unix') ? false : 'the unix rung is not available here'

/** Replaces the unix rung's connector's skip and connect for one test; `connect(req)` is the test's. */
function stubConnector (t, connect) {
  const connector = rungOf('unix').connector
  const saved = { skip: connector.skip, connect: connector.connect }
  connector.skip = () => null
  connector.connect = (rung, req) => connect(req)
  t.teardown(() => Object.assign(connector, saved))
}

async function tcpServer (t) {
  const server = net.createServer(quiet(s => s.resume()))
  await listen(server, 0, '127.0.0.1')
  t.teardown(() => server.close())
  return server.address().port
}

t.test('a rung that never answers is abandoned at transportTimeoutMs; the next rung runs', { skip }, async t => {
  fastsock.clearNegativeCache()
  const port = await tcpServer(t)
  let signal = null
  stubConnector(t, req => { signal = req.signal; return new Promise(() => {}) })
  const started = Date.now()
  const c = fastsock.connect({ port, host: '127.0.0.1', transports: ['unix', 'tcp'], transportTimeoutMs: 300 })
  t.teardown(() => c.destroy())
  const failures = []
  c.on('transportAttemptFailed', e => failures.push({ transport: e.transport, code: e.error.code, after: Date.now() - started }))
  await within(once(c, 'connect'), 5000, 'connect')
  t.equal(c.transport, 'tcp', 'landed on the next rung')
  t.equal(failures.length, 1, 'one failed attempt')
  t.equal(failures[0].transport, 'unix')
  t.equal(failures[0].code, 'ERR_FASTSOCK_TRANSPORT_TIMEOUT', 'the chain\'s timeout')
  t.ok(failures[0].after >= 290 && failures[0].after < 3000, `after the attempt's 300 ms (${failures[0].after} ms)`)
  t.ok(signal && signal.aborted, 'the rung\'s signal is aborted')
  t.equal(signal.reason && signal.reason.code, 'ERR_FASTSOCK_TRANSPORT_TIMEOUT', 'with the timeout as its reason')
  fastsock.clearNegativeCache()
})

t.test('a channel brought after the timeout is discarded', { skip }, async t => {
  fastsock.clearNegativeCache()
  const port = await tcpServer(t)
  let bring = null
  stubConnector(t, () => new Promise(resolve => { bring = resolve }))
  const c = fastsock.connect({ port, host: '127.0.0.1', transports: ['unix', 'tcp'], transportTimeoutMs: 100 })
  t.teardown(() => c.destroy())
  await within(once(c, 'connect'), 5000, 'connect')
  t.equal(c.transport, 'tcp', 'the chain went on')
  let closed = false
  bring(channel({ transport: 'unix', handle: { close: () => { closed = true } } }))
  await sleep(20)
  t.ok(closed, 'the late channel\'s handle was closed')
  t.equal(c.transport, 'tcp', 'and the socket kept its connection')
  fastsock.clearNegativeCache()
})

t.test('destroy() during an attempt aborts its signal and reports no failure', { skip }, async t => {
  fastsock.clearNegativeCache()
  const port = await tcpServer(t)
  let signal = null
  stubConnector(t, req => { signal = req.signal; return new Promise(() => {}) })
  const c = fastsock.connect({ port, host: '127.0.0.1', transports: ['unix', 'tcp'], transportTimeoutMs: 5000 })
  const events = []
  c.on('transportAttemptFailed', e => events.push(`failed ${e.transport}`))
  c.on('transportAttempt', e => events.push(`attempt ${e.transport}`))
  c.on('connect', () => events.push('connect'))
  await within((async () => { while (signal === null) await sleep(1) })(), 2000, 'the attempt to start')
  c.destroy()
  await within(once(c, 'close'), 2000, 'close')
  t.ok(signal.aborted, 'the rung\'s signal is aborted')
  t.equal(signal.reason && signal.reason.name, 'AbortError', 'with an AbortError')
  await sleep(50)
  t.same(events, ['attempt unix'], 'no failure reported, no other rung tried')
  fastsock.clearNegativeCache()
})
