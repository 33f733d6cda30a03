'use strict'
// Data split across many chunks: a writer sending byte by byte (setNoDelay) or in random chunk
// sizes (cork/uncork), with several readInto requests queued at once: each fills completely, in
// call order, with the right bytes.
const t = require('tap')
const crypto = require('crypto')
const { forEachRung, pair } = require('../helpers/rungs')
const { bytesOf, randomView } = require('../helpers/typed')
const { sleep } = require('../helpers/util')

forEachRung(t, async (t, rung) => {
  t.test('byte by byte, with setNoDelay', async t => {
    const { client, serverSocket } = await pair(rung, { t })
    client.setNoDelay(true)
    const sent = randomView(Float64Array, 300)
    const bytes = bytesOf(sent)
    const target = new Float64Array(300)
    const read = serverSocket.readInto(target)
    for (let i = 0; i < bytes.length; i++) {
      client.write(bytes.subarray(i, i + 1))
      if (i % 200 === 0) await sleep(1) // let some single bytes arrive on their own
    }
    await read
    t.ok(bytesOf(target).equals(bytes), `${bytes.length} one-byte writes reassembled`)
  })

  t.test('random chunk sizes with cork/uncork, many queued requests', async t => {
    const { client, serverSocket } = await pair(rung, { t })
    const sent = randomView(Int32Array, 20000)
    const bytes = bytesOf(sent)
    const target = new Int32Array(20000)
    // Requests of random element counts, all queued before any byte is sent.
    const reads = []
    let off = 0
    while (off < target.length) {
      const len = Math.min(target.length - off, 1 + crypto.randomInt(3000))
      const at = off
      reads.push(serverSocket.readInto(target, at, len).then(() => at))
      off += len
    }
    const order = []
    reads.forEach(p => p.then(at => order.push(at)))
    let pos = 0
    while (pos < bytes.length) {
      client.cork()
      for (let k = 0; k < 1 + crypto.randomInt(5) && pos < bytes.length; k++) {
        const n = Math.min(bytes.length - pos, 1 + crypto.randomInt(5000))
        client.write(bytes.subarray(pos, pos + n))
        pos += n
      }
      client.uncork()
      if (crypto.randomInt(4) === 0) await sleep(1)
    }
    const starts = await Promise.all(reads)
    t.same(order, starts, `${reads.length} requests completed in call order`)
    t.ok(bytesOf(target).equals(bytes), 'identical bytes')
  })

  t.test('requests issued while bytes trickle in', async t => {
    const { client, serverSocket } = await pair(rung, { t })
    const sent = randomView(Uint16Array, 5000)
    const bytes = bytesOf(sent)
    const target = new Uint16Array(5000)
    const writing = (async () => {
      for (let pos = 0; pos < bytes.length; pos += 777) {
        client.write(bytes.subarray(pos, pos + 777)) // odd sizes split elements between chunks
        await sleep(0)
      }
    })()
    for (let off = 0; off < target.length; off += 250) await serverSocket.readInto(target, off, 250)
    await writing
    t.ok(bytesOf(target).equals(bytes))
  })
})
