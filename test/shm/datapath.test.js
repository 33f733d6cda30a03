'use strict'
// The shm endpoint's per-message data path (lib/transports/shm/endpoint.ts, csrc/shm/endpoint.cc):
// writev moves a batch as far as the ring has room and says how far (native and JS copies,
// partial views, a full ring), readInto honours its offset, pooled reads hand out the right
// bytes, and the state read from the shared control block in JS is what the native state()
// says, through data, EOF, reset, the peer's exit and close.
const t = require('tap')
const fastsock = require('../..')
const { native } = require('../../dist/native')
const { JS_COPY_MAX_BYTES, JS_COPY_AFTER, POOLED_CHUNK_BYTES } = require('../../dist/transports/shm/endpoint')
const { rungs } = require('../helpers/rungs')
const { once, within } = require('../helpers/util')

const skip = !rungs.includes('shm') && 'shm is not available here'
const RING_BYTES = 16384

/** A connected shm pair in this process whose server side does not read: { client, server, a, b } (a, b: endpoints). */
async function pair (t) {
  let accepted
  const got = new Promise((resolve) => { accepted = resolve })
  const srv = fastsock.createServer({ transports: ['shm'], pauseOnConnect: true }, accepted)
  await new Promise((resolve) => srv.listen(0, '127.0.0.1', resolve))
  const client = fastsock.connect({ port: srv.address().port, host: '127.0.0.1', transports: ['shm'], shmRingBytes: RING_BYTES })
  client.pause()
  const server = await within(got, 10000, 'accept')
  await once(client, 'connect')
  t.equal(client.transport, 'shm')
  // Resets are part of some tests: their 'error' events are expected.
  client.on('error', () => {})
  server.on('error', () => {})
  t.teardown(() => { client.destroy(); server.destroy(); srv.close() })
  return { client, server, a: client._fsShm.ep, b: server._fsShm.ep }
}

/** Everything in `ep`'s receive ring, read with the native readInto. */
function drain (ep) {
  const out = []
  const buf = Buffer.alloc(RING_BYTES * 2)
  for (let n; (n = ep.readInto(buf)) > 0;) out.push(Buffer.from(buf.subarray(0, n)))
  return Buffer.concat(out)
}

/** `count` views of `bytes` bytes, each filled with its index (mod 251). */
function views (count, bytes) {
  const vs = []
  for (let i = 0; i < count; i++) vs.push(Buffer.alloc(bytes, i % 251))
  return vs
}

const nativeWritev = (ep, vs, i, off) => native.ShmEndpoint.prototype.writev.call(ep, vs, i, off)
const jsWritev = (ep, vs, i, off) => ep.writev(vs, i, off)

/** Makes `ep`'s writev copy from JS: its first JS_COPY_AFTER - 1 calls go to the native one (here empty batches). */
function jsCopying (t, ep) {
  for (let k = 1; k < JS_COPY_AFTER; k++) ep.writev([], 0, 0)
  t.equal(ep.tx, null, 'no view of the ring before its JS_COPY_AFTER-th writev')
}

for (const [name, writev] of [['native writev', nativeWritev], ['JS writev', jsWritev]]) {
  t.test(`${name} fills the ring and reports how far it got`, { skip }, async t => {
    const { a, b } = await pair(t)
    if (writev === jsWritev) jsCopying(t, a)
    const vs = views(300, 64) // 19200 B: more than the ring
    const want = Buffer.concat(vs)
    const first = writev(a, vs, 0, 0)
    t.equal(first, RING_BYTES, 'a batch larger than the ring moves exactly the ring')
    if (writev === jsWritev) t.type(a.tx, Uint8Array, 'the JS copy path has its view of the ring')
    t.equal(writev(a, vs, 0, 0), 0, 'a full ring takes nothing')
    t.equal(a.writable(), 0)
    t.same(drain(b), want.subarray(0, RING_BYTES), 'the bytes are the batch, in order')
    // Resume where it stopped: view 256, offset 0; then a mid-view offset.
    const rest = writev(a, vs, RING_BYTES / 64, 0)
    t.equal(rest, want.length - RING_BYTES, 'the rest of the batch')
    t.same(drain(b), want.subarray(RING_BYTES), 'and its bytes')
    t.equal(writev(a, vs, 3, 10), RING_BYTES, 'from view 3, byte 10 on, as far as it fits')
    t.same(drain(b), want.subarray(3 * 64 + 10, 3 * 64 + 10 + RING_BYTES), 'starting at that byte')
    t.equal(writev(a, [], 0, 0), 0, 'an empty batch moves nothing')
    t.equal(writev(a, [Buffer.alloc(0), Buffer.from('xy'), Buffer.alloc(0)], 0, 0), 2, 'empty views are stepped over')
    t.same(drain(b), Buffer.from('xy'))
  })
}

