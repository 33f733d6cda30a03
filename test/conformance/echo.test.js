'use strict'
// Echo: what the client writes comes back unchanged (strings, Buffers, many small chunks).
const t = require('tap')
const crypto = require('crypto')
const { forEachRung, pair } = require('../helpers/rungs')
const { collect, sha256 } = require('../helpers/util')

forEachRung(t, async (t, rung) => {
  t.test('strings with an encoding', async t => {
    const { client } = await pair(rung, { t, onConnection: s => s.pipe(s) })
    const text = 'héllo wörld ✓ 日本語 🚀\n'.repeat(50)
    client.write(text, 'utf8')
    client.write(Buffer.from('abc').toString('hex'), 'hex')
    client.end('tail', 'latin1')
    const got = await collect(client)
    t.equal(got.toString('utf8'), text + 'abctail')
  })

  t.test('Buffers', async t => {
    const { client } = await pair(rung, { t, onConnection: s => s.pipe(s) })
    const a = crypto.randomBytes(1000)
    const b = crypto.randomBytes(70000)
    client.write(a)
    client.end(b)
    const got = await collect(client)
    t.equal(got.length, a.length + b.length)
    t.equal(sha256(got), sha256(Buffer.concat([a, b])))
  })

  t.test('many chunks of random sizes', async t => {
    const { client } = await pair(rung, { t, onConnection: s => s.pipe(s) })
    const chunks = []
    for (let i = 0; i < 2000; i++) chunks.push(crypto.randomBytes(1 + crypto.randomInt(600)))
    const got = collect(client)
    for (const c of chunks) client.write(c)
    client.end()
    const all = Buffer.concat(chunks)
    const back = await got
    t.equal(back.length, all.length)
    t.equal(sha256(back), sha256(all))
  })
})
