'use strict'
// Backpressure: a writer whose reader is paused is eventually held (write() returns false and no
// 'drain' comes while the reader stays paused, with a bounded amount accepted); when the reader
// resumes, 'drain' fires and nothing is lost or reordered.
const t = require('tap')
const crypto = require('crypto')
const { forEachRung, pair } = require('../helpers/rungs')
const { collect, once, sha256, sleep } = require('../helpers/util')

const CHUNK = 64 * 1024
const LIMIT = 64 * 1024 * 1024 // a paused reader must hold the writer well before this
const QUIET_MS = 300

forEachRung(t, async (t, rung) => {
  const { client, serverSocket } = await pair(rung, { t })
  serverSocket.pause()
  const base = crypto.randomBytes(CHUNK)
  const sent = []
  let total = 0
  let drains = 0
  let refusals = 0
  const pump = () => {
    while (total < LIMIT) {
      const c = Buffer.from(base)
      c.writeUInt32LE(sent.length, 0)
      sent.push(c)
      total += c.length
      if (!client.write(c)) {
        refusals++
        return
      }
    }
  }
  client.on('drain', () => { drains++; pump() })
  pump()
  t.ok(refusals >= 1, `write() returned false after ${sent.length} chunks of 64 KiB`)
  // Wait until the writer stays held for QUIET_MS (no 'drain' meanwhile).
  let lastDrains = -1
  while (drains !== lastDrains && total < LIMIT) {
    lastDrains = drains
    await sleep(QUIET_MS)
  }
  t.ok(total < LIMIT, `the paused reader held the writer after ${(total / 1048576).toFixed(1)} MiB (${drains} drains)`)
  t.ok(client.writableLength > 0, 'bytes stay queued in the writer while the reader is paused')
  t.ok(serverSocket.readableLength <= 1024 * 1024,
    `the paused reader does not buffer without bound (${serverSocket.readableLength} bytes)`)

  const drained = once(client, 'drain', 10000)
  const got = collect(serverSocket, 20000)
  serverSocket.resume()
  await drained
  t.pass("'drain' fired once the reader resumed")
  client.removeAllListeners('drain')
  client.end()
  const all = Buffer.concat(sent)
  const back = await got
  t.equal(back.length, all.length, 'every byte arrived')
  t.equal(sha256(back), sha256(all), 'in order, unchanged')
})
