'use strict'
// Connect events: 'lookup' when a host name is resolved (with net's arguments), then the connect
// callback, 'connect', 'ready'; no 'lookup' for an IP literal; the socket is connecting until
// then and nothing is emitted synchronously. Expected sequences come from plain net.
const t = require('tap')
const net = require('net')
const { forEachRung, fastsock, ALL_RUNGS } = require('../helpers/rungs')
const { once, listen, within, quiet } = require('../helpers/util')

/** Connects with `lib` and records the events and states in order. */
async function record (lib, port, host, extra = {}) {
  const seq = []
  const c = lib.connect({ port, host, ...extra }, () => seq.push('callback'))
  seq.push(`sync:connecting=${c.connecting},readyState=${c.readyState}`)
  c.on('lookup', (err, address, family, hostname) => seq.push(`lookup:${err}:${address}:${family}:${hostname}`))
  c.on('connect', () => seq.push(`connect:connecting=${c.connecting},readyState=${c.readyState}`))
  c.on('ready', () => seq.push('ready'))
  await within(Promise.race([once(c, 'ready'), once(c, 'error').then(([e]) => { throw e })]), 5000, 'ready')
  c.destroy()
  return { seq, transport: c.transport }
}

for (const host of ['localhost', '127.0.0.1']) {
  t.test(`dialing ${host}`, async t => {
    const plain = net.createServer(quiet(s => s.destroy()))
    await listen(plain, 0, '127.0.0.1')
    t.teardown(() => plain.close())
    const expected = (await record(net, plain.address().port, host)).seq
    t.equal(expected.some(e => e.startsWith('lookup:')), host === 'localhost', `net emits 'lookup' only for a host name: ${expected.join(' | ')}`)

    forEachRung(t, async (t, rung) => {
      const server = fastsock.createServer({ transports: ALL_RUNGS }, quiet(s => s.destroy()))
      await listen(server, 0, '127.0.0.1')
      t.teardown(() => server.close())
      const { seq, transport } = await record(fastsock, server.address().port, host, { transports: [rung] })
      t.equal(transport, rung)
      t.same(seq, expected, 'same events, arguments and order as net')
    }, { loopback: true })
  })
}