t.test('JS writev hands large and non-byte views to the native one, in order', { skip }, async t => {
  const { a, b } = await pair(t)
  jsCopying(t, a)
  const big = Buffer.alloc(JS_COPY_MAX_BYTES + 100, 7)
  const f64 = new Float64Array([1.5, -2, 3e300])
  const vs = [Buffer.from('head'), big, Buffer.from('mid'), f64, Buffer.from('tail')]
  const want = Buffer.concat([vs[0], big, vs[2], Buffer.from(f64.buffer), vs[4]])
  t.equal(a.writev(vs, 0, 0), want.length)
  t.same(drain(b), want, 'every view, in order, as bytes')
  // The ring nearly full: the batch stops inside the large view.
  const filler = Buffer.alloc(RING_BYTES - 1000, 1)
  t.equal(a.write(filler), filler.length)
  t.equal(a.writev(vs, 0, 0), 1000, 'stops where the ring is full')
  t.same(drain(b), Buffer.concat([filler, want.subarray(0, 1000)]))
})

t.test('native writev refuses what is not a view', { skip }, async t => {
  const { a } = await pair(t)
  t.throws(() => nativeWritev(a, 'abc', 0, 0), TypeError)
  t.throws(() => nativeWritev(a, [Buffer.from('ab'), 'c'], 0, 0), { name: 'TypeError', bytesWritten: 2 }, 'the views before it went in, and it says so')
})

t.test('readInto honours offset and maxBytes', { skip }, async t => {
  const { a, b } = await pair(t)
  a.write(Buffer.from('0123456789'))
  const into = Buffer.alloc(8, '.')
  t.equal(b.readInto(into, 2, 3), 3)
  t.equal(into.toString(), '..012...')
  t.equal(b.readInto(into, 6), 2, 'up to the end of the view')
  t.equal(into.toString(), '..012.34')
  t.equal(b.readInto(into, 100), 0, 'an offset past the view reads nothing')
  t.equal(b.readable(), 5)
})

t.test('pooled reads: small chunks share a slab, large ones do not, bytes intact', { skip }, async t => {
  const { a, b } = await pair(t)
  a.write(Buffer.from('first'))
  const c1 = b.read(65536)
  a.write(Buffer.from('second'))
  const c2 = b.read(65536)
  t.equal(c1.toString(), 'first')
  t.equal(c2.toString(), 'second')
  t.ok(Buffer.isBuffer(c1) && Buffer.isBuffer(c2))
  t.equal(c1.buffer, c2.buffer, 'two small chunks come from one slab')
  t.ok(c2.byteOffset >= c1.byteOffset + c1.length, 'without overlapping')
  t.equal(b.read(65536), null, 'an empty ring reads null')
  const big = Buffer.alloc(POOLED_CHUNK_BYTES + 1, 3)
  a.write(big)
  const c3 = b.read(65536)
  t.same(c3, big)
  t.not(c3.buffer, c1.buffer, 'a large chunk has its own memory')
  a.write(Buffer.from('abcdef'))
  t.equal(b.read(4).toString(), 'abcd', 'maxBytes holds')
  t.equal(b.read(4).toString(), 'ef')
})

t.test('the state read in JS matches the native state()', { skip }, async t => {
  const { client, server, a, b } = await pair(t)
  const S = native.streamState
  const nativeState = (ep) => native.ShmEndpoint.prototype.state.call(ep)
  const nativeReadable = (ep) => native.ShmEndpoint.prototype.readable.call(ep)
  const same = (what) => {
    for (const [side, ep] of [['client', a], ['server', b]]) {
      t.equal(ep.state(), nativeState(ep), `${what}: ${side} state ${ep.state()}`)
      t.equal(ep.readable(), nativeReadable(ep), `${what}: ${side} readable ${ep.readable()}`)
    }
  }
  same('idle')
  t.equal(b.state(), 0)
  a.write(Buffer.alloc(100))
  same('bytes waiting')
  t.equal(b.state(), S.READABLE)
  t.equal(b.readable(), 100)
  drain(b)
  same('drained')
  a.write(Buffer.alloc(10))
  a.shutdown()
  same('bytes then EOF')
  t.equal(b.state(), S.EOF | S.READABLE)
  drain(b)
  same('EOF')
  t.equal(b.state(), S.EOF)
  // The server resets: the client sees RESET, and the peer gone once the side channel closes.
  b.write(Buffer.alloc(1))
  const closed = new Promise((resolve) => client.once('close', resolve))
  client.resume()
  server.resetAndDestroy()
  await closed
  t.equal(b.state(), nativeState(b), 'closed: the same')
  t.equal(b.state(), S.CLOSED)
  t.equal(a.state(), S.CLOSED, 'the client, destroyed by the reset, is closed too')
  t.equal(a.readable(), 0)
})

t.test('the peer gone shows in the JS state as in the native one', { skip }, async t => {
  const { server, a, b } = await pair(t)
  const S = native.streamState
  const nativeState = (ep) => native.ShmEndpoint.prototype.state.call(ep)
  // The client's stream core may destroy its socket on seeing the peer gone (CLOSED then).
  const seen = new Promise((resolve) => {
    const poll = setInterval(() => {
      if (nativeState(a) & (S.GONE | S.CLOSED)) {
        clearInterval(poll)
        resolve()
      }
    }, 5)
  })
  b.close(true) // the server's endpoint goes (a reset), its side channel closes
  server.destroy()
  await within(seen, 10000, 'the client seeing the peer gone')
  t.equal(a.state(), nativeState(a), `JS and native agree (${a.state()})`)
  t.ok(a.state() & (S.GONE | S.CLOSED))
})
