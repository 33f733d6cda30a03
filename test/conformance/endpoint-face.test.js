'use strict'
// The native endpoints the stream core drives (shm, verbs: the handle-less rungs) answer the
// calls they share the same way: csrc/endpoint_face.h binds those calls once for both faces.
// setPollUs's argument checks, pollStats()'s shape, a write/readInto argument that is not a
// view, and what the endpoint answers once closed (counters() keeps its last values). Against the
// endpoint itself (socket._fsShm.ep), and its native methods where lib/ overrides them in JS;
// on shm here, on verbs inside the RDMA guest (npm run test:rdma runs test/conformance there).
const t = require('tap')
const fs = require('fs')
const path = require('path')
const { native } = require('../../dist/native')
const { forEachRung, pair } = require('../helpers/rungs')
const { collectBytes, once } = require('../helpers/util')

const HANDLELESS = ['shm', 'verbs']
const SHARED = ['readable', 'writable', 'armRead', 'armWrite', 'state', 'shutdown', 'close', 'ref', 'unref', 'counters', 'setPollUs', 'pollStats']

/** The native class's prototype under `ep` (lib/ may extend the class in JS). */
function nativeProto (ep) {
  let p = Object.getPrototypeOf(ep)
  while (Object.getPrototypeOf(p) !== Object.prototype) p = Object.getPrototypeOf(p)
  return p
}

const typeError = { name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE' }
const rangeError = { name: 'RangeError', code: 'ERR_OUT_OF_RANGE' }

t.test('both faces bind the shared methods once (csrc/endpoint_face.h)', { skip: native ? false : 'no native addon' }, async t => {
  const root = path.join(__dirname, '..', '..')
  const faces = { 'csrc/shm/endpoint.cc': 'ShmEndpoint', 'csrc/rdma/verbs.cc': 'VerbsEndpoint' }
  for (const [file, cls] of Object.entries(faces)) {
    const src = fs.readFileSync(path.join(root, file), 'utf8')
    t.match(src, /AddMethods\(&props\)/, `${file} binds the shared methods through EndpointFace`)
    for (const m of SHARED) t.notMatch(src, new RegExp(`InstanceMethod\\("${m}", &${cls}::`), `${cls} binds no ${m} of its own`)
    const ctor = native[cls]
    if (ctor === undefined) {
      t.comment(`${cls}: not built here (no rdma-core headers)`)
      continue
    }
    const own = Object.getOwnPropertyNames(ctor.prototype)
    t.same(SHARED.filter(m => !own.includes(m)), [], `${cls}.prototype has every shared method`)
  }
})

forEachRung(t, async (t, rung) => {
  const { client, serverSocket } = await pair(rung, { t })
  const ep = client._fsShm.ep
  const proto = nativeProto(ep)
  const S = native.streamState

  t.test('setPollUs(us): a number in [0, 1e6]', async t => {
    for (const bad of [[], ['5'], [null], [{}], [10n]]) {
      t.throws(() => ep.setPollUs(...bad), typeError, `TypeError for (${bad.map(String).join(', ')})`)
    }
    for (const bad of [-1, -0.001, NaN, Infinity, -Infinity, 1e6 + 1]) {
      t.throws(() => ep.setPollUs(bad), rangeError, `RangeError for ${bad}`)
    }
    const before = ep.pollStats().maxUs
    for (const us of [0, 1e6, 150]) {
      ep.setPollUs(us)
      t.equal(ep.pollStats().maxUs, us, `setPollUs(${us}) sets the cap`)
    }
    ep.setPollUs(before)
  })

  t.test('pollStats() has one shape', async t => {
    const s = ep.pollStats()
    t.same(Object.keys(s).sort(), ['hits', 'hot', 'lastWaitUs', 'maxUs', 'misses', 'spinNs', 'windowUs'])
    t.type(s.hot, 'boolean')
    for (const k of ['hits', 'lastWaitUs', 'maxUs', 'misses', 'spinNs', 'windowUs']) t.type(s[k], 'number', k)
  })

  t.test('write/readInto want a TypedArray or DataView', async t => {
    for (const bad of ['bytes', 12, null, {}, new ArrayBuffer(4)]) {
      t.throws(() => ep.write(bad), typeError, `write(${Object.prototype.toString.call(bad)})`)
      t.throws(() => ep.readInto(bad), typeError, `readInto(${Object.prototype.toString.call(bad)})`)
    }
    t.throws(() => ep.write(), typeError, 'write()')
  })

  t.test('counters(), while open and after close', async t => {
    const up = Buffer.alloc(3000, 1)
    const down = Buffer.alloc(5000, 2)
    const atServer = collectBytes(serverSocket, up.length)
    const atClient = collectBytes(client, down.length)
    client.write(up)
    serverSocket.write(down)
    await Promise.all([atServer, atClient])
    t.same(ep.counters(), [up.length, down.length], 'the bytes written and read so far')
    client.destroy()
    await once(client, 'close')
    t.same(ep.counters(), [up.length, down.length], 'the same after close()')
    t.equal(client.bytesWritten, up.length, "the socket's bytesWritten agrees")
    t.equal(client.bytesRead, down.length, "the socket's bytesRead agrees")
  })

  t.test('once closed', async t => {
    const asIs = m => ep[m]()
    const natively = m => proto[m].call(ep) // under lib/'s JS overrides (shm reads state in JS)
    for (const [label, call] of [['the endpoint', asIs], ['its native class', natively]]) {
      t.equal(call('state'), S.CLOSED, `${label}: state() is CLOSED alone`)
      t.equal(call('readable'), 0, `${label}: readable() is 0`)
      t.equal(call('writable'), 0, `${label}: writable() is 0`)
    }
    t.equal(ep.armRead(), false, 'armRead() is false (retry: state() says why)')
    t.equal(ep.armWrite(), false, 'armWrite() is false')
    t.equal(ep.write(new Uint8Array(8)), 0, 'write() moves nothing')
    t.equal(ep.readInto(new Uint8Array(8)), 0, 'readInto() moves nothing')
    t.equal(ep.read(8), null, 'read() gives nothing')
    ep.shutdown()
    ep.close(true)
    ep.ref()
    ep.unref()
    ep.setPollUs(10)
    t.equal(ep.pollStats().maxUs, 10, 'setPollUs still checks and sets its cap')
    t.throws(() => ep.setPollUs(-1), rangeError, 'and still checks its argument')
    t.ok(true, 'shutdown, close, ref, unref are no-ops')
  })
}, { only: HANDLELESS })
