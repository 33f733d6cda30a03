'use strict'
// A hostile client on the side channel (garbage, wrong magic, wrong version, wrong type, a HELLO
// that lies about the port or address, extra bytes, truncated then silent, a flood): the server
// answers REJECT (reason per docs/wire-protocol.md) or drops it, never emits 'connection' or
// 'error' for it, and keeps serving real clients on the fast rung and on TCP.
const t = require('tap')
const net = require('net')
const crypto = require('crypto')
const { fastsock, ALL_RUNGS, rungs } = require('../helpers/rungs')
const { listen, within, collect, once } = require('../helpers/util')
const { channelName } = require('../helpers/squatter')
const wire = require('../../dist/wire.js')
const native = require('node-gyp-build')(require('../helpers/util').ROOT)

const REASON = { Version: 1, Busy: 2, Forbidden: 3, Malformed: 4, NoTransport: 5 }
const TYPE = { Hello: 1, Accept: 2, Reject: 3 }
const HANDSHAKE_TIMEOUT_MS = 300

/** Opens a raw connection to the side channel `name`. */
function raw (name) {
  const fd = native.connectAbstract(name)
  if (fd < 0) throw new Error(`connectAbstract(${name}) = ${fd}`)
  const s = new net.Socket({ fd, readable: true, writable: true })
  s.on('error', () => {})
  return s
}

/** Everything the server sends back until it closes the connection. */
function replyUntilClose (s, ms = 3000) {
  return within(new Promise(resolve => {
    const chunks = []
    s.on('data', c => chunks.push(c))
    s.once('close', () => resolve(Buffer.concat(chunks)))
  }), ms, 'the server to close the hostile connection')
}

function hello (port, over = {}) {
  const b = wire.encodeHello({ capabilities: wire.CAP_UNIX, family: 4, address: Uint8Array.from([127, 0, 0, 1]), port, ...over })
  return b
}

