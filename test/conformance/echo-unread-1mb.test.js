'use strict'
// The echo nobody reads until writing ends (NET-COMPAT): the server echoes, the client writes
// 1 MB and only starts reading after its last write completed. Over loopback TCP the socket
// buffers absorb it; every rung must not deadlock.
const t = require('tap')
const crypto = require('crypto')
const { forEachRung, pair } = require('../helpers/rungs')
const { collect, within, sha256 } = require('../helpers/util')

const SIZE = 1000 * 1000

forEachRung(t, async (t, rung) => {
  const { client } = await pair(rung, { t, onConnection: s => s.pipe(s) })
  client.pause()
  const data = crypto.randomBytes(SIZE)
  await within(new Promise((resolve, reject) => client.write(data, err => (err ? reject(err) : resolve()))),
    10000, 'the 1 MB write to complete while nobody reads the echo')
  t.pass('the write completed before the client read anything')
  const back = collect(client, 10000)
  client.resume()
  client.end()
  const got = await back
  t.equal(got.length, SIZE)
  t.equal(sha256(got), sha256(data))
})
