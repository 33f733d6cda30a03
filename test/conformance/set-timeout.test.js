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
