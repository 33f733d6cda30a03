'use strict'
// write() takes every TypedArray type and DataView and sends its raw bytes; readInto() of the
// same type at the other end gets the identical bytes (and so the same values), both directions.
const t = require('tap')
const { forEachRung, pair } = require('../helpers/rungs')
const { VIEW_TYPES, randomView, bytesOf } = require('../helpers/typed')

const N = 1001

forEachRung(t, async (t, rung) => {
  const { client, serverSocket } = await pair(rung, { t })
  for (const T of VIEW_TYPES) {
    for (const [dir, writer, reader] of [['client to server', client, serverSocket], ['server to client', serverSocket, client]]) {
      const sent = randomView(T, N)
      const expected = Buffer.from(bytesOf(sent)) // before the write, in case it were altered
      const target = new T(new ArrayBuffer(sent.byteLength))
      const read = reader.readInto(target)
      t.equal(writer.write(sent) !== undefined, true, 'write() returns')
      const got = await read
      t.equal(got, target, `${T.name} ${dir}: resolves with the view itself`)
      t.ok(bytesOf(got).equals(expected), `${T.name} ${dir}: identical bytes`)
      if (T !== DataView && !(T === Float32Array || T === Float64Array)) {
        t.same(Array.from(got), Array.from(sent), `${T.name} ${dir}: the same values`)
      }
    }
  }
  const last = randomView(Float64Array, 3)
  const read = serverSocket.readInto(new Float64Array(3))
  client.end(last)
  t.ok(bytesOf(await read).equals(bytesOf(last)), 'end(typedArray) sends the bytes too')
})
