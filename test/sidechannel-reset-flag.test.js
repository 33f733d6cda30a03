'use strict'
// The unix rung's reset flag on the wire (docs/wire-protocol.md, "Reset flag"): a HELLO with
// CAP_UNIX_RESET gets an eventfd with ACCEPT(unix), which the server raises when it resets the
// connection (before its end of the stream closes); a HELLO without it gets ACCEPT alone, as
// before (a client that predates the flag).
const t = require('tap')
const path = require('path')
const { rungs } = require('./helpers/rungs')
const { listen, once, within } = require('./helpers/util')
const fastsock = require('..')
const native = require('node-gyp-build')(path.join(__dirname, '..'))
const wire = require('../dist/wire.js')
const { channelName } = require('../dist/sidechannel/names.js')

const skip = !rungs.includes('unix') && 'unix is not available here'

/** HELLO on a raw side channel to the server on `port`; resolves with ACCEPT, its fds, and the fd. */
function handshake (port, capabilities) {
  const fd = native.connectAbstract(channelName('127.0.0.1', port))
  if (fd < 0) throw new Error(`side channel: ${fd}`)
  const hello = wire.encodeHello({ capabilities, family: 4, address: Uint8Array.from([127, 0, 0, 1]), port })
  if (native.sendFds(fd, hello, []) !== hello.length) throw new Error('HELLO not sent')
  return within(new Promise((resolve, reject) => {
    native.waitReadable(fd, 3000, status => {
      if (status < 0) return reject(new Error(`waitReadable ${status}`))
      const r = native.recvFds(fd, wire.ACCEPT_BYTES, 4)
      if (typeof r === 'number') return reject(new Error(`recvFds ${r}`))
      resolve({ fd, accept: wire.decode(r.bytes).message, fds: r.fds })
    })
  }), 4000, 'ACCEPT')
}

/** Resolves once `fd` reads the end of the stream (0 bytes). */
function eof (fd) {
  return within(new Promise((resolve, reject) => {
    const step = () => native.waitReadable(fd, 3000, status => {
      if (status < 0) return reject(new Error(`waitReadable ${status}`))
      const r = native.recvFds(fd, 512, 0)
      if (typeof r === 'number') return r === -11 ? step() : reject(new Error(`recvFds ${r}`))
      if (r.bytes.length === 0) return resolve()
      step()
    })
    step()
  }), 4000, 'the end of the stream')
}

t.test('with CAP_UNIX_RESET: an eventfd with ACCEPT, raised by the server\'s resetAndDestroy()', { skip }, async t => {
  const server = fastsock.createServer({ transports: ['unix'] })
  t.teardown(() => server.close())
  await listen(server, 0, '127.0.0.1')
  const port = server.address().port
  const conn = once(server, 'connection')
  const h = await handshake(port, wire.CAP_UNIX | wire.CAP_UNIX_RESET)
  t.equal(h.accept.transport, wire.TRANSPORT_UNIX, 'ACCEPT(unix)')
  t.equal(h.fds.length, 1, 'one fd with it')
  t.ok(native.isEventfd(h.fds[0]), 'an eventfd')
  const [s] = await conn
  t.equal(native.eventFlagTake(h.fds[0]), 0, 'not raised while the connection lives')
  s.resetAndDestroy()
  await eof(h.fd)
  t.equal(native.eventFlagTake(h.fds[0]), 1, 'raised by the time the stream ends')
  native.closeFd(h.fds[0])
  native.closeFd(h.fd)
})

t.test('without CAP_UNIX_RESET: ACCEPT(unix) alone, as before', { skip }, async t => {
  const server = fastsock.createServer({ transports: ['unix'] })
  t.teardown(() => server.close())
  await listen(server, 0, '127.0.0.1')
  const port = server.address().port
  const conn = once(server, 'connection')
  const h = await handshake(port, wire.CAP_UNIX)
  t.equal(h.accept.transport, wire.TRANSPORT_UNIX, 'ACCEPT(unix)')
  t.equal(h.fds.length, 0, 'no fd')
  const [s] = await conn
  s.resetAndDestroy()
  await eof(h.fd)
  t.pass('the reset reaches this client as the end of the stream')
  native.closeFd(h.fd)
})
