'use strict'
// Fds per shm connection end: the memfd is closed once mapped, each event loop has one doorbell
// shared by its connections, and a peer loop's doorbell is kept once however many connections go
// to it. So N connections with both ends in this process cost about 2N fds (one side-channel
// socket per end), as N TCP connections do, and every one of them goes back at close.
const t = require('tap')
const fs = require('fs')
const fastsock = require('../..')
const { rungs } = require('../helpers/rungs')
const { once, sleep } = require('../helpers/util')

const fdCount = () => fs.readdirSync('/proc/self/fd').length
const eventfds = () => fs.readdirSync('/proc/self/fd').filter(f => {
  try { return fs.readlinkSync(`/proc/self/fd/${f}`) === 'anon_inode:[eventfd]' } catch { return false }
}).length

t.test('at most 2 fds per connection end, shared doorbells', { skip: !rungs.includes('shm') && 'shm is not available here', timeout: 60000 }, async t => {
  const server = fastsock.createServer({ transports: ['shm', 'tcp'] }, s => s.pipe(s))
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => server.close())
  const { port } = server.address()
  // Warm up: module, listeners, this loop's doorbell.
  const w = fastsock.connect({ port, host: '127.0.0.1', transports: ['shm'] })
  await once(w, 'connect')
  w.destroy()
  await sleep(100)
  const fd0 = fdCount()
  const efd0 = eventfds()
  const N = 40
  const clients = []
  for (let i = 0; i < N; i++) {
    const c = fastsock.connect({ port, host: '127.0.0.1', transports: ['shm'] })
    await once(c, 'connect')
    t.equal(c.transport, 'shm', `connection ${i} on shm`)
    c.write('x')
    await once(c, 'data')
    clients.push(c)
  }
  const perConnection = (fdCount() - fd0) / N
  t.ok(perConnection <= 4, `${perConnection.toFixed(2)} fds per connection (both ends in this process: <= 2 per end)`)
  // The loop's doorbell exists since the warm-up; the peer loop's copy (the same loop here) was
  // released with the warm-up connection and is kept once again now.
  t.ok(eventfds() - efd0 <= 1, `${eventfds() - efd0} more eventfds for ${N} connections`)
  const closed = clients.map(c => once(c, 'close'))
  for (const c of clients) c.end()
  await Promise.all(closed)
  await sleep(150)
  t.ok(fdCount() <= fd0, `fds back to ${fd0} (now ${fdCount()})`)
})
