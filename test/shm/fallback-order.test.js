'use strict'
// The chain's order below shm: a server that does not offer shm gets a unix connection from a
// default client; a server whose shm setup fails sends the client to unix, and from there to tcp
// only if unix fails too.
const t = require('tap')
const { rungs } = require('../helpers/rungs')
const { spawnNode, once, within, listen } = require('../helpers/util')
const fastsock = require('../..')

const skip = !(rungs.includes('shm') && rungs.includes('unix')) && 'needs shm and unix'

t.test('server without shm: the default chain lands on unix', { skip }, async t => {
  const server = fastsock.createServer({ transports: ['unix', 'tcp'] }, s => s.pipe(s))
  await listen(server, 0, '127.0.0.1')
  t.teardown(() => server.close())
  const attempts = []
  const c = fastsock.connect({ port: server.address().port, host: '127.0.0.1', transports: ['shm', 'unix', 'tcp'] })
  c.on('transportAttempt', a => attempts.push(a.transport))
  await once(c, 'connect')
  t.equal(c.transport, 'unix', 'unix, negotiated in the same side-channel attempt')
  t.same(attempts, ['shm'], 'one attempt offered shm and unix together')
  c.write('hi')
  const [d] = await once(c, 'data')
  t.equal(String(d), 'hi')
  c.destroy()
})

t.test('shm setup fails: the client retries on unix', { skip }, async t => {
  const peer = spawnNode(t, [require.resolve('../fixtures/fake-shm-server.js'), 'garbage', 'unix-ok'])
  const { port } = await peer.waitFor(m => m.event === 'listening')
  const events = []
  const c = fastsock.connect({ port, host: '127.0.0.1', transports: ['shm', 'unix', 'tcp'], transportTimeoutMs: 1000 })
  c.on('transportAttempt', a => events.push(`try ${a.transport}`))
  c.on('transportAttemptFailed', f => events.push(`fail ${f.transport} ${f.error.code}`))
  await within(once(c, 'connect', 5000), 5000, 'connect')
  t.equal(c.transport, 'unix', 'landed on unix')
  t.same(events, ['try shm', 'fail shm ERR_FASTSOCK_HANDSHAKE', 'try unix'], 'shm failed in its setup, then unix')
  c.write('over unix')
  const [d] = await once(c, 'data')
  t.equal(String(d), 'over unix')
  await peer.waitFor(m => m.event === 'unix-data')
  c.destroy()
})
