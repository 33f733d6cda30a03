'use strict'
// onread: the bytes a server writes the moment it accepts (they may arrive with the connection's
// set-up) go to the caller's buffer and callback like any later ones (none is pushed as 'data'),
// the same buffer each time, a callback's `false` pauses reading until resume(), bytesRead counts
// them. (No 'data' listener: adding one resumes reading, in Node too.)
const t = require('tap')
const { forEachRung, pair } = require('../helpers/rungs')
const { once, sleep } = require('../helpers/util')

const message = Buffer.from('hello world, written on accept')

forEachRung(t, async (t, rung) => {
  const buffer = Buffer.alloc(8)
  const got = []
  let calls = 0
  let paused = false
  let calledWhilePaused = 0
  let wrongBuffer = 0
  let client = null
  const onread = {
    buffer,
    callback (nread, buf) {
      if (paused) calledWhilePaused++
      if (buf !== buffer) wrongBuffer++
      got.push(Buffer.from(buf.subarray(0, nread)))
      if (++calls !== 1) return true
      // The first callback stops reading, as Node's onread allows; resumed a little later.
      paused = true
      setTimeout(() => { paused = false; client.resume() }, 100)
      return false
    }
  }
  const p = await pair(rung, { t, clientOptions: { onread }, onConnection: s => s.end(message) })
  client = p.client
  await once(client, 'end', 5000)
  await sleep(10)
  t.equal(Buffer.concat(got).toString(), message.toString(), 'every byte reached the onread callback, in order')
  t.equal(client.readableLength, 0, 'nothing went to the readable buffer')
  t.equal(wrongBuffer, 0, 'the callback always got the caller\'s buffer')
  t.equal(calledWhilePaused, 0, "no callback after one returned false, until resume()")
  t.ok(calls >= Math.ceil(message.length / buffer.length), `the bytes came in buffer-sized reads (${calls} callbacks)`)
  t.equal(client.bytesRead, message.length, 'bytesRead counts them once')
})
