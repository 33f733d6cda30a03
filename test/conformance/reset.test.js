'use strict'
// resetAndDestroy() reaches the peer as a TCP RST does: 'error' ECONNRESET ('read ECONNRESET'),
// then 'close' with hadError, and no 'end' (Node's test-net-server-reset, -socket-reset-send,
// -connect-reset-*). Either end may reset; on unix (no RST in AF_UNIX) the reset flag stands in.
const t = require('tap')
const { forEachRung, pair } = require('../helpers/rungs')
const { within } = require('../helpers/util')

/** What `sock` reports once its peer reset: its first error, 'end' seen, close's hadError. */
function outcome (sock) {
  sock.removeAllListeners('error')
  let error = null
  let ended = false
  sock.on('error', e => { error = error || e })
  sock.on('end', () => { ended = true })
  sock.resume()
  return within(new Promise(resolve => sock.once('close', hadError => resolve({ error, ended, hadError }))), 5000, "the peer's 'close'")
}

function check (t, o) {
  t.equal(o.error && o.error.code, 'ECONNRESET', 'the peer gets ECONNRESET')
  t.equal(o.error && o.error.message, 'read ECONNRESET', "as a failed read ('read ECONNRESET')")
  t.equal(o.hadError, true, "'close' with hadError")
  t.equal(o.ended, false, "no 'end'")
}

/** Rungs whose peer sees a reset as an orderly close (open: no flag or RST to carry it there). */
const NO_RESET = {
  rsocket: 'open: resetAndDestroy() on rsocket closes the bridge\'s socketpair in order (no reset flag there; lib/transports/rsocket.ts)',
  smc: 'AF_SMC (SMC-R) closes in order even with SO_LINGER 0: it aborts only when the closing end leaves bytes unread (net/smc/smc_close.c, smc_close_final)'
}

forEachRung(t, async (t, rung) => {
  const skip = NO_RESET[rung] || false
  t.test('the client resets', { skip }, async t => {
    const { client, serverSocket } = await pair(rung, { t })
    const got = outcome(serverSocket)
    client.resetAndDestroy()
    check(t, await got)
  })
  t.test('the server resets', { skip }, async t => {
    const { client, serverSocket } = await pair(rung, { t })
    const got = outcome(client)
    serverSocket.resetAndDestroy()
    check(t, await got)
  })
  t.test('destroy() after end() is no reset', async t => {
    const { client, serverSocket } = await pair(rung, { t })
    const got = outcome(serverSocket)
    client.end()
    client.destroy()
    const o = await got
    t.equal(o.error, null, 'no error')
    t.equal(o.ended, true, "'end'")
  })
})
