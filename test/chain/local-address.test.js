'use strict'
// A caller asking for localAddress or localPort gets TCP as asked: the fast rungs are declined
// without an attempt.
const t = require('tap')
const { fastsock, ALL_RUNGS } = require('../helpers/rungs')
const { listen, once, within, closedPort } = require('../helpers/util')

async function connect (t, opts) {
  const server = fastsock.createServer({ transports: ALL_RUNGS }, s => s.on('error', () => {}))
  const accepted = once(server, 'connection')
  await listen(server, 0, '127.0.0.1')
  t.teardown(() => server.close())
  const c = new fastsock.Socket({ transports: ALL_RUNGS })
  t.teardown(() => c.destroy())
  const attempts = []
  c.on('transportAttempt', e => attempts.push(e.transport))
  c.connect({ port: server.address().port, host: '127.0.0.1', ...opts })
  const [[s]] = await within(Promise.all([accepted, once(c, 'connect')]), 5000, 'connect')
  t.teardown(() => s.destroy())
  return { c, s, attempts }
}

t.test('localAddress', async t => {
  const { c, s, attempts } = await connect(t, { localAddress: '127.0.0.1' })
  t.equal(c.transport, 'tcp')
  t.equal(s.transport, 'tcp')
  t.same(attempts, ['tcp'], 'no fast rung attempted')
  t.equal(c.localAddress, '127.0.0.1')
})

t.test('localPort', async t => {
  const localPort = await closedPort()
  const { c, s, attempts } = await connect(t, { localAddress: '127.0.0.1', localPort })
  t.equal(c.transport, 'tcp')
  t.same(attempts, ['tcp'], 'no fast rung attempted')
  t.equal(c.localPort, localPort, 'the requested local port')
  t.equal(s.remotePort, localPort, 'as the server sees it')
})
