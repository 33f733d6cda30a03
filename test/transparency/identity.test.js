'use strict'
// Identity under the hook: net.Socket is fastsock's, ES5-callable, subclassable, and sockets made
// from Node's original class still pass instanceof; registering twice changes nothing.
const t = require('tap')
const util = require('util')
const { state, net, fastsock } = require('../helpers/hook')
const tls = require('tls')
const { originals } = require('../../dist/originals.js')

t.test('net exports are fastsock\'s; net.Server is Node\'s, its prototype patched', async t => {
  t.equal(net.Socket, fastsock.Socket)
  t.equal(net.Stream, fastsock.Socket)
  // The hook's connect: fastsock's, or Node's own for a connect that goes straight to TCP.
  t.not(net.connect, originals.connect)
  t.equal(net.createConnection, net.connect)
  t.not(net.Server, fastsock.Server, 'net.Server stays Node\'s (http captured it)')
  t.ok(new net.Server() instanceof net.Server)
})

t.test('new, call without new, ES5 .call(this), class extends', async t => {
  const a = new net.Socket()
  t.equal(a.transport, null)
  t.ok(a instanceof net.Socket && a instanceof fastsock.Socket)
  const b = net.Socket() // eslint-disable-line new-cap
  t.ok(b instanceof fastsock.Socket, 'net.Socket() without new returns a new socket, as Node\'s')
  t.equal(typeof b.readInto, 'function')

  function Legacy (opts) { net.Socket.call(this, opts); this.legacy = true }
  util.inherits(Legacy, net.Socket)
  const c = new Legacy({ transports: ['tcp'] })
  t.ok(c.legacy && c instanceof Legacy && c instanceof net.Socket)
  t.same(c[Symbol.for('fastsock.socket.state')].transports, ['tcp'], 'fastsock\'s options were applied to the ES5 subclass')

  class Modern extends net.Socket { hello () { return 'hi' } }
  const d = new Modern()
  t.equal(d.hello(), 'hi')
  t.ok(d instanceof Modern && d instanceof net.Socket)
  t.notOk(new net.Socket() instanceof Modern, 'a subclass keeps the ordinary instanceof')
  t.throws(() => new net.Socket({ transports: ['nope'] }), { code: 'ERR_FASTSOCK_UNKNOWN_TRANSPORT' })
})

t.test('sockets of Node\'s original class still pass instanceof net.Socket', async t => {
  const Original = Object.getPrototypeOf(fastsock.Socket.prototype).constructor
  t.not(Original, net.Socket)
  const o = new Original()
  t.ok(o instanceof net.Socket, 'Symbol.hasInstance delegates to the original class')
  t.notOk(o instanceof fastsock.Server)
  t.equal(process.stdout instanceof net.Socket, process.stdout instanceof Original, 'stdio streams made by core: same answer as Node\'s class')
})

t.test('core subclasses stay Node\'s', async t => {
  const s = new tls.TLSSocket(null)
  t.ok(s instanceof net.Socket, 'a TLSSocket is a net.Socket')
  t.equal(s.transport, undefined, 'TLSSocket was set up before the hook: no fastsock state on it')
  s.destroy()
})

t.test('registering twice is harmless', async t => {
  const connectBefore = net.connect
  const again = require('../../dist/register.js').register()
  t.equal(again, state, 'the same state object')
  t.equal(net.connect, connectBefore, 'net.connect not wrapped again')
  const proto = Object.getPrototypeOf(fastsock.Socket.prototype)
  t.equal(proto, Object.getPrototypeOf(new net.Socket()).__proto__, 'no double wrapping')
})
