'use strict'
// Node's onread option, extended to any typed array: bytes land in the caller's Float64Array
// (or the array a buffer function returns), the callback gets (nbytes, thatArray), no 'data' is
// emitted, and readInto is unavailable (ERR_FASTSOCK_READINTO).
const t = require('tap')
const { forEachRung, pair } = require('../helpers/rungs')
const { randomView, bytesOf } = require('../helpers/typed')
const { waitFor } = require('../helpers/util')

forEachRung(t, async (t, rung) => {
  t.test('a Float64Array buffer', async t => {
    const buffer = new Float64Array(16) // 128 bytes per read at most
    const got = []
    const views = new Set()
    let dataEvents = 0
    const { client, serverSocket } = await pair(rung, {
      t,
      clientOptions: {
        onread: {
          buffer,
          callback (n, view) {
            views.add(view)
            got.push(Buffer.from(new Uint8Array(view.buffer, view.byteOffset, n))) // a copy: the buffer is reused
          }
        }
      }
    })
    client.on('data', () => dataEvents++)
    t.throws(() => client.readInto(new Uint8Array(1)), { code: 'ERR_FASTSOCK_READINTO' }, 'no readInto with onread')
    const sent = randomView(Float64Array, 1000)
    serverSocket.write(sent)
    await waitFor(() => got.reduce((a, b) => a + b.length, 0) >= sent.byteLength, 5000, 'every byte')
    t.ok(Buffer.concat(got).equals(bytesOf(sent)), 'the bytes, in order')
    t.ok(got.every(b => b.length <= buffer.byteLength), 'each read fits the buffer')
    t.same([...views], [buffer], 'the callback always gets the caller\'s Float64Array')
    t.equal(dataEvents, 0, "no 'data'")
  })

  t.test('a buffer function returning an odd-sized Int32Array', async t => {
    const handed = []
    const got = []
    const strays = []
    const { client, serverSocket } = await pair(rung, {
      t,
      clientOptions: {
        onread: {
          buffer: () => { const a = new Int32Array(7); handed.push(a); return a },
          callback (n, view) {
            if (!handed.includes(view)) {
              strays.push(`${n} bytes with ${view === null ? 'null' : Object.prototype.toString.call(view)}`)
              return
            }
            got.push(Buffer.from(new Uint8Array(view.buffer, view.byteOffset, n))) // a copy: the buffer is reused
          }
        }
      }
    })
    const sent = randomView(Uint8Array, 3001)
    serverSocket.write(sent)
    await waitFor(() => strays.length > 0 || got.reduce((a, b) => a + b.length, 0) >= sent.byteLength, 5000, 'every byte')
    t.same(strays, [], 'the callback only ever gets arrays the buffer function returned')
    t.ok(Buffer.concat(got).equals(bytesOf(sent)), 'the bytes, in order')
    t.ok(got.every(b => b.length <= 28), 'reads of at most 28 bytes')
  })
})
