'use strict'
// A squatter (a second process that bound the exact side-channel name first) must get nothing:
// the client cannot verify it owns the TCP listener, so it lands on tcp, its data reaches the
// real server over TCP, and the squatter receives zero bytes. The squatter must be reached (one
// connection) for the test to mean anything.
const t = require('tap')
const net = require('net')
const crypto = require('crypto')
const { fastsock, ALL_RUNGS, rungs } = require('../helpers/rungs')
const { listen, once, collect, sha256, closedPort, within, sleep } = require('../helpers/util')
const { squat } = require('../helpers/squatter')

const skip = rungs.includes('unix') ? false : 'the unix rung is not available here'

/** Sends `data` through a default-chain fastsock client and returns what came back and how. */
async function roundTrip (t, port, data, transports) {
  const c = fastsock.connect({ port, host: '127.0.0.1', ...(transports ? { transports } : {}) })
  t.teardown(() => c.destroy())
  const failures = []
  c.on('transportAttemptFailed', e => failures.push(`${e.transport}:${e.error.code}`))
  await within(Promise.race([once(c, 'connect'), once(c, 'error').then(([e]) => { throw e })]), 5000, 'connect')
  const back = collect(c)
  c.end(data)
  return { transport: c.transport, back: await back, failures }
}

t.test('squatter on the name of a plain net server\'s port', { skip }, async t => {
  fastsock.clearNegativeCache()
  const server = net.createServer(s => { s.on('error', () => {}); s.pipe(s) })
  await listen(server, 0, '127.0.0.1')
  t.teardown(() => server.close())
  const { port } = server.address()
  const squatter = await squat(t, '127.0.0.1', port)
  const data = crypto.randomBytes(100000)
  const r = await roundTrip(t, port, data)
  t.equal(r.transport, 'tcp', 'the client fell back to tcp')
  t.ok(r.failures.some(f => f.endsWith('ERR_FASTSOCK_UNVERIFIED_PEER')), `verification failed (${r.failures})`)
  t.equal(sha256(r.back), sha256(data), 'the data went to the real server and back')
  await sleep(50)
  const rep = await squatter.report()
  t.ok(rep.connections >= 1, 'the squatter was reached')
  t.equal(rep.bytes, 0, 'and received zero bytes')
  fastsock.clearNegativeCache()
})

t.test('squatter first, then a fastsock server on that port (its side channel bind fails)', { skip }, async t => {
  fastsock.clearNegativeCache()
  const port = await closedPort()
  const squatter = await squat(t, '127.0.0.1', port)
  let serverSide
  const server = fastsock.createServer({ transports: ALL_RUNGS }, s => { serverSide = s; s.on('error', () => {}); s.pipe(s) })
  await listen(server, 0 + port, '127.0.0.1')
  t.teardown(() => server.close())
  const data = crypto.randomBytes(50000)
  const r = await roundTrip(t, port, data)
  t.equal(r.transport, 'tcp', 'the client landed on tcp')
  t.equal(serverSide.transport, 'tcp', 'the real server served it over tcp')
  t.equal(sha256(r.back), sha256(data), 'byte for byte')
  t.ok(r.failures.some(f => f.endsWith('ERR_FASTSOCK_UNVERIFIED_PEER')), `verification failed (${r.failures})`)
  const rep = await squatter.report()
  t.ok(rep.connections >= 1, 'the squatter was reached')
  t.equal(rep.bytes, 0, 'and received zero bytes')
  fastsock.clearNegativeCache()
})

t.test('squatter on the exact name of a server listening on 0.0.0.0', { skip }, async t => {
  fastsock.clearNegativeCache()
  const port = await closedPort('0.0.0.0')
  const squatter = await squat(t, '127.0.0.1', port)
  const server = fastsock.createServer({ transports: ALL_RUNGS }, s => { s.on('error', () => {}); s.pipe(s) })
  await listen(server, port, '0.0.0.0')
  t.teardown(() => server.close())
  const data = crypto.randomBytes(50000)
  const r = await roundTrip(t, port, data)
  t.equal(sha256(r.back), sha256(data), `data served by the real server (over ${r.transport}; failures: ${r.failures})`)
  const rep = await squatter.report()
  t.equal(rep.bytes, 0, 'the squatter received zero bytes')
  fastsock.clearNegativeCache()
})

t.test('a unix-only client and a squatter: an error, nothing sent', { skip }, async t => {
  fastsock.clearNegativeCache()
  const server = net.createServer(s => { s.on('error', () => {}); s.resume() })
  await listen(server, 0, '127.0.0.1')
  t.teardown(() => server.close())
  const { port } = server.address()
  const squatter = await squat(t, '127.0.0.1', port)
  const c = fastsock.connect({ port, host: '127.0.0.1', transports: ['unix'] })
  c.write('secret')
  const [err] = await once(c, 'error')
  t.equal(err.code, 'ERR_FASTSOCK_ALL_TRANSPORTS_FAILED')
  t.same(err.errors.map(e => e.code), ['ERR_FASTSOCK_UNVERIFIED_PEER'])
  const rep = await squatter.report()
  t.equal(rep.connections, 1, 'the squatter was reached')
  t.equal(rep.bytes, 0, 'and received zero bytes')
  fastsock.clearNegativeCache()
})
