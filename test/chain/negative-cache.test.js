'use strict'
// The negative cache: after a failed unix attempt (an unverifiable side channel) the next connect
// to that destination does not attempt unix again (no 'transportAttempt' for it, no new
// connection to the squatter); clearNegativeCache() brings the attempt back.
const t = require('tap')
const net = require('net')
const { fastsock, rungs } = require('../helpers/rungs')
const { listen, once, within, quiet } = require('../helpers/util')
const { squat } = require('../helpers/squatter')

async function connectOnce (t, port) {
  const c = fastsock.connect({ port, host: '127.0.0.1', transports: ['unix', 'tcp'] })
  t.teardown(() => c.destroy())
  const attempts = []
  const failures = []
  c.on('transportAttempt', e => attempts.push(e.transport))
  c.on('transportAttemptFailed', e => failures.push(e.error.code))
  await within(Promise.race([once(c, 'connect'), once(c, 'error').then(([e]) => { throw e })]), 5000, 'connect')
  t.equal(c.transport, 'tcp')
  c.destroy()
  return { attempts, failures }
}

t.test('failed attempts are cached per destination', { skip: rungs.includes('unix') ? false : 'the unix rung is not available here' }, async t => {
  fastsock.clearNegativeCache()
  const server = net.createServer(quiet(s => s.resume()))
  await listen(server, 0, '127.0.0.1')
  t.teardown(() => server.close())
  const { port } = server.address()
  const squatter = await squat(t, '127.0.0.1', port)

  const first = await connectOnce(t, port)
  t.same(first.attempts, ['unix', 'tcp'], 'first connect attempts unix')
  t.same(first.failures, ['ERR_FASTSOCK_UNVERIFIED_PEER'])
  t.equal((await squatter.report()).connections, 1, 'the squatter saw one connection attempt')

  const second = await connectOnce(t, port)
  t.equal(second.attempts.includes('unix'), false, `second connect skips unix (attempts: ${second.attempts})`)
  t.same(second.failures, [], 'and reports no new failure')
  t.equal((await squatter.report()).connections, 1, 'the squatter was not contacted again')

  fastsock.clearNegativeCache()
  const third = await connectOnce(t, port)
  t.same(third.attempts, ['unix', 'tcp'], 'after clearNegativeCache() unix is attempted again')
  t.same(third.failures, ['ERR_FASTSOCK_UNVERIFIED_PEER'])
  // The squatter counts an attempt when its loop accepts it, which may come after it answers a
  // report asked for right away: ask again until it shows (2 s at most).
  let r = await squatter.report()
  for (const until = Date.now() + 2000; r.connections < 2 && Date.now() < until;) {
    await new Promise(resolve => setTimeout(resolve, 20))
    r = await squatter.report()
  }
  t.equal(r.connections, 2, 'the squatter saw the new attempt')
  t.equal(r.bytes, 0, 'and never a byte')
  fastsock.clearNegativeCache()
})

t.test('the cache is per destination', { skip: rungs.includes('unix') ? false : 'the unix rung is not available here' }, async t => {
  fastsock.clearNegativeCache()
  const plain = net.createServer(quiet(s => s.resume()))
  await listen(plain, 0, '127.0.0.1')
  t.teardown(() => plain.close())
  await squat(t, '127.0.0.1', plain.address().port)
  await connectOnce(t, plain.address().port) // caches a failure for this port
  const server = fastsock.createServer(quiet(s => s.resume()))
  await listen(server, 0, '127.0.0.1')
  t.teardown(() => server.close())
  const c = fastsock.connect({ port: server.address().port, host: '127.0.0.1', transports: ['unix', 'tcp'] })
  t.teardown(() => c.destroy())
  await once(c, 'connect')
  t.equal(c.transport, 'unix', 'another port on the same host still gets unix')
  fastsock.clearNegativeCache()
})

t.test('"not offered" is cached briefly: a fastsock server that starts later is found', { skip: rungs.includes('unix') ? false : 'the unix rung is not available here' }, async t => {
  fastsock.clearNegativeCache()
  const plain = net.createServer(quiet(s => s.resume()))
  await listen(plain, 0, '127.0.0.1')
  const { port } = plain.address()
  const first = await connectOnce(t, port)
  t.same(first.failures, ['ERR_FASTSOCK_NOT_OFFERED'], 'no side channel at first')
  await new Promise(resolve => plain.close(resolve))
  const server = fastsock.createServer({ transports: ['unix', 'tcp'] }, quiet(s => s.resume()))
  await listen(server, port, '127.0.0.1')
  t.teardown(() => server.close())
  const second = await connectOnce(t, port)
  t.same(second.attempts, ['tcp'], 'right after: still cached, tcp without an attempt')
  await new Promise(resolve => setTimeout(resolve, 1100))
  const c = fastsock.connect({ port, host: '127.0.0.1', transports: ['unix', 'tcp'] })
  t.teardown(() => c.destroy())
  await once(c, 'connect')
  t.equal(c.transport, 'unix', 'a second later the new side channel is found')
  fastsock.clearNegativeCache()
})
