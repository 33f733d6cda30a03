'use strict'
// One 16 MiB write arrives whole and unchanged (checksummed), in both directions.
const t = require('tap')
const crypto = require('crypto')
const { forEachRung, pair } = require('../helpers/rungs')
const { collect, sha256 } = require('../helpers/util')

const SIZE = 16 * 1024 * 1024

forEachRung(t, async (t, rung) => {
  const { client, serverSocket } = await pair(rung, { t })
  const up = crypto.randomBytes(SIZE)
  const down = crypto.randomBytes(SIZE)
  const atServer = collect(serverSocket, 30000)
  const atClient = collect(client, 30000)
  client.end(up)
  serverSocket.end(down)
  const [gotUp, gotDown] = await Promise.all([atServer, atClient])
  t.equal(gotUp.length, SIZE, 'client to server: length')
  t.equal(sha256(gotUp), sha256(up), 'client to server: checksum')
  t.equal(gotDown.length, SIZE, 'server to client: length')
  t.equal(sha256(gotDown), sha256(down), 'server to client: checksum')
}, { timeout: 60000 })
