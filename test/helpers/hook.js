'use strict'
// The preload hook in this test process: `require('../helpers/hook')` first, then use `net`,
// `http`... as an application would. Exposes what the transparency tests share.
//
//   const { net, forEachRung, netPair } = require('../helpers/hook')
const assert = require('assert')
const state = require('../../dist/register.js').state
const net = require('net')
const fastsock = require('../..')
const { forEachRung, rungs, bestRung, ALL_RUNGS } = require('./rungs')
const { once, within, listen } = require('./util')

if (!state.patched) throw new Error(`the hook did not patch net: ${state.reason}`)

/**
 * A server made with the patched `net.createServer(serverOptions)` (a core net.Server) and a
 * client made with `net.connect`, forced onto `rung` (the `transports` option); asserts both ends
 * report it. Returns { server, client, serverSocket, port }; everything closed at t's teardown.
 */
async function netPair (t, rung, { serverOptions = {}, clientOptions = {}, onConnection } = {}) {
  const server = net.createServer(serverOptions)
  assert.strictEqual(Object.getPrototypeOf(server), net.Server.prototype, 'a core net.Server')
  const accepted = []
  const got = new Promise(resolve => server.on('connection', s => {
    accepted.push(s)
    s.on('error', () => {})
    if (onConnection) onConnection(s)
    resolve(s)
  }))
  let client = null
  t.teardown(async () => {
    for (const s of accepted) s.destroy()
    if (client) client.destroy()
    if (server.listening) await within(new Promise(resolve => server.close(resolve)), 5000, 'server close')
  })
  await listen(server, 0, '127.0.0.1')
  const port = server.address().port
  client = net.connect({ port, host: '127.0.0.1', transports: [rung], ...clientOptions })
  const [serverSocket] = await within(Promise.all([got, once(client, 'connect')]), 5000, `a ${rung} connection`)
  assert.strictEqual(client.transport, rung, `client on ${client.transport}, expected ${rung}`)
  assert.strictEqual(serverSocket.transport, rung, `server side on ${serverSocket.transport}, expected ${rung}`)
  return { server, client, serverSocket, port }
}

module.exports = { state, net, fastsock, forEachRung, rungs, bestRung, ALL_RUNGS, netPair }
