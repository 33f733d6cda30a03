'use strict'
// 'transportAttempt' ({ transport }) for each rung tried and 'transportAttemptFailed'
// ({ transport, error }) for each fast rung that failed, in order, before 'connect': like Node's
// connectionAttempt / connectionAttemptFailed, every attempt but the one that connects ends in
// exactly one failure (a destination without a side channel: ERR_FASTSOCK_NOT_OFFERED).
const t = require('tap')
const net = require('net')
const { fastsock, ALL_RUNGS, rungs } = require('../helpers/rungs')
const { listen, once, within, quiet } = require('../helpers/util')
const { squat } = require('../helpers/squatter')

const skip = rungs.includes('unix') ? false : 'the unix rung is not available here'

function record (c) {
  const seq = []
  c.on('transportAttempt', e => seq.push(['attempt', e.transport, Object.keys(e).sort().join(',')]))
  c.on('transportAttemptFailed', e => seq.push(['failed', e.transport, e.error && e.error.code, Object.keys(e).sort().join(',')]))
  c.on('connect', () => seq.push(['connect', c.transport]))
  return seq
}

async function connected (c) {
  await within(Promise.race([once(c, 'connect'), once(c, 'error').then(([e]) => { throw e })]), 5000, 'connect')
}

t.test('fastsock server: one unix attempt, then connect', { skip }, async t => {
  fastsock.clearNegativeCache()
  const server = fastsock.createServer({ transports: ALL_RUNGS }, quiet(s => s.resume()))
  await listen(server, 0, '127.0.0.1')
  t.teardown(() => server.close())
  const c = fastsock.connect({ port: server.address().port, host: '127.0.0.1', transports: ['unix', 'tcp'] })
  t.teardown(() => c.destroy())
  const seq = record(c)
  await connected(c)
  t.same(seq, [['attempt', 'unix', 'transport'], ['connect', 'unix']])
})

t.test('unverifiable side channel: attempt, failure with the error, then tcp', { skip }, async t => {
  fastsock.clearNegativeCache()
  const server = net.createServer(quiet(s => s.resume()))
  await listen(server, 0, '127.0.0.1')
  t.teardown(() => server.close())
  const { port } = server.address()
  await squat(t, '127.0.0.1', port)
  const c = fastsock.connect({ port, host: '127.0.0.1', transports: ['unix', 'tcp'] })
  t.teardown(() => c.destroy())
  let failure
  c.on('transportAttemptFailed', e => { failure = e })
  const seq = record(c)
  await connected(c)
  t.same(seq, [
    ['attempt', 'unix', 'transport'],
    ['failed', 'unix', 'ERR_FASTSOCK_UNVERIFIED_PEER', 'error,transport'],
    ['attempt', 'tcp', 'transport'],
    ['connect', 'tcp']
  ])
  t.ok(failure.error instanceof fastsock.FastsockError, 'the error is a FastsockError')
  fastsock.clearNegativeCache()
})

t.test('plain net server: the unix attempt fails as not offered, then tcp', { skip }, async t => {
  fastsock.clearNegativeCache()
  const server = net.createServer(quiet(s => s.resume()))
  await listen(server, 0, '127.0.0.1')
  t.teardown(() => server.close())
  const c = fastsock.connect({ port: server.address().port, host: '127.0.0.1', transports: ['unix', 'tcp'] })
  t.teardown(() => c.destroy())
  const seq = record(c)
  await connected(c)
  t.same(seq, [
    ['attempt', 'unix', 'transport'],
    ['failed', 'unix', 'ERR_FASTSOCK_NOT_OFFERED', 'error,transport'],
    ['attempt', 'tcp', 'transport'],
    ['connect', 'tcp']
  ])
})
