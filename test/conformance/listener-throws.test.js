'use strict'
// A throw from the application's 'connect' or 'ready' listener is the application's uncaught
// exception, as from Node's afterConnect: not a failure of the connect. The socket stays
// connected on its rung (not destroyed with that error, not connected again over another rung),
// and the server sees exactly one connection.
const t = require('tap')
const { forEachRung, fastsock, ALL_RUNGS, dialHost, rungHost } = require('../helpers/rungs')
const { listen, within, collectBytes, sleep, waitFor } = require('../helpers/util')

/** Resolves with the next uncaught exception, which it keeps from tap's own handlers. */
function nextUncaught (ms) {
  const saved = process.listeners('uncaughtException')
  process.removeAllListeners('uncaughtException')
  const restore = () => {
    process.removeAllListeners('uncaughtException')
    for (const l of saved) process.on('uncaughtException', l)
  }
  return within(new Promise(resolve => process.once('uncaughtException', resolve)), ms, 'an uncaught exception')
    .finally(restore)
}

forEachRung(t, async (t, rung) => {
  for (const event of ['connect', 'ready']) {
    t.test(`a throw in a '${event}' listener`, async t => {
      const server = fastsock.createServer({ transports: ALL_RUNGS })
      const accepted = []
      server.on('connection', s => {
        accepted.push(s)
        s.on('error', () => {})
      })
      await listen(server, 0, rungHost(rung) ? '0.0.0.0' : '127.0.0.1')
      const thrown = new Error(`thrown by a '${event}' listener`)
      const uncaught = nextUncaught(rungHost(rung) ? 30000 : 5000)
      const c = fastsock.connect({ port: server.address().port, host: dialHost(rung), transports: [rung], transportTimeoutMs: 20000 })
      const errors = []
      c.on('error', e => errors.push(e))
      c.once(event, () => { throw thrown })
      t.teardown(() => {
        c.destroy()
        for (const s of accepted) s.destroy()
        server.close()
      })
      t.equal(await uncaught, thrown, 'the listener\'s exception is uncaught')
      // The client's 'ready' can run before the server's 'connection' (rsocket in an emulated
      // guest): wait for the server's side, then long enough for a wrongful reconnect to show.
      await waitFor(() => accepted.length > 0, rungHost(rung) ? 30000 : 5000, 'the server\'s connection')
      await sleep(200) // a socket that took the throw for a failure would reconnect meanwhile
      t.equal(c.transport, rung, 'still on its rung')
      t.equal(c.destroyed, false, 'not destroyed')
      t.same(errors, [], 'no error event')
      t.equal(accepted.length, 1, 'the server saw one connection')
      const got = collectBytes(accepted[0], 5)
      c.write('after')
      t.equal((await got).toString(), 'after', 'the connection carries bytes')
    })
  }
})
