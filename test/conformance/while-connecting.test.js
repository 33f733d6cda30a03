'use strict'
// The socket while it connects, as Node's (which has its TCP handle by then): `bufferSize`
// counts the queued bytes (not undefined), `resetAndDestroy()` waits for the connection and then
// resets it (no ERR_SOCKET_CLOSED), and `resetAndDestroy()` followed by `destroy()` simply
// destroys (Node's test-net-buffersize.js, test-net-connect-reset-before-connected.js).
const t = require('tap')
const { forEachRung, fastsock, ALL_RUNGS, dialHost, rungHost } = require('../helpers/rungs')
const { listen, once, within, sleep, waitFor } = require('../helpers/util')

async function server (t, rung, transports = ALL_RUNGS) {
  const srv = fastsock.createServer({ transports })
  const accepted = []
  srv.on('connection', s => {
    accepted.push(s)
    s.on('error', () => {})
    s.resume()
  })
  await listen(srv, 0, rungHost(rung) ? '0.0.0.0' : '127.0.0.1')
  t.teardown(() => {
    for (const s of accepted) s.destroy()
    srv.close()
  })
  return { port: srv.address().port, accepted }
}

forEachRung(t, async (t, rung) => {
  const connect = port => fastsock.connect({ port, host: dialHost(rung), transports: [rung], transportTimeoutMs: 20000 })
  const ms = rungHost(rung) ? 30000 : 5000

  t.test('bufferSize counts what is queued while connecting', async t => {
    const { port } = await server(t, rung)
    const c = connect(port)
    t.teardown(() => c.destroy())
    t.equal(c.connecting, true)
    for (let i = 1; i < 4; i++) {
      c.write('a')
      t.equal(c.bufferSize, i)
    }
    c.end()
    await within(once(c, 'finish', ms), ms, "'finish'")
    t.equal(c.bufferSize, 0)
  })

  t.test('resetAndDestroy() while connecting: reset once connected, no error', async t => {
    // The server side must see the connection, as a TCP listener does. Where smc is up, a
    // fastsock server listens with AF_SMC, whose kernel drops a connection reset before accept
    // (docs/transports.md, smc): the other rungs' clients get Node's TCP listener here.
    const { port, accepted } = await server(t, rung, rung === 'smc' ? ALL_RUNGS : ALL_RUNGS.filter(r => r !== 'smc'))
    const c = connect(port)
    const errors = []
    c.on('error', e => errors.push(e))
    const events = []
    c.on('connect', () => events.push('connect'))
    t.equal(c.connecting, true)
    t.equal(c.resetAndDestroy(), c)
    const [hadError] = await within(once(c, 'close', ms), ms, "'close'")
    t.same(events, ['connect'], 'it connected first')
    t.equal(hadError, false)
    t.same(errors, [])
    // A cross-host rung's listener may hand its side over a little later than 'close' here.
    await waitFor(() => accepted.length >= 1, ms, 'the server-side connection')
    t.equal(accepted.length, 1)
  })

  t.test('resetAndDestroy() then destroy() while connecting: destroyed, no error', async t => {
    const { port } = await server(t, rung)
    const c = connect(port)
    c.on('error', e => t.fail(`error: ${e.code}`))
    c.on('connect', () => t.fail('connected'))
    c.resetAndDestroy()
    c.destroy()
    await within(once(c, 'close', ms), ms, "'close'")
    await sleep(100)
  })
})
