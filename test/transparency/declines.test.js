'use strict'
// Under the hook, a caller asking for what a fast rung cannot honour gets TCP: localAddress,
// localPort, an fd, a family the host address does not have (as in test-net-local-address-port,
// test-net-connect-options-fd). undefined/null/'' options (as libraries pass them) do not decline.
const t = require('tap')
const { net, bestRung } = require('../helpers/hook')
const { once, closedPort } = require('../helpers/util')

async function server (t) {
  const s = net.createServer(c => c.resume())
  await new Promise(resolve => s.listen(0, '127.0.0.1', resolve))
  t.teardown(() => s.close())
  return s.address().port
}

t.test('localAddress / localPort: tcp, and they are honoured', async t => {
  const port = await server(t)
  const a = net.connect({ port, host: '127.0.0.1', localAddress: '127.0.0.1' })
  await once(a, 'connect')
  t.equal(a.transport, 'tcp')
  t.equal(a.localAddress, '127.0.0.1')
  a.destroy()
  const lp = await closedPort()
  const b = net.connect({ port, host: '127.0.0.1', localPort: lp })
  await once(b, 'connect')
  t.equal(b.transport, 'tcp')
  t.equal(b.localPort, lp, 'the requested local port')
  b.destroy()
})

t.test('a family the address does not have: Node decides (tcp)', async t => {
  const port = await server(t)
  const c = net.connect({ port, host: '127.0.0.1', family: 6 })
  c.on('error', () => {})
  await new Promise(resolve => { c.once('connect', resolve); c.once('error', resolve) })
  t.equal(c.transport, 'tcp')
  c.destroy()
})

t.test('null / undefined / empty options as libraries pass them: still the best rung', async t => {
  const port = await server(t)
  const c = net.connect({ port, host: '127.0.0.1', localAddress: null, localPort: undefined, family: undefined })
  await once(c, 'connect')
  t.equal(c.transport, bestRung)
  c.destroy()
})
