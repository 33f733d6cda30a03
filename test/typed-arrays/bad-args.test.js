'use strict'
// Bad readInto arguments throw at once: TypeError for something that is not a view, RangeError
// ERR_OUT_OF_RANGE for an offset or length outside the view; nothing is consumed.
const t = require('tap')
const { forEachRung, pair } = require('../helpers/rungs')

forEachRung(t, async (t, rung) => {
  const { client, serverSocket } = await pair(rung, { t })
  for (const bad of ['string', [1, 2, 3], new ArrayBuffer(8), null, undefined, {}, 42, Buffer.from('x').buffer]) {
    t.throws(() => serverSocket.readInto(bad), TypeError, `TypeError for ${Object.prototype.toString.call(bad)}`)
  }
  const v = new Float64Array(4)
  const range = [[-1], [1.5], [5], [NaN], ['1'], [0, 5], [2, 3], [0, -1], [4, 1], [0, 0.5], [1, Infinity]]
  for (const args of range) {
    t.throws(() => serverSocket.readInto(v, ...args), { name: 'RangeError', code: 'ERR_OUT_OF_RANGE' }, `RangeError for (view, ${args.join(', ')})`)
  }
  t.throws(() => serverSocket.readInto(new DataView(new ArrayBuffer(4)), 5), { code: 'ERR_OUT_OF_RANGE' }, 'DataView: offset in bytes')
  t.throws(() => serverSocket.readInto(v, 0, 5, () => {}), { code: 'ERR_OUT_OF_RANGE' }, 'thrown, not passed to the callback')
  const read = serverSocket.readInto(new Uint8Array(4))
  client.write('okay')
  t.equal(Buffer.from(await read).toString(), 'okay', 'nothing was consumed by the bad calls')
})
