'use strict'
// connect() again on the same socket after 'close' (Node's test-net-reconnect.js,
// test-net-bytes-stats.js, test-net-socket-local-address.js): each connection starts afresh, on
// the rung asked for, with its own local port (the one the server sees), its own byte counters,
// and bytes flowing both ways; nothing of the previous connection's channel is left. A connect()
// after a destroy() during a rung attempt gets its own connection only.
const t = require('tap')
const { forEachRung, fastsock, ALL_RUNGS, dialHost, rungHost } = require('../helpers/rungs')
const { listen, once, within } = require('../helpers/util')

async function echoServer (t, rung) {
  const server = fastsock.createServer({ transports: ALL_RUNGS })
  const seen = []
  server.on('connection', s => {
    s.on('error', () => {})
    const conn = { transport: s.transport, remotePort: s.remotePort, data: '' }
    seen.push(conn)
    s.setEncoding('utf8')
    s.on('data', d => { conn.data += d })
    s.on('end', () => s.end(`got ${conn.data}`))
  })
  await listen(server, 0, rungHost(rung) ? '0.0.0.0' : '127.0.0.1')
  t.teardown(() => server.close())
  return { port: server.address().port, seen }
}

forEachRung(t, async (t, rung) => {
  const closeMs = rungHost(rung) ? 30000 : 5000
  t.test('three connections on one socket', async t => {
    const { port, seen } = await echoServer(t, rung)
    const opts = { port, host: dialHost(rung), transports: [rung], transportTimeoutMs: 20000 }
    const c = new fastsock.Socket({ transports: [rung] })
    t.teardown(() => c.destroy())
    c.setEncoding('utf8')
    for (let i = 0; i < 3; i++) {
      const msg = `message ${i}`
      let reply = ''
      const onData = d => { reply += d }
      c.on('data', onData)
      c.connect(opts)
      t.equal(c.connecting, true, `connection ${i}: connecting`)
      await once(c, 'connect', closeMs)
      t.equal(c.transport, rung, `connection ${i}: transport`)
      const localPort = c.localPort
      c.end(msg)
      const [hadError] = await within(once(c, 'close', closeMs), closeMs, `connection ${i}: 'close'`)
      c.off('data', onData)
      t.equal(hadError, false, `connection ${i}: closed without error`)
      t.equal(reply, `got ${msg}`, `connection ${i}: the reply`)
      t.equal(c.bytesWritten, msg.length, `connection ${i}: bytesWritten counts this connection only`)
      t.equal(c.bytesRead, `got ${msg}`.length, `connection ${i}: bytesRead counts this connection only`)
      t.equal(seen.length, i + 1, `connection ${i}: one more connection at the server`)
      t.equal(seen[i].transport, rung, `connection ${i}: the server's transport`)
      t.equal(seen[i].data, msg, `connection ${i}: the server got the bytes`)
      t.equal(localPort, seen[i].remotePort, `connection ${i}: localPort is the port the server sees`)
    }
  })

  t.test('connect() again after a destroy() during a rung attempt', async t => {
    const { port, seen } = await echoServer(t, rung)
    const opts = { port, host: dialHost(rung), transports: [rung], transportTimeoutMs: 20000 }
    const c = new fastsock.Socket({ transports: [rung] })
    t.teardown(() => c.destroy())
    c.once('transportAttempt', () => c.destroy())
    c.connect(opts)
    await within(once(c, 'close', closeMs), closeMs, "the first connect's 'close'")
    c.connect(opts) // the first attempt may still be under way: its channel must not land here
    await once(c, 'connect', closeMs)
    t.equal(c.transport, rung)
    c.setEncoding('utf8')
    let reply = ''
    c.on('data', d => { reply += d })
    c.end('second')
    const [hadError] = await within(once(c, 'close', closeMs), closeMs, "the second connect's 'close'")
    t.equal(hadError, false)
    t.equal(reply, 'got second')
    t.equal(c.bytesWritten, 'second'.length)
    t.equal(seen.filter(s => s.data === 'second').length, 1, 'the second connect() made one connection')
  })
})
