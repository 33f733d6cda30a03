'use strict'
// Handing an accepted socket to another server (with the preload): a proxy that reads the first
// byte of a fresh connection, unshift()s it and hands the socket to a TLS server with
// `tlsServer.emit('connection', socket)`, as protocol sniffers (http + https on one port) do.
// The TLS handshake completes and bytes flow both ways, on every rung.
const t = require('tap')
const fs = require('fs')
const path = require('path')
const { net, fastsock, forEachRung } = require('../helpers/hook')
const tls = require('tls')
const { once, within, listen, collectBytes } = require('../helpers/util')

const FIX = path.join(__dirname, '..', 'fixtures', 'transparency')
const key = fs.readFileSync(path.join(FIX, 'key.pem'))
const cert = fs.readFileSync(path.join(FIX, 'cert.pem'))

forEachRung(t, async (t, rung) => {
  for (const later of [false, true]) {
    t.test(`hand-off ${later ? 'after reading a first byte' : 'at once'}`, async t => {
      const tlsServer = tls.createServer({ key, cert }, s => {
        s.on('error', () => {})
        s.on('data', d => s.write(`echo ${d}`))
      })
      const accepted = []
      const proxy = net.createServer(s => {
        accepted.push(s)
        s.on('error', () => {})
        if (!later) return tlsServer.emit('connection', s)
        s.once('readable', () => {
          const first = s.read(1)
          s.unshift(first)
          tlsServer.emit('connection', s)
        })
      })
      await listen(proxy, 0, '127.0.0.1')
      t.teardown(() => {
        for (const s of accepted) s.destroy()
        proxy.close()
      })
      const client = tls.connect({ port: proxy.address().port, host: '127.0.0.1', rejectUnauthorized: false, transports: [rung] })
      client.on('error', () => {})
      t.teardown(() => client.destroy())
      await within(once(client, 'secureConnect'), 5000, 'the TLS handshake')
      t.equal(fastsock.transportOf(client), rung, `TLS over ${rung}`)
      t.equal(accepted[0].transport, rung)
      const got = collectBytes(client, 'echo ping'.length)
      client.write('ping')
      t.equal((await got).toString(), 'echo ping')
    })
  }
}, { loopback: true }) // dials 127.0.0.1 by hand
