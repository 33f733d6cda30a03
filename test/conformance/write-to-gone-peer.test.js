'use strict'
// A write larger than any socket buffer, to a peer that destroyed its socket: it cannot all be
// taken before the peer's reset, so it fails, with one 'error' (EPIPE or ECONNRESET), as over TCP
// (Node's test-net-error-twice). A small one is taken as TCP takes the first write to a peer
// that left: no error.
const t = require('tap')
const { forEachRung, pair } = require('../helpers/rungs')
const { once, sleep, within } = require('../helpers/util')

/** Rungs that fail even a small first write to a peer that left, unlike TCP (open, not this file's fixes). */
const SMALL_WRITE_FAILS = {
  verbs: 'open: verbs fails a write to a peer that closed at once (EPIPE, and a second \'error\' ECONNRESET); TCP takes the first one (lib/stream)',
  smc: 'AF_SMC fails a write after the peer closed at once with EPIPE (the kernel\'s SMC-R), where TCP takes the first one'
}

forEachRung(t, async (t, rung) => {
  t.test('10 MB to a destroyed peer: one error', async t => {
    const { client, serverSocket } = await pair(rung, { t })
    const errors = []
    serverSocket.removeAllListeners('error')
    serverSocket.on('error', err => errors.push(err))
    const closed = new Promise(resolve => serverSocket.once('close', resolve))
    client.destroy()
    serverSocket.write(Buffer.alloc(10 * 1024 * 1024, 0x62))
    await within(closed, 10000, "the server socket's 'close'")
    await sleep(20)
    t.equal(errors.length, 1, 'exactly one error')
    t.match(errors[0] && errors[0].code, /^(EPIPE|ECONNRESET)$/, 'EPIPE or ECONNRESET')
  })
  t.test('a few bytes to a peer that closed: no error', { skip: SMALL_WRITE_FAILS[rung] || false }, async t => {
    const { client, serverSocket } = await pair(rung, { t, serverOptions: { allowHalfOpen: true } })
    const errors = []
    serverSocket.removeAllListeners('error')
    serverSocket.on('error', err => errors.push(err))
    client.destroy()
    await once(serverSocket, 'end', 5000)
    let wrote = null
    serverSocket.write('late', err => { wrote = err || 'ok' })
    await sleep(100)
    t.equal(wrote, 'ok', 'the write completed')
    t.same(errors.map(e => e.code), [], 'no error')
  })
})
