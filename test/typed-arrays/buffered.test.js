'use strict'
// readInto after bytes are already buffered in the socket: they are taken first, then the rest
// of the request comes from bytes that arrive later.
const t = require('tap')
const { forEachRung, pair } = require('../helpers/rungs')
const { waitFor } = require('../helpers/util')
const { randomView, bytesOf } = require('../helpers/typed')

forEachRung(t, async (t, rung) => {
  const { client, serverSocket } = await pair(rung, { t })
  const sent = randomView(Uint8Array, 300)
  client.write(sent.subarray(0, 100))
  await waitFor(() => serverSocket.readableLength === 100, 3000, '100 bytes buffered')
  const a = await serverSocket.readInto(new Uint8Array(60))
  t.ok(bytesOf(a).equals(bytesOf(sent.subarray(0, 60))), 'first 60 from the buffer')
  t.equal(serverSocket.readableLength, 40, '40 left buffered')
  const b = serverSocket.readInto(new Uint8Array(140)) // 40 buffered + 100 to come
  t.equal(serverSocket.readableLength, 0, 'the buffered bytes were taken at once')
  client.write(sent.subarray(100, 200))
  t.ok(bytesOf(await b).equals(bytesOf(sent.subarray(60, 200))), 'buffered bytes first, then new ones')
  client.write(sent.subarray(200))
  await waitFor(() => serverSocket.readableLength === 100, 3000, 'the last 100 buffered')
  const c = await serverSocket.readInto(new Float32Array(25)) // 100 bytes as floats
  t.ok(bytesOf(c).equals(bytesOf(sent.subarray(200))), 'into another type')
})
