'use strict'
// The byte counters as Node keeps them over TCP: a write queued while connecting is counted
// once; bytesWritten counts what was handed to write() (Node counts at dispatch), also bytes
// still waiting for room; bytesRead grows with each 'data' (the bytes a chunk brings are counted
// when it is handed to the stream, not a read ahead) and is the total at 'end'; `pending` is
// true again once destroyed.
const t = require('tap')
const { forEachRung, pair, fastsock, ALL_RUNGS, rungHost, dialHost } = require('../helpers/rungs')
const { once, listen, waitFor } = require('../helpers/util')

forEachRung(t, async (t, rung) => {
  t.test('a write queued while connecting is counted once', async t => {
    const server = fastsock.createServer({ transports: ALL_RUNGS }, s => s.resume())
    await listen(server, 0, rungHost(rung) ? '0.0.0.0' : '127.0.0.1')
    t.teardown(() => server.close())
    const c = fastsock.connect({ port: server.address().port, host: dialHost(rung), transports: [rung], transportTimeoutMs: rungHost(rung) ? 20000 : 1000 })
    t.teardown(() => c.destroy())
    const text = "L'État, c'est "
    const bytes = Buffer.byteLength(text)
    const written = new Promise(resolve => c.write(text, resolve))
    t.equal(c.bytesWritten, bytes, 'counted while connecting')
    c.end('moi')
    await written
    t.equal(c.transport, rung)
    t.equal(c.bytesWritten, bytes + 3, 'counted once after connect')
    await once(c, 'close')
    t.equal(c.bytesWritten, bytes + 3, 'after close')
    t.equal(c.pending, true, 'pending again once closed')
  })

  t.test('bytesWritten counts bytes still waiting for room', async t => {
    const { client, serverSocket } = await pair(rung, { t })
    serverSocket.pause()
    const big = Buffer.alloc(4 << 20, 1)
    client.write(big) // more than an shm ring holds: most of it waits for room there
    t.equal(client.bytesWritten, big.length, 'every byte handed to write() is counted at once')
    serverSocket.resume()
    await waitFor(() => serverSocket.bytesRead === big.length, 10000, 'the server to read everything')
    t.equal(client.bytesWritten, big.length)
  })

  t.test("bytesRead grows with every 'data' and is the total at 'end'", async t => {
    const big = Buffer.alloc(1 << 20, 2)
    const { client, serverSocket } = await pair(rung, { t })
    let prev = 0
    let notGrowing = 0
    let total = 0
    client.on('data', chunk => {
      total += chunk.length
      if (!(client.bytesRead > prev)) notGrowing++
      prev = client.bytesRead
    })
    serverSocket.end(big)
    await once(client, 'end', 10000)
    t.equal(notGrowing, 0, "bytesRead grew at every 'data'")
    t.equal(total, big.length)
    t.equal(client.bytesRead, big.length, "the total at 'end'")
  })
})
