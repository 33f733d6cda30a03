'use strict'
// A zero-length readInto (lengthElements 0, an offset at the end of the view, an empty view)
// resolves at once, even when no byte is buffered or coming, and takes no bytes.
const t = require('tap')
const { forEachRung, pair } = require('../helpers/rungs')
const { within } = require('../helpers/util')

forEachRung(t, async (t, rung) => {
  const { client, serverSocket } = await pair(rung, { t })
  const view = new Uint32Array(4)
  for (const [label, call] of [
    ['offset at the end of the view', () => serverSocket.readInto(view, 4)],
    ['lengthElements 0', () => serverSocket.readInto(view, 1, 0)],
    ['an empty view', () => serverSocket.readInto(new Float64Array(0))]
  ]) {
    const got = await within(call(), 1000, `${label}: the zero-length readInto to resolve with nothing to read`).catch(e => e)
    t.notOk(got instanceof Error, `${label}: resolves at once${got instanceof Error ? ` (${got.message})` : ''}`)
  }
  const read = serverSocket.readInto(new Uint8Array(3))
  client.write('abc')
  t.equal(Buffer.from(await within(read, 2000, 'the next request')).toString(), 'abc', 'the next request gets the next bytes')
})
