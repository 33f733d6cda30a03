'use strict'
// A core net.Server under the hook, on every rung: maxConnections and 'drop', pauseOnConnect,
// noDelay/keepAlive, highWaterMark, close() and getConnections(), diagnostics_channel, timeouts
// and ref/unref (after test-net-server-max-connections, test-net-server-pause-on-connect,
// test-net-server-options-highwatermark, test-net-socket-timeout, test-diagnostics-channel-net).
const t = require('tap')
const dc = require('diagnostics_channel')
const { net, forEachRung, netPair } = require('../helpers/hook')
const { once, within, sleep, connectOutcome } = require('../helpers/util')

t.test('maxConnections: the next connection is dropped, with \'drop\'', async t => {
  forEachRung(t, async (t, rung) => {
    const { server, port } = await netPair(t, rung, { serverOptions: {} })
    server.maxConnections = 1
    const dropped = once(server, 'drop')
    const c2 = net.connect({ port, host: '127.0.0.1', transports: [rung, 'tcp'] })
    c2.on('error', () => {})
    t.teardown(() => c2.destroy())
    await dropped
    t.pass('\'drop\' emitted')
    await once(c2, 'close')
    t.pass('the extra client is closed')
  })
})

t.test('pauseOnConnect, noDelay, keepAlive, highWaterMark reach accepted sockets', async t => {
  forEachRung(t, async (t, rung) => {
    const { client, serverSocket } = await netPair(t, rung, { serverOptions: { pauseOnConnect: true, noDelay: true, keepAlive: true, highWaterMark: 12345 } })
    t.equal(serverSocket.isPaused(), true, 'paused on connect')
    t.equal(serverSocket.readableHighWaterMark, 12345)
    t.equal(serverSocket.writableHighWaterMark, 12345)
    let got = ''
    serverSocket.on('data', d => { got += d })
    client.write('abc')
    await sleep(50)
    t.equal(got, '', 'no data while paused')
    serverSocket.resume()
    await within((async () => { while (got !== 'abc') await sleep(5) })(), 5000, 'data after resume')
    t.equal(got, 'abc')
  })
})

t.test('close() waits for connections; getConnections() counts every rung', async t => {
  forEachRung(t, async (t, rung) => {
    const { server, client, serverSocket } = await netPair(t, rung)
    const n = await new Promise((resolve, reject) => server.getConnections((err, n) => err ? reject(err) : resolve(n)))
    t.equal(n, 1)
    let closed = false
    server.close(() => { closed = true })
    t.equal(server.listening, false)
    await sleep(30)
    t.equal(closed, false, 'close() waits for the open connection')
    const refused = net.connect({ port: server.address() ? server.address().port : 1, host: '127.0.0.1', transports: [rung] })
    refused.on('error', () => {})
    client.destroy()
    serverSocket.destroy()
    await within((async () => { while (!closed) await sleep(5) })(), 5000, 'server close callback')
    t.pass('close callback after the last connection closed')
    refused.destroy()
  })
})

t.test('diagnostics_channel: net.server.socket and net.client.socket', async t => {
  forEachRung(t, async (t, rung) => {
    const seen = []
    // The side channel's own internal connections must not show up here.
    const onServer = ({ socket }) => seen.push(['server', socket.transport])
    const onClient = ({ socket }) => seen.push(['client', socket instanceof net.Socket])
    dc.subscribe('net.server.socket', onServer)
    dc.subscribe('net.client.socket', onClient)
    t.teardown(() => { dc.unsubscribe('net.server.socket', onServer); dc.unsubscribe('net.client.socket', onClient) })
    await netPair(t, rung)
    t.same(seen.filter(e => e[0] === 'server'), [['server', rung]], 'net.server.socket once, with the fastsock socket')
    t.same(seen.filter(e => e[0] === 'client'), [['client', true]], 'net.client.socket once, with a net.Socket')
  })
})

t.test('setTimeout fires when idle and is refreshed by traffic; unref lets the process exit', async t => {
  forEachRung(t, async (t, rung) => {
    const { client, serverSocket } = await netPair(t, rung)
    serverSocket.resume()
    const start = Date.now()
    client.setTimeout(150)
    const iv = setInterval(() => client.write('x'), 40)
    await sleep(300)
    clearInterval(iv)
    await once(client, 'timeout', 2000)
    t.ok(Date.now() - start >= 300, 'no timeout while traffic flows')
    client.setTimeout(0)
    t.equal(client.unref(), client, 'unref() returns the socket')
    t.equal(client.ref(), client, 'ref() returns the socket')
  })
})

t.test('an unref\'d client and server do not keep a process alive', async t => {
  const { spawnNode } = require('../helpers/util')
  for (const rung of require('../helpers/rungs').rungs) {
    const code = `
      const net = require('net')
      const s = net.createServer(c => { c.resume(); c.unref() }).listen(0, '127.0.0.1', () => {
        const c = net.connect({ port: s.address().port, host: '127.0.0.1', transports: ['${rung}'] }, () => {
          process.stdout.write(JSON.stringify({ transport: c.transport }) + '\\n'); c.unref(); s.unref()
        })
      })`
    const child = spawnNode(t, ['-r', './dist/register.js', '-e', code])
    const m = await child.waitFor(m => 'transport' in m)
    t.equal(m.transport, rung)
    const { code: exit } = await within(child.exited, 5000, `${rung}: the process exits with everything unref'd`)
    t.equal(exit, 0)
  }
})
