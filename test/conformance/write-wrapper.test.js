'use strict'
// Wrapping `socket.write` as logging and APM shims do (`const o = s.write; s.write = (...a) =>
// o.apply(s, a)`), once or twice over, on both ends: the wrapper is what `socket.write` reads,
// every write goes through it once, the bytes arrive, typed arrays still go out as their bytes.
// Also Socket.prototype.write wrapped for every socket, as shimmer does.
// (Node's own test-http-response-cork.js wraps `res.socket.write` this way.)
const t = require('tap')
const { forEachRung, pair, fastsock } = require('../helpers/rungs')
const { collectBytes } = require('../helpers/util')

/** Wraps `sock.write` with a counting shim; returns the calls it saw. */
function shim (sock) {
  const calls = []
  const original = sock.write
  const wrapper = (...args) => {
    calls.push(args[0])
    return original.apply(sock, args)
  }
  sock.write = wrapper
  return { calls, wrapper }
}

forEachRung(t, async (t, rung) => {
  const { client, serverSocket } = await pair(rung, { t })
  const inner = shim(client)
  const outer = shim(client) // a second shim over the first
  t.equal(client.write, outer.wrapper, 'socket.write reads the assigned wrapper')
  const got = collectBytes(serverSocket, 9)
  const u16 = new Uint16Array([0x6564, 0x6766])
  client.write('abc')
  client.write(u16)
  client.write(Buffer.from('hi'), () => {})
  t.equal((await got).toString('latin1'), 'abc' + Buffer.from(u16.buffer).toString('latin1') + 'hi')
  t.equal(outer.calls.length, 3, 'the outer shim saw every write once')
  t.equal(inner.calls.length, 3, 'the inner shim saw every write once')

  const server = shim(serverSocket)
  const back = collectBytes(client, 4)
  serverSocket.write('pong')
  t.equal((await back).toString(), 'pong')
  t.equal(server.calls.length, 1)
})

// shimmer-style: Socket.prototype.write wrapped for every socket, then restored.
forEachRung(t, async (t, rung) => {
  const proto = fastsock.Socket.prototype
  const original = proto.write
  t.teardown(() => { proto.write = original })
  t.equal(typeof original, 'function', 'Socket.prototype.write reads as a function')
  let calls = 0
  proto.write = function (...args) {
    calls++
    return original.apply(this, args)
  }
  const { client, serverSocket } = await pair(rung, { t })
  const got = collectBytes(serverSocket, 6)
  client.write('pro')
  client.write(new Uint8Array([0x74, 0x6f, 0x21]))
  t.equal((await got).toString(), 'proto!')
  t.ok(calls >= 2, 'the prototype wrapper saw the writes')
  proto.write = original
  t.equal(proto.write, original, 'unwrapped')
})
