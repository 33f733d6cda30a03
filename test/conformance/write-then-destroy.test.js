'use strict'
// Bytes written and then destroy()ed in the same callback reach the peer before its 'end', as
// over TCP, where libuv writes into the kernel at once (uv_try_write): what Node's http server
// does for every 400/413/431 (socketOnError writes the response, then destroys). Inside a 'data'
// listener (the stream core is moving bytes then) and from a timer (nothing running).
const t = require('tap')
const { forEachRung, pair } = require('../helpers/rungs')
const { collect, once } = require('../helpers/util')

const RESPONSE = 'HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n'

forEachRung(t, async (t, rung) => {
  t.test("write() then destroy() in a 'data' listener", async t => {
    const { client, serverSocket } = await pair(rung, { t })
    const got = collect(client)
    serverSocket.once('data', () => {
      serverSocket.write(RESPONSE)
      serverSocket.destroy()
    })
    client.write('GET / HTTP/1.1\r\nHost: \x00\r\n\r\n')
    t.equal((await got).toString(), RESPONSE, 'the client read the response, then EOF')
  })

  t.test("a write larger than one read, then destroy(), in a 'data' listener", async t => {
    const { client, serverSocket } = await pair(rung, { t })
    const body = Buffer.alloc(200 * 1024, 'x')
    const got = collect(client)
    serverSocket.once('data', () => {
      serverSocket.write('head;')
      serverSocket.write(body)
      serverSocket.destroy()
    })
    client.write('go')
    const all = await got
    t.equal(all.length, 5 + body.length, 'every byte arrived')
    t.equal(all.subarray(0, 5).toString(), 'head;')
  })

  t.test('write() then destroy() outside any stream callback', async t => {
    const { client, serverSocket } = await pair(rung, { t })
    const got = collect(client)
    await new Promise(resolve => setTimeout(resolve, 10))
    serverSocket.write('last words')
    serverSocket.destroy()
    t.equal((await got).toString(), 'last words')
    await once(client, 'close')
  })
})
