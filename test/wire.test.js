'use strict'
// lib/wire.ts (dist/wire.js), the side-channel handshake codec, against docs/wire-protocol.md:
// encode/decode round trips, incremental input, malformed input, and fuzzing (decode never
// throws anything but FastsockError ERR_FASTSOCK_HANDSHAKE, never returns a message for a
// wrong magic, and never claims more bytes than it was given).
const t = require('tap')
const fc = require('fast-check')
const wire = require('../dist/wire.js')
const { FastsockError } = require('../dist/errors.js')

const TYPE = { Hello: 1, Accept: 2, Reject: 3 }
const MAGIC_BYTES = Buffer.from('FSCK', 'latin1')

/** Runs decode; returns { value } or { error }. */
function tryDecode (buf) {
  try {
    return { value: wire.decode(buf) }
  } catch (error) {
    return { error }
  }
}

function isHandshakeError (e) {
  return e instanceof FastsockError && e.code === 'ERR_FASTSOCK_HANDSHAKE'
}

const helloArb = fc.oneof(
  fc.record({ family: fc.constant(4), address: fc.uint8Array({ minLength: 4, maxLength: 4 }) }),
  fc.record({ family: fc.constant(6), address: fc.uint8Array({ minLength: 16, maxLength: 16 }) })
).chain(a => fc.record({
  family: fc.constant(a.family),
  address: fc.constant(a.address),
  capabilities: fc.integer({ min: 0, max: 0xffffffff }),
  port: fc.integer({ min: 0, max: 0xffff })
}))

t.test('constants match the specification', async t => {
  t.equal(wire.MAGIC, MAGIC_BYTES.readUInt32LE(0), "MAGIC is 'FSCK' as little-endian u32")
  t.equal(wire.PROTOCOL_VERSION, 1)
  t.equal(wire.MAX_MESSAGE_BYTES, 512)
  t.equal(wire.HELLO_BYTES, 32)
  t.equal(wire.ACCEPT_BYTES, 16)
  t.equal(wire.CAP_UNIX, 1)
  t.equal(wire.TRANSPORT_UNIX, 1)
})

t.test('HELLO layout and round trip', async t => {
  const b = wire.encodeHello({ capabilities: 0x01020304, family: 4, address: Uint8Array.from([127, 0, 0, 1]), port: 0xabcd })
  t.equal(b.length, 32)
  t.same([...b.subarray(0, 8)], [0x46, 0x53, 0x43, 0x4b, 1, 1, 32, 0], 'header: magic, version, type, length')
  t.equal(b.readUInt32LE(8), 0x01020304, 'capabilities')
  t.equal(b[12], 4, 'family')
  t.equal(b[13], 0, 'reserved')
  t.equal(b.readUInt16LE(14), 0xabcd, 'port')
  t.same([...b.subarray(16)], [127, 0, 0, 1, ...new Array(12).fill(0)], 'IPv4 address then 12 zero bytes')
  fc.assert(fc.property(helloArb, h => {
    const enc = wire.encodeHello(h)
    const d = wire.decode(enc)
    return d !== null && d.bytes === 32 && d.message.type === TYPE.Hello && d.message.version === 1 &&
      d.message.family === h.family && d.message.port === h.port && d.message.capabilities === h.capabilities >>> 0 &&
      Buffer.from(d.message.address).equals(Buffer.from(h.address))
  }))
  t.equal(wire.decode(wire.encodeHello({ capabilities: 1, family: 4, address: new Uint8Array(4), port: 1 }, 7)).message.version, 7,
    'another version parses (the receiver decides)')
})

t.test('ACCEPT layout and round trip', async t => {
  const b = wire.encodeAccept({ transport: 1, clientPort: 40001 })
  t.equal(b.length, 16)
  t.same([...b.subarray(0, 8)], [0x46, 0x53, 0x43, 0x4b, 1, 2, 16, 0])
  t.equal(b[8], 1, 'transport')
  t.equal(b[9], 0)
  t.equal(b.readUInt16LE(10), 40001, 'client port')
  t.equal(b.readUInt32LE(12), 0, 'no flags unless given (a server of the previous version sends 0)')
  t.equal(wire.encodeAccept({ transport: 2, clientPort: 1, flags: wire.ACCEPT_SHM_EARLY }).readUInt32LE(12), 1, 'ACCEPT_SHM_EARLY is bit 0 of the last u32')
  t.equal(wire.CAP_SHM_EARLY, 4, 'CAP_SHM_EARLY is HELLO capability bit 2')
  fc.assert(fc.property(fc.integer({ min: 0, max: 255 }), fc.integer({ min: 0, max: 0xffff }), fc.nat(), (transport, clientPort, flags) => {
    const d = wire.decode(wire.encodeAccept({ transport, clientPort, flags }))
    return d.bytes === 16 && d.message.type === TYPE.Accept && d.message.transport === transport && d.message.clientPort === clientPort &&
      d.message.flags === flags >>> 0
  }))
})

