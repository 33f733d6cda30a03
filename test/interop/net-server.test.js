'use strict'
// A fastsock client and a plain net server: the client uses TCP and the bytes are exactly the
// application's, both ways (checksums; nothing of fastsock's on the wire).
const t = require('tap')
const net = require('net')
const crypto = require('crypto')
const { fastsock } = require('../helpers/rungs')
const { collect, listen, once, sha256 } = require('../helpers/util')

t.test('fastsock client -> plain net server', async t => {
  const up = crypto.randomBytes(3 * 1024 * 1024 + 17)
  const down = crypto.randomBytes(2 * 1024 * 1024 + 5)
  let atServer
  const server = net.createServer(s => {
    s.on('error', err => t.fail(`server socket error: ${err.message}`))
    atServer = collect(s, 20000)
    s.end(down)
  })
  await listen(server, 0, '127.0.0.1')
  t.teardown(() => server.close())
  const c = fastsock.connect({ port: server.address().port, host: '127.0.0.1' }) // default chain
  t.teardown(() => c.destroy())
  const atClient = collect(c, 20000)
  await once(c, 'connect')
  t.equal(c.transport, 'tcp', 'no side channel to find: tcp')
  c.end(up)
  const [gotUp, gotDown] = await Promise.all([atServer, atClient])
  t.equal(gotUp.length, up.length, 'server received exactly the bytes written')
  t.equal(sha256(gotUp), sha256(up))
  t.equal(gotDown.length, down.length)
  t.equal(sha256(gotDown), sha256(down))
  t.equal(c.bytesWritten, up.length)
  t.equal(c.bytesRead, down.length)
})
