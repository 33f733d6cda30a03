'use strict'
// The patched net on every rung: connect events and their timing, writes before connect,
// encodings, cork/writev, backpressure, half-open, FIN vs reset, counters and addresses after
// close. Behaviours as Node's test/parallel states them (test-net-connect-*, test-net-write-*,
// test-net-allow-half-open, test-net-socket-byteswritten, test-net-local-address-port...).
const t = require('tap')
const { net, forEachRung, netPair } = require('../helpers/hook')
const { once, collect, within } = require('../helpers/util')

t.test('connect: events after a loop turn, lookup for a host name, connect before ready', async t => {
  forEachRung(t, async (t, rung) => {
    const server = net.createServer(s => s.end())
    t.teardown(() => server.close())
    await new Promise(resolve => server.listen(0, '127.0.0.1', resolve))
    const events = []
    const c = net.connect({ port: server.address().port, host: 'localhost', family: 4, transports: [rung] })
    let sameTick = true
    setImmediate(() => { sameTick = false })
    c.on('lookup', (err, address, family, host) => events.push(['lookup', err, address, family, host]))
    c.on('connect', () => events.push(['connect', sameTick]))
    c.on('ready', () => events.push(['ready']))
    t.equal(c.connecting, true, 'connecting at once')
    await once(c, 'ready')
    t.same(events, [['lookup', null, '127.0.0.1', 4, 'localhost'], ['connect', false], ['ready']])
    t.equal(c.transport, rung)
    t.equal(c.remoteAddress, '127.0.0.1', 'remoteAddress is the resolved address, not the name')
    c.destroy()
  })
})

t.test('writes and end() before connect, encodings, cork/writev', async t => {
  forEachRung(t, async (t, rung) => {
    const server = net.createServer(s => s.pipe(s))
    t.teardown(() => server.close())
    await new Promise(resolve => server.listen(0, '127.0.0.1', resolve))
    const c = net.connect({ port: server.address().port, host: '127.0.0.1', transports: [rung] })
    c.write('héllo ', 'utf8')
    c.write('776f726c64', 'hex')
    c.cork()
    c.write(Buffer.from(' a'))
    c.write(' b', 'latin1')
    process.nextTick(() => c.uncork())
    c.end(Buffer.from(' !').toString('base64'), 'base64')
    const got = await collect(c)
    t.equal(c.transport, rung)
    t.equal(got.toString('utf8'), 'héllo world a b !')
  })
})

t.test('backpressure: write() returns false and drain follows', async t => {
  forEachRung(t, async (t, rung) => {
    const { client, serverSocket } = await netPair(t, rung)
    serverSocket.pause()
    const chunk = Buffer.alloc(1 << 20)
    let writes = 0
    while (client.write(chunk) && writes < 256) writes++
    t.ok(writes < 256, `write() returned false after ${writes} MiB`)
    const drained = once(client, 'drain', 10000)
    serverSocket.resume()
    await drained
    t.pass('drain')
  })
})

t.test('half-open: allowHalfOpen keeps the other direction open', async t => {
  forEachRung(t, async (t, rung) => {
    const { client, serverSocket } = await netPair(t, rung, { serverOptions: { allowHalfOpen: true } })
    serverSocket.resume()
    const ended = once(serverSocket, 'end')
    client.end('ping')
    await ended
    t.equal(serverSocket.writable, true, 'server side still writable after the peer\'s FIN')
    serverSocket.end('pong')
    const got = await collect(client)
    t.equal(got.toString(), 'pong')
  })
})

t.test('FIN vs reset: end() is a clean end, resetAndDestroy() a reset (test-net-socket-reset-send)', async t => {
  forEachRung(t, async (t, rung) => {
    const a = await netPair(t, rung)
    a.serverSocket.resume()
    const endP = once(a.serverSocket, 'end')
    a.client.end()
    await endP
    t.pass('end() reaches the peer as \'end\'')

    const b = await netPair(t, rung)
    b.serverSocket.removeAllListeners('error')
    b.serverSocket.resume()
    let err = null
    b.serverSocket.on('error', e => { err = err || e })
    const closeP = within(new Promise(resolve => b.serverSocket.once('close', (...a) => resolve(a))), 5000, "'close'")
    b.client.resetAndDestroy()
    const [hadError] = await closeP
    // unix: AF_UNIX has no RST; the reset flag stands in for it (docs/wire-protocol.md).
    t.equal(err && err.code, 'ECONNRESET', 'the peer sees ECONNRESET')
    t.equal(hadError, true, "'close' with hadError")
  })
})

t.test('counters and addresses stay readable after close', async t => {
  forEachRung(t, async (t, rung) => {
    const { client, serverSocket } = await netPair(t, rung)
    const tuple = [client.remotePort, serverSocket.localPort, client.localPort, serverSocket.remotePort, client.remoteAddress, client.remoteFamily]
    const got = collect(serverSocket)
    client.end('12345')
    t.equal((await got).length, 5)
    await once(client, 'close')
    t.equal(client.bytesWritten, 5)
    t.equal(serverSocket.bytesRead, 5)
    // Node keeps the remote side readable after close (the local side only on the fast rungs).
    t.same([client.remotePort, serverSocket.remotePort, client.remoteAddress, client.remoteFamily],
      [tuple[0], tuple[3], tuple[4], tuple[5]], 'remote addresses read before close are still there after it')
    t.equal(tuple[0], tuple[1], 'one consistent 4-tuple: remote port = server local port')
    t.equal(tuple[2], tuple[3], 'client local port = server remote port')
    t.same(tuple.slice(4), ['127.0.0.1', 'IPv4'])
  })
})
