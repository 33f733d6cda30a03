'use strict'
// TLS over a fastsock socket (tls.connect with the preload) closes as over TCP: when the server
// ends or destroys, the client ends and closes without an error (no EPIPE / "ended by the other
// party" from the socket under TLS); with allowHalfOpen the client may still write after the
// server's FIN, and the server reads it.
const t = require('tap')
const fs = require('fs')
const path = require('path')
const { fastsock, forEachRung } = require('../helpers/hook')
const tls = require('tls')
const { once, within, listen, collect } = require('../helpers/util')

const FIX = path.join(__dirname, '..', 'fixtures', 'transparency')
const key = fs.readFileSync(path.join(FIX, 'key.pem'))
const cert = fs.readFileSync(path.join(FIX, 'cert.pem'))

async function tlsServer (t, options, onSecure) {
  const sockets = []
  const server = tls.createServer({ key, cert, ...options }, s => { sockets.push(s); onSecure(s) })
  await listen(server, 0, '127.0.0.1')
  t.teardown(() => new Promise(resolve => {
    for (const s of sockets) s.destroy()
    server.close(resolve)
  }))
  return server.address().port
}

function clientEvents (client) {
  const events = []
  for (const name of ['end', 'error', 'close']) client.on(name, e => events.push(name === 'error' ? `error ${e.code}` : name))
  return events
}

forEachRung(t, async (t, rung) => {
  for (const how of ['end', 'destroy']) {
    // smc: the kernel reports a peer's abort as EOF and then ECONNRESET/EPIPE on the next write
    // (docs/transports.md), so TLS's close_notify after a destroy() fails there, unlike TCP.
    const skip = rung === 'smc' && how === 'destroy' ? 'smc: the kernel reports the peer\'s abort on the next write' : false
    t.test(`the server ${how}s: the client ends and closes without an error`, { skip }, async t => {
      const port = await tlsServer(t, {}, s => { s.on('error', () => {}); s[how]() })
      const client = tls.connect({ port, host: '127.0.0.1', rejectUnauthorized: false, transports: [rung] })
      const events = clientEvents(client)
      await within(once(client, 'secureConnect'), 5000, 'secureConnect')
      t.equal(fastsock.transportOf(client), rung, `TLS over ${rung}`)
      t.equal(client.allowHalfOpen, false, "the caller's allowHalfOpen (default false)")
      await within(once(client, 'close'), 5000, 'the client to close')
      t.same(events, ['end', 'close'])
    })
  }

  t.test('allowHalfOpen: the client writes after the server\'s FIN', async t => {
    let received
    const port = await tlsServer(t, { allowHalfOpen: true }, s => {
      received = collect(s)
      s.end('bye')
    })
    const client = tls.connect({ port, host: '127.0.0.1', rejectUnauthorized: false, transports: [rung], allowHalfOpen: true })
    const events = clientEvents(client)
    const got = collect(client)
    await within(once(client, 'end'), 5000, "the server's FIN")
    t.equal(client.allowHalfOpen, true)
    client.end('after the FIN')
    t.equal((await within(got, 5000, 'the client side')).toString(), 'bye')
    t.equal((await within(received, 5000, 'the server side')).toString(), 'after the FIN')
    await within(once(client, 'close'), 5000, 'the client to close')
    t.same(events, ['end', 'close'])
  })
}, { loopback: true })