t.test('REJECT layout, round trip and text limit', async t => {
  const b = wire.encodeReject(2, 'busy')
  t.equal(b.length, 16)
  t.same([...b.subarray(0, 8)], [0x46, 0x53, 0x43, 0x4b, 1, 3, 16, 0])
  t.equal(b.readUInt16LE(8), 2, 'reason')
  t.equal(b.readUInt16LE(10), 4, 'text length')
  t.equal(b.toString('utf8', 12), 'busy')
  fc.assert(fc.property(fc.integer({ min: 1, max: 5 }), fc.string({ unit: 'grapheme', maxLength: 60 }), (reason, text) => {
    fc.pre(Buffer.byteLength(text) <= 256)
    const d = wire.decode(wire.encodeReject(reason, text))
    return d.message.type === TYPE.Reject && d.message.reason === reason && d.message.text === text
  }))
  const long = wire.decode(wire.encodeReject(4, 'x'.repeat(1000)))
  t.equal(long.message.text.length, 256, 'text cut at 256 bytes')
  t.equal(long.bytes, 12 + 256)
})

t.test('every proper prefix of a message needs more bytes; extra bytes are left', async t => {
  const msgs = [
    wire.encodeHello({ capabilities: 1, family: 6, address: new Uint8Array(16).fill(1), port: 9 }),
    wire.encodeAccept({ transport: 1, clientPort: 5 }),
    wire.encodeReject(1, 'version')
  ]
  if (wire.encodeShmSetup) msgs.push(wire.encodeShmSetup(1 << 20, 1 << 20, '0123456789abcdef', 1 << 18))
  if (wire.encodeShmReady) msgs.push(wire.encodeShmReady('fedcba9876543210', 1 << 18))
  for (const m of msgs) {
    for (let i = 0; i < m.length; i++) t.equal(wire.decode(m.subarray(0, i)), null, `type ${m[5]}: ${i} of ${m.length} bytes -> null`)
    const d = wire.decode(Buffer.concat([m, Buffer.from('application bytes')]))
    t.equal(d.bytes, m.length, `type ${m[5]}: consumes exactly its length`)
  }
})

t.test('malformed messages throw ERR_FASTSOCK_HANDSHAKE', async t => {
  const hello = () => wire.encodeHello({ capabilities: 1, family: 4, address: Uint8Array.from([127, 0, 0, 1]), port: 80 })
  const cases = {
    'wrong magic (4 bytes suffice)': Buffer.from('FSCX'),
    'wrong magic in a full HELLO': (() => { const b = hello(); b[0] = 0x66; return b })(),
    'length below the header': (() => { const b = hello(); b.writeUInt16LE(7, 6); return b })(),
    'length above 512': (() => { const b = hello(); b.writeUInt16LE(513, 6); return b.subarray(0, 8) })(),
    'HELLO of 33 bytes': (() => { const b = Buffer.concat([hello(), Buffer.alloc(1)]); b.writeUInt16LE(33, 6); return b })(),
    'ACCEPT of 17 bytes': (() => { const b = Buffer.concat([wire.encodeAccept({ transport: 1, clientPort: 1 }), Buffer.alloc(1)]); b.writeUInt16LE(17, 6); return b })(),
    'REJECT shorter than its head': (() => { const b = wire.encodeReject(1, ''); b.writeUInt16LE(10, 6); return b })(),
    'REJECT text length disagreeing with the length': (() => { const b = wire.encodeReject(1, 'abc'); b.writeUInt16LE(2, 10); return b })(),
    'type 0': (() => { const b = hello(); b[5] = 0; return b })(),
    'type 200': (() => { const b = hello(); b[5] = 200; return b })(),
    'HELLO with family 5': (() => { const b = hello(); b[12] = 5; return b })()
  }
  for (const [label, buf] of Object.entries(cases)) {
    const r = tryDecode(buf)
    t.ok(r.error && isHandshakeError(r.error), `${label}: ${r.error ? r.error.message : 'no error, got ' + JSON.stringify(r.value)}`)
  }
})

