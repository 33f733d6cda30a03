'use strict'
// Connecting to a closed port fails with ECONNREFUSED, the same error net gives (code, syscall,
// address, port). A fast rung that finds no side channel there steps aside for TCP.
const t = require('tap')
const net = require('net')
const { forEachRung, fastsock } = require('../helpers/rungs')
const { closedPort, once } = require('../helpers/util')

forEachRung(t, async (t, rung) => {
  const port = await closedPort()
  const [netErr] = await once(net.connect(port, '127.0.0.1'), 'error')
  const transports = rung === 'tcp' ? ['tcp'] : [rung, 'tcp']
  const c = fastsock.connect({ port, host: '127.0.0.1', transports })
  let connected = false
  c.on('connect', () => { connected = true })
  const [err] = await once(c, 'error')
  const [hadError] = await once(c, 'close')
  t.equal(connected, false, "no 'connect'")
  t.equal(err.code, 'ECONNREFUSED')
  t.equal(err.code, netErr.code, 'same code as net')
  t.equal(err.syscall, netErr.syscall, 'same syscall as net')
  t.equal(err.errno, netErr.errno, 'same errno as net')
  t.equal(err.address, '127.0.0.1')
  t.equal(err.port, port)
  t.equal(hadError, true, "'close' with hadError")
  t.equal(c.transport, 'tcp', 'the error is TCP\'s own')
})
