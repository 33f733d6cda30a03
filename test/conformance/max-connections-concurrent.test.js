'use strict'
// maxConnections with clients that connect at the same time (Node's
// test-net-server-drop-connections.js): the server never holds more than maxConnections, and
// every client past the limit is dropped with a 'drop' event carrying its addresses, whether it
// was turned away at the side channel's handshake (then over TCP) or reached admission together
// with others on the fast rung.
const t = require('tap')
const { forEachRung, fastsock, ALL_RUNGS } = require('../helpers/rungs')
const { listen, within, waitFor, sleep } = require('../helpers/util')

const CLIENTS = 4

forEachRung(t, async (t, rung) => {
  const server = fastsock.createServer({ transports: ALL_RUNGS })
  server.maxConnections = 1
  const accepted = []
  let most = 0
  server.on('connection', s => {
    accepted.push(s)
    s.on('error', () => {})
    most = Math.max(most, server._connections)
  })
  const drops = []
  server.on('drop', d => drops.push(d))
  await listen(server, 0, '127.0.0.1')
  const port = server.address().port
  const clients = []
  t.teardown(() => {
    for (const c of clients) c.destroy()
    for (const s of accepted) s.destroy()
    server.close()
  })
  const chain = rung === 'tcp' || rung === 'smc' ? [rung] : [rung, 'tcp']
  for (let i = 0; i < CLIENTS; i++) {
    const c = fastsock.connect({ port, host: '127.0.0.1', transports: chain })
    c.on('error', () => {})
    c.resume()
    clients.push(c)
  }
  await within(waitFor(() => accepted.length + drops.length >= CLIENTS, 5000, 'every client admitted or dropped'), 6000, 'admission')
  await sleep(100) // a late admission past the limit would show here
  t.equal(accepted.length, 1, 'one connection accepted')
  t.equal(most, 1, 'never more than maxConnections')
  t.equal(drops.length, CLIENTS - 1, "a 'drop' for every other client")
  for (const d of drops) {
    t.equal(d.localPort, port)
    t.ok(d.remoteAddress && d.remotePort && d.remoteFamily, "'drop' names the client")
  }
})
