'use strict'
// setTimeout(ms): 'timeout' fires once the socket is idle for ms; traffic in either direction
// refreshes it; setTimeout(0) disables it.
const t = require('tap')
const { forEachRung, pair } = require('../helpers/rungs')
const { once, sleep } = require('../helpers/util')

const IDLE_MS = 150

forEachRung(t, async (t, rung) => {
  t.test("'timeout' fires when idle", async t => {
    const { client, serverSocket } = await pair(rung, { t })
    for (const [name, s] of [['client', client], ['server side', serverSocket]]) {
      const start = Date.now()
      s.setTimeout(IDLE_MS)
      await once(s, 'timeout', 3000)
      const elapsed = Date.now() - start
      t.ok(elapsed >= IDLE_MS - 20, `${name}: fired after ${elapsed} ms (>= ${IDLE_MS})`)
      t.equal(s.destroyed, false, `${name}: 'timeout' does not close the socket`)
      s.setTimeout(0)
    }
  })

  t.test('incoming and outgoing traffic refresh it', async t => {
    const { client, serverSocket } = await pair(rung, { t })
    serverSocket.resume()
    client.resume()
    for (const [label, writer] of [['incoming', serverSocket], ['outgoing', client]]) {
      let fired = 0
      const onTimeout = () => fired++
      client.on('timeout', onTimeout)
      client.setTimeout(IDLE_MS)
      const start = Date.now()
      while (Date.now() - start < IDLE_MS * 4) {
        writer.write('x')
        await sleep(IDLE_MS / 5)
      }
      t.equal(fired, 0, `${label} traffic every ${IDLE_MS / 5} ms for ${IDLE_MS * 4} ms kept it from firing`)
      await once(client, 'timeout', 3000)
      t.pass('it fires once the traffic stops')
      client.setTimeout(0)
      client.removeListener('timeout', onTimeout)
    }
  })

  t.test('setTimeout(0) disables it', async t => {
    const { client } = await pair(rung, { t })
    let fired = false
    client.on('timeout', () => { fired = true })
    client.setTimeout(IDLE_MS)
    client.setTimeout(0)
    await sleep(IDLE_MS * 3)
    t.equal(fired, false)
  })
})

// A destroyed socket's idle timer is cleared, as Node's _destroy clears it: I/O that completes
// after destroy() refreshes the timer (`_unrefTimer()`, as the stream does on every read and
// write), which must not bring 'timeout' back (http's server would see a second 'timeout' for a
// socket it already destroyed: Node's test-http-set-timeout-server.js).
forEachRung(t, async (t, rung) => {
  for (const when of ['before it fired', "in its 'timeout' listener"]) {
    t.test(`destroy() ${when}: no 'timeout' after it`, async t => {
      for (const name of ['client', 'server side']) {
        // A pair per side: destroying one end ends the other.
        const { client, serverSocket } = await pair(rung, { t })
        const s = name === 'client' ? client : serverSocket
        let fired = 0
        s.on('timeout', () => {
          fired++
          s.destroy()
        })
        s.setTimeout(20)
        if (when === 'before it fired') s.destroy()
        else await once(s, 'timeout', 3000)
        s._unrefTimer() // what a read or write completing now does
        await sleep(100)
        t.equal(fired, when === 'before it fired' ? 0 : 1, `${name}: 'timeout' ${when === 'before it fired' ? 'never' : 'once'}`)
      }
    })
  }
})
