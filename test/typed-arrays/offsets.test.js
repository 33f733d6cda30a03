'use strict'
// Views into a shared ArrayBuffer at element offsets, subarray windows, and the
// offsetElements/lengthElements arguments: exactly the addressed bytes move, nothing around them.
const t = require('tap')
const { forEachRung, pair } = require('../helpers/rungs')
const { bytesOf } = require('../helpers/typed')
const crypto = require('crypto')

const SENTINEL = 0xa5

forEachRung(t, async (t, rung) => {
  const { client, serverSocket } = await pair(rung, { t })

  t.test('writing a view at an offset into a larger buffer sends only its bytes', async t => {
    const ab = new ArrayBuffer(1024)
    new Uint8Array(ab).set(crypto.randomBytes(1024))
    const views = [
      new Float64Array(ab, 8 * 5, 10),
      new Int32Array(ab, 4 * 3, 7).subarray(2, 5),
      new Uint16Array(ab, 2 * 101, 33),
      new BigUint64Array(ab, 8 * 100, 2),
      new DataView(ab, 333, 17)
    ]
    for (const v of views) {
      const read = serverSocket.readInto(new Uint8Array(v.byteLength))
      client.write(v)
      t.ok(Buffer.from(await read).equals(bytesOf(v)), `${v.constructor.name} at byte ${v.byteOffset}, ${v.byteLength} bytes`)
    }
  })

  t.test('offsetElements/lengthElements fill exactly that range', async t => {
    const ab = new ArrayBuffer(512)
    const all = new Uint8Array(ab).fill(SENTINEL)
    const view = new Float64Array(ab, 16, 20) // bytes 16..176 of ab
    const payload = crypto.randomBytes(6 * 8)
    const read = serverSocket.readInto(view, 4, 6) // elements 4..9: bytes 48..96 of ab
    client.write(payload)
    t.equal(await read, view, 'resolves with the view')
    t.ok(Buffer.from(ab, 48, 48).equals(payload), 'the range holds the bytes')
    t.ok(all.subarray(0, 48).every(b => b === SENTINEL), 'nothing before it changed')
    t.ok(all.subarray(96).every(b => b === SENTINEL), 'nothing after it changed')
  })

  t.test('offsetElements alone fills to the end of the view', async t => {
    const view = new Int16Array(10).fill(-1)
    const read = serverSocket.readInto(view, 7)
    client.write(new Int16Array([100, 200, 300]))
    await read
    t.same(Array.from(view), [-1, -1, -1, -1, -1, -1, -1, 100, 200, 300])
  })

  t.test('a DataView window: elements are bytes', async t => {
    const ab = new ArrayBuffer(64)
    new Uint8Array(ab).fill(SENTINEL)
    const dv = new DataView(ab, 5, 40)
    const read = serverSocket.readInto(dv, 3, 7)
    client.write('1234567')
    await read
    t.equal(Buffer.from(ab, 8, 7).toString(), '1234567')
    t.equal(new Uint8Array(ab)[7], SENTINEL)
    t.equal(new Uint8Array(ab)[15], SENTINEL)
  })

  t.test('callback forms', async t => {
    const v1 = new Float32Array(2)
    const r1 = new Promise((resolve, reject) => serverSocket.readInto(v1, (err, v) => (err ? reject(err) : resolve(v))))
    const v2 = new Int8Array(6).fill(9)
    const r2 = new Promise((resolve, reject) => serverSocket.readInto(v2, 2, 3, (err, v) => (err ? reject(err) : resolve(v))))
    t.equal(serverSocket.readInto(new Uint8Array(0), () => {}), undefined, 'the callback form returns undefined')
    client.write(new Float32Array([1.5, -2.25]))
    client.write(new Int8Array([-1, -2, -3]))
    t.equal(await r1, v1, 'callback(null, view)')
    t.same(Array.from(v1), [1.5, -2.25])
    t.equal(await r2, v2)
    t.same(Array.from(v2), [9, 9, -1, -2, -3, 9])
  })
})