t.test('hostile side-channel clients', { skip: rungs.includes('unix') ? false : 'the unix rung is not available here' }, async t => {
  const server = fastsock.createServer({ transports: ALL_RUNGS, handshakeTimeoutMs: HANDSHAKE_TIMEOUT_MS }, s => {
    s.on('error', () => {})
    s.pipe(s)
  })
  const connections = []
  const errors = []
  server.on('connection', s => connections.push(s.transport))
  server.on('error', e => errors.push(e))
  await listen(server, 0, '127.0.0.1')
  t.teardown(() => server.close())
  const { port } = server.address()
  const name = channelName('127.0.0.1', port)

  async function stillServes (t) {
    fastsock.clearNegativeCache()
    const c = fastsock.connect({ port, host: '127.0.0.1', transports: ['unix'] })
    await once(c, 'connect')
    t.equal(c.transport, 'unix', 'a real client still connects on unix')
    const back = collect(c)
    c.end('alive')
    t.equal((await back).toString(), 'alive', 'and is served')
    const tcp = net.connect(port, '127.0.0.1')
    const tcpBack = collect(tcp)
    tcp.end('tcp alive')
    t.equal((await tcpBack).toString(), 'tcp alive', 'TCP clients too')
    connections.length = 0
  }

  const cases = [
    ['garbage', () => { const b = crypto.randomBytes(64); b[0] = 0; return b }, REASON.Malformed],
    ['wrong magic', () => { const b = hello(port); b.write('XSCK', 0, 'latin1'); return b }, REASON.Malformed],
    ['magic alone, then a wrong byte', () => Buffer.concat([Buffer.from('FSCK'), Buffer.from([1, 1, 0xff, 0xff])]), REASON.Malformed],
    ['wrong version', () => hello(port, {}).fill(2, 4, 5), REASON.Version],
    ['ACCEPT instead of HELLO', () => wire.encodeAccept({ transport: 1, clientPort: 1234 }), REASON.Malformed],
    ['REJECT instead of HELLO', () => wire.encodeReject(4, 'no'), REASON.Malformed],
    ['HELLO of a wrong length', () => { const b = Buffer.concat([hello(port), Buffer.alloc(8)]); b.writeUInt16LE(40, 6); return b }, REASON.Malformed],
    ['HELLO with an unknown family', () => hello(port).fill(9, 12, 13), REASON.Malformed],
    ['HELLO naming another port', () => hello(port === 65535 ? 1 : port + 1), REASON.Malformed],
    ['HELLO naming a remote address', () => hello(port, { address: Uint8Array.from([192, 0, 2, 1]) }), REASON.Malformed],
    ['HELLO with no capability', () => hello(port, { capabilities: 0 }), REASON.NoTransport],
    ['HELLO followed by early bytes', () => Buffer.concat([hello(port), Buffer.from('too soon')]), REASON.Malformed]
  ]
  for (const [label, make, reason] of cases) {
    t.test(label, async t => {
      const s = raw(name)
      s.write(make())
      const reply = await replyUntilClose(s)
      const parsed = wire.decode(reply)
      t.ok(parsed, `a complete reply (${reply.length} bytes)`)
      t.equal(parsed && parsed.message.type, TYPE.Reject, 'REJECT')
      t.equal(parsed && parsed.message.reason, reason, `reason ${reason}`)
      t.equal(parsed && parsed.message.version, wire.PROTOCOL_VERSION, "the server's version")
      t.equal(parsed && parsed.bytes, reply.length, 'nothing after the REJECT')
      t.same(connections, [], "no 'connection'")
      await stillServes(t)
    })
  }

  t.test('truncated HELLO, then silence', async t => {
    const s = raw(name)
    s.write(hello(port).subarray(0, 10))
    const start = Date.now()
    const reply = await replyUntilClose(s, HANDSHAKE_TIMEOUT_MS + 3000)
    const elapsed = Date.now() - start
    t.ok(elapsed >= HANDSHAKE_TIMEOUT_MS - 50, `dropped after the handshake timeout (${elapsed} ms)`)
    if (reply.length) t.equal(wire.decode(reply).message.type, TYPE.Reject, 'anything sent back is a REJECT')
    t.same(connections, [], "no 'connection'")
    await stillServes(t)
  })

  t.test('connect and close at once', async t => {
    const s = raw(name)
    s.destroy()
    await new Promise(resolve => setTimeout(resolve, 50))
    t.same(connections, [], "no 'connection'")
    await stillServes(t)
  })

  t.test('1 MB flood of garbage', async t => {
    const s = raw(name)
    const b = crypto.randomBytes(1 << 20)
    b[0] = 0
    s.write(b)
    const reply = await replyUntilClose(s)
    t.equal(wire.decode(reply).message.reason, REASON.Malformed)
    await stillServes(t)
  })

  t.test('20 silent connections do not hold up a real client', async t => {
    const idle = []
    for (let i = 0; i < 20; i++) {
      const s = raw(name)
      s.write(hello(port).subarray(0, 5))
      idle.push(s)
    }
    t.teardown(() => idle.forEach(s => s.destroy()))
    const start = Date.now()
    await stillServes(t)
    t.ok(Date.now() - start < HANDSHAKE_TIMEOUT_MS, `served in ${Date.now() - start} ms, before the idle ones time out`)
  })

  t.test('control: a well-formed HELLO is accepted', async t => {
    const s = raw(name)
    t.teardown(() => s.destroy())
    s.write(hello(port))
    const [chunk] = await once(s, 'data')
    const parsed = wire.decode(chunk)
    t.equal(parsed.message.type, TYPE.Accept, 'ACCEPT')
    t.equal(parsed.message.transport, wire.TRANSPORT_UNIX)
    await within(new Promise(resolve => (connections.length ? resolve() : server.once('connection', resolve))), 2000, "'connection'")
    t.same(connections, ['unix'])
    const rest = chunk.subarray(parsed.bytes)
    s.write('echo me')
    let got = rest.toString()
    while (got.length < 7) got += (await once(s, 'data'))[0].toString()
    t.equal(got, 'echo me', 'then the stream carries application bytes')
    connections.length = 0
  })

  t.test('the server never emitted an error', async t => {
    t.same(errors, [])
    t.equal(server.listening, true)
  })
})
