'use strict'
// bytesRead/bytesWritten count the application's bytes on both ends, nothing else (no
// handshake bytes), while open and after close.
const t = require('tap')
const crypto = require('crypto')
const { forEachRung, pair } = require('../helpers/rungs')
const { collect, once } = require('../helpers/util')

forEachRung(t, async (t, rung) => {
  const { client, serverSocket } = await pair(rung, { t })
  t.equal(client.bytesRead, 0, 'client bytesRead 0 after connect')
  t.equal(client.bytesWritten, 0, 'client bytesWritten 0 after connect')
  t.equal(serverSocket.bytesRead, 0, 'server bytesRead 0 after accept')
  t.equal(serverSocket.bytesWritten, 0, 'server bytesWritten 0 after accept')

  const up = crypto.randomBytes(12345)
  const down = crypto.randomBytes(54321)
  const atServer = collect(serverSocket)
  const atClient = collect(client)
  client.write(up.subarray(0, 100))
  client.write('héllo') // 6 bytes in UTF-8
  client.end(up.subarray(100))
  serverSocket.end(down)
  await Promise.all([atServer, atClient])
  const upBytes = up.length + 6
  t.equal(client.bytesWritten, upBytes, 'client bytesWritten')
  t.equal(serverSocket.bytesRead, upBytes, 'server bytesRead')
  t.equal(serverSocket.bytesWritten, down.length, 'server bytesWritten')
  t.equal(client.bytesRead, down.length, 'client bytesRead')

  await Promise.all([client.destroyed ? null : once(client, 'close'), serverSocket.destroyed ? null : once(serverSocket, 'close')])
  t.equal(client.bytesWritten, upBytes, 'client bytesWritten after close')
  t.equal(client.bytesRead, down.length, 'client bytesRead after close')
  t.equal(serverSocket.bytesRead, upBytes, 'server bytesRead after close')
  t.equal(serverSocket.bytesWritten, down.length, 'server bytesWritten after close')
})
