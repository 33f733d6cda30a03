'use strict'
// Without tcp in the chain and no rung connecting: 'error' with an AggregateError, code
// ERR_FASTSOCK_ALL_TRANSPORTS_FAILED, then 'close' with hadError; no 'connect', and nothing is
// sent to the TCP port.
const t = require('tap')
const net = require('net')
const { fastsock, rungs } = require('../helpers/rungs')
const { listen, once, closedPort, sleep, quiet } = require('../helpers/util')

const skip = rungs.includes('unix') ? false : 'the unix rung is not available here'

async function expectAllFailed (t, port) {
  const c = fastsock.connect({ port, host: '127.0.0.1', transports: ['unix'] })
  let connected = false
  c.on('connect', () => { connected = true })
  const [err] = await once(c, 'error')
  const [hadError] = await once(c, 'close')
  t.ok(err instanceof AggregateError, 'an AggregateError')
  t.equal(err.code, 'ERR_FASTSOCK_ALL_TRANSPORTS_FAILED')
  t.ok(Array.isArray(err.errors), 'with an errors array')
  t.match(err.message, String(port), 'the message names the destination')
  t.equal(hadError, true, "'close' with hadError")
  t.equal(connected, false, "no 'connect'")
  t.equal(c.destroyed, true)
  return err
}

t.test('plain net server', { skip }, async t => {
  fastsock.clearNegativeCache()
  let tcpConnections = 0
  const server = net.createServer(quiet(s => { tcpConnections++; s.destroy() }))
  await listen(server, 0, '127.0.0.1')
  t.teardown(() => server.close())
  await expectAllFailed(t, server.address().port)
  await sleep(50)
  t.equal(tcpConnections, 0, 'no TCP connection was made')
})

t.test('nobody listening', { skip }, async t => {
  fastsock.clearNegativeCache()
  await expectAllFailed(t, await closedPort())
})

t.test('a fast rung that is not available here', async t => {
  const unavailable = fastsock.transports().filter(a => !a.available).map(a => a.name)
  if (unavailable.length === 0) return t.skip('every rung is available here')
  const server = fastsock.createServer(quiet(s => s.destroy()))
  await listen(server, 0, '127.0.0.1')
  t.teardown(() => server.close())
  const c = fastsock.connect({ port: server.address().port, host: '127.0.0.1', transports: unavailable })
  const [err] = await once(c, 'error')
  t.equal(err.code, 'ERR_FASTSOCK_ALL_TRANSPORTS_FAILED')
})
