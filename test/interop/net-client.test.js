'use strict'
// A plain net client and a fastsock server: served over TCP, byte for byte, with the server-side
// socket reporting transport 'tcp' and Node's addresses.
const t = require('tap')
const net = require('net')
const crypto = require('crypto')
const { fastsock, ALL_RUNGS } = require('../helpers/rungs')
const { collect, listen, once, sha256 } = require('../helpers/util')

t.test('plain net client -> fastsock server', async t => {
  const up = crypto.randomBytes(3 * 1024 * 1024 + 3)
  const down = crypto.randomBytes(1024 * 1024 + 11)
  let serverSide
  let atServer
  const server = fastsock.createServer({ transports: ALL_RUNGS }, s => {
    s.on('error', err => t.fail(`server socket error: ${err.message}`))
    serverSide = s
    atServer = collect(s, 20000)
    s.end(down)
  })
  await listen(server, 0, '127.0.0.1')
  t.teardown(() => server.close())
  const c = net.connect(server.address().port, '127.0.0.1')
  t.teardown(() => c.destroy())
  const atClient = collect(c, 20000)
  await once(c, 'connect')
  c.end(up)
  const [gotUp, gotDown] = await Promise.all([atServer, atClient])
  t.equal(serverSide.transport, 'tcp')
  t.ok(serverSide instanceof fastsock.Socket, 'a fastsock Socket')
  t.equal(serverSide.remotePort, c.localPort, "the server sees the client's real port")
  t.equal(serverSide.remoteAddress, c.localAddress)
  t.equal(sha256(gotUp), sha256(up), 'client to server, byte for byte')
  t.equal(gotUp.length, up.length)
  t.equal(sha256(gotDown), sha256(down), 'server to client, byte for byte')
  t.equal(gotDown.length, down.length)
  t.equal(serverSide.bytesRead, up.length)
  t.equal(serverSide.bytesWritten, down.length)
})
