'use strict'
// Stream-side timing and details as Node's TCP sockets have them: EOF reaches the stream a loop
// turn after the last data (libuv stops at a read that did not fill its buffer; http's agent
// relies on it to reuse a keep-alive socket); onread's callback is called with the socket as
// `this`; bufferSize counts the writes queued while connecting.
const t = require('tap')
const { forEachRung, pair, fastsock, ALL_RUNGS, rungHost, dialHost } = require('../helpers/rungs')
const { once, listen } = require('../helpers/util')

forEachRung(t, async (t, rung) => {
  t.test("'end' comes a loop turn after the last 'data'", async t => {
    const { client, serverSocket } = await pair(rung, { t })
    const order = []
    client.on('data', () => {
      order.push('data')
      setImmediate(() => order.push('immediate'))
    })
    client.on('end', () => order.push('end'))
    serverSocket.end('last words')
    await once(client, 'end')
    t.same(order, ['data', 'immediate', 'end'])
  })

  t.test("onread's callback gets the socket as this", async t => {
    const buffer = Buffer.alloc(16)
    const seen = []
    const { client, serverSocket } = await pair(rung, {
      t,
      clientOptions: { onread: { buffer, callback (n) { seen.push(this) } } }
    })
    serverSocket.end('0123456789')
    await once(client, 'end')
    t.ok(seen.length > 0, 'called')
    t.ok(seen.every(s => s === client), 'this is the socket')
  })

  t.test('bufferSize while connecting', async t => {
    const server = fastsock.createServer({ transports: ALL_RUNGS }, s => s.resume())
    await listen(server, 0, rungHost(rung) ? '0.0.0.0' : '127.0.0.1')
    t.teardown(() => server.close())
    const c = fastsock.connect({ port: server.address().port, host: dialHost(rung), transports: [rung], transportTimeoutMs: rungHost(rung) ? 20000 : 1000 })
    t.teardown(() => c.destroy())
    for (let i = 1; i < 5; i++) {
      c.write('a')
      t.equal(c.bufferSize, i, `${i} queued`)
    }
    c.end()
    await once(c, 'finish', 10000)
    t.equal(c.transport, rung)
    t.equal(c.bufferSize, 0, "0 at 'finish'")
  })
})