t.test('fuzz: random bytes', async t => {
  fc.assert(fc.property(fc.uint8Array({ maxLength: 600 }), arr => {
    const buf = Buffer.from(arr)
    const r = tryDecode(buf)
    if (r.error) return isHandshakeError(r.error)
    if (r.value === null) return true
    return r.value.bytes <= buf.length && buf.subarray(0, 4).equals(MAGIC_BYTES)
  }), { numRuns: 2000 })
  t.pass('decode returns null, a message within the input, or throws ERR_FASTSOCK_HANDSHAKE')
})

t.test('fuzz: the magic, then random header and body', async t => {
  fc.assert(fc.property(fc.integer({ min: 0, max: 255 }), fc.integer({ min: 0, max: 255 }), fc.integer({ min: 0, max: 0xffff }),
    fc.uint8Array({ maxLength: 600 }), (ver, type, len, body) => {
      const head = Buffer.alloc(8)
      MAGIC_BYTES.copy(head)
      head[4] = ver
      head[5] = type
      head.writeUInt16LE(len, 6)
      const buf = Buffer.concat([head, Buffer.from(body)])
      const r = tryDecode(buf)
      if (r.error) return isHandshakeError(r.error)
      if (r.value === null) return len <= 512 && buf.length < len
      return r.value.bytes === len && len <= buf.length && r.value.message.type === type && r.value.message.version === ver
    }), { numRuns: 3000 })
  t.pass('well-framed random messages decode or fail with ERR_FASTSOCK_HANDSHAKE only')
})

t.test('fuzz: a wrong magic never yields a message', async t => {
  fc.assert(fc.property(fc.uint8Array({ minLength: 4, maxLength: 600 }), arr => {
    const buf = Buffer.from(arr)
    fc.pre(!buf.subarray(0, 4).equals(MAGIC_BYTES))
    const r = tryDecode(buf)
    return r.error !== undefined && isHandshakeError(r.error)
  }), { numRuns: 2000 })
  t.pass('always ERR_FASTSOCK_HANDSHAKE')
})

t.test('fuzz: one corrupted byte in a valid message', async t => {
  const msgs = [
    wire.encodeHello({ capabilities: 3, family: 6, address: new Uint8Array(16).fill(7), port: 7000 }),
    wire.encodeAccept({ transport: 1, clientPort: 40000 }),
    wire.encodeReject(4, 'malformed: something')
  ]
  fc.assert(fc.property(fc.integer({ min: 0, max: msgs.length - 1 }), fc.nat(), fc.integer({ min: 0, max: 255 }), (mi, pos, val) => {
    const b = Buffer.from(msgs[mi])
    b[pos % b.length] = val
    const r = tryDecode(b)
    if (r.error) return isHandshakeError(r.error)
    return r.value === null || r.value.bytes <= b.length
  }), { numRuns: 2000 })
  t.pass('decode fails only with ERR_FASTSOCK_HANDSHAKE')
})

t.test('SHM_SETUP and SHM_READY carry the loop doorbell ids and ready-list node counts byte for byte', async t => {
  const s = wire.encodeShmSetup(1 << 16, 1 << 20, '0123456789abcdef', 0x40000)
  t.equal(s.length, 32)
  t.equal(s.subarray(16, 24).toString('hex'), 'efcdab8967452301', 'u64 little-endian at offset 16')
  t.equal(s.subarray(24).toString('hex'), '0000040000000000', 'u32 node count at offset 24, then u32 0')
  t.same(wire.decode(s).message, { type: 4, version: 1, c2sBytes: 1 << 16, s2cBytes: 1 << 20, doorbellId: '0123456789abcdef', readyNodes: 0x40000 })
  const r = wire.encodeShmReady('00000000000000ff', 0x40000)
  t.equal(r.length, 24)
  t.equal(r.subarray(8, 16).toString('hex'), 'ff00000000000000')
  t.equal(r.subarray(16).toString('hex'), '0000040000000000')
  t.same(wire.decode(r).message, { type: 5, version: 1, doorbellId: '00000000000000ff', readyNodes: 0x40000 })
  t.throws(() => wire.encodeShmReady('xyz', 1), TypeError, 'a malformed id is refused')
  t.throws(() => wire.decode(Buffer.concat([s.subarray(0, 6), Buffer.from([24, 0]), s.subarray(8, 24)])), { code: 'ERR_FASTSOCK_HANDSHAKE' },
    'the previous SHM_SETUP (24 bytes) is malformed')
})
