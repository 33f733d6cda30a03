'use strict'
// The transports option: rungs are tried in the given order, only those given, and unavailable
// ones are passed over without an attempt.
const t = require('tap')
const { fastsock, ALL_RUNGS, rungs, bestRung } = require('../helpers/rungs')
const { listen, once, within, quiet } = require('../helpers/util')

async function connectWith (t, port, transports) {
  const c = fastsock.connect({ port, host: '127.0.0.1', transports })
  t.teardown(() => c.destroy())
  const attempts = []
  const failures = []
  c.on('transportAttempt', e => attempts.push(e.transport))
  c.on('transportAttemptFailed', e => failures.push(e.transport))
  await within(Promise.race([once(c, 'connect'), once(c, 'error').then(([e]) => { throw e })]), 5000, 'connect')
  return { transport: c.transport, attempts, failures }
}

t.test('order and set of rungs', { skip: rungs.includes('unix') ? false : 'the unix rung is not available here' }, async t => {
  const server = fastsock.createServer({ transports: ALL_RUNGS }, quiet(s => s.resume()))
  await listen(server, 0, '127.0.0.1')
  t.teardown(() => server.close())
  const { port } = server.address()
  const cases = [
    [['unix', 'tcp'], 'unix', ['unix']],
    [['tcp', 'unix'], 'tcp', ['tcp']],
    ['unix,tcp', 'unix', ['unix']],
    [' tcp , unix ', 'tcp', ['tcp']],
    [['unix'], 'unix', ['unix']],
    [['tcp'], 'tcp', ['tcp']],
    [ALL_RUNGS, bestRung, [bestRung]]
  ]
  for (const [transports, expected, attempts] of cases) {
    const got = await connectWith(t, port, transports)
    t.equal(got.transport, expected, `${JSON.stringify(transports)} -> ${expected}`)
    t.same(got.attempts, attempts, `${JSON.stringify(transports)}: attempts ${attempts}`)
    t.same(got.failures, [], 'no failures')
  }
  const unavailable = fastsock.transports().filter(a => !a.available).map(a => a.name)
  if (unavailable.length) {
    const got = await connectWith(t, port, [...unavailable, 'tcp'])
    t.equal(got.transport, 'tcp', `unavailable rungs (${unavailable}) are passed over`)
    t.same(got.attempts, ['tcp'], 'without an attempt')
  }
})

t.test('a server offering only tcp', async t => {
  const server = fastsock.createServer({ transports: ['tcp'] }, s => {
    s.on('error', () => {})
    t.equal(s.transport, 'tcp', 'server side on tcp')
    s.resume()
  })
  await listen(server, 0, '127.0.0.1')
  t.teardown(() => server.close())
  const got = await connectWith(t, server.address().port, ['unix', 'tcp'])
  t.equal(got.transport, 'tcp', 'the client falls back to tcp')
  t.same(got.failures, ['unix'], 'the unix attempt failed (not offered)')
  t.same(got.attempts, ['unix', 'tcp'])
})
