'use strict'
// TLS over a fastsock socket (tls.connect with the preload): a client that end()s at 'connect',
// before the handshake is done, closes as over TCP. TLS still writes its handshake records after
// that shutdown; a kernel handle fails them with EPIPE, which TLS ignores after a shutdown; the
// socket under TLS must not turn them into an 'error' (ERR_STREAM_WRITE_AFTER_END) on the
// TLSSocket. Data written before end() still gets its answer (Node's
// test-https-agent-create-connection.js).
const t = require('tap')
const fs = require('fs')
const path = require('path')
const { fastsock, forEachRung } = require('../helpers/hook')
const tls = require('tls')
const { once, within, listen, collect } = require('../helpers/util')

const FIX = path.join(__dirname, '..', 'fixtures', 'transparency')
const key = fs.readFileSync(path.join(FIX, 'key.pem'))
const cert = fs.readFileSync(path.join(FIX, 'cert.pem'))

async function tlsServer (t) {
  const sockets = []
  const server = tls.createServer({ key, cert }, s => {
    sockets.push(s)
    s.on('error', () => {})
    s.on('data', () => s.end('answer'))
  })
  server.on('tlsClientError', () => {}) // a client gone before its Finished
  await listen(server, 0, '127.0.0.1')
  t.teardown(() => new Promise(resolve => {
    for (const s of sockets) s.destroy()
    server.close(resolve)
  }))
  return server.address().port
}

forEachRung(t, async (t, rung) => {
  for (const write of [false, true]) {
    t.test(`end()${write ? ' after a write' : ''} at 'connect': no error, ${write ? 'the answer arrives' : 'end and close'}`, async t => {
      const port = await tlsServer(t)
      const client = tls.connect({ port, host: '127.0.0.1', rejectUnauthorized: false, transports: [rung] })
      const events = []
      for (const name of ['secureConnect', 'end', 'error', 'close']) client.on(name, e => events.push(name === 'error' ? `error ${e.code}` : name))
      const got = collect(client)
      client.on('connect', () => {
        t.equal(client.secureConnecting, true, 'the handshake is not done')
        if (write) client.write('question')
        client.end()
      })
      await within(once(client, 'secureConnect'), 5000, 'secureConnect')
      t.equal(fastsock.transportOf(client), rung, `TLS over ${rung}`)
      await within(once(client, 'close'), 5000, 'the client to close')
      t.same(events, ['secureConnect', 'end', 'close'])
      t.equal((await got).toString(), write ? 'answer' : '')
    })
  }
}, { loopback: true })
