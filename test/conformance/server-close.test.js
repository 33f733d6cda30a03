'use strict'
// server.close() stops accepting at once but calls back (and emits 'close') only after the last
// open connection closes; getConnections() counts connections on every rung.
const t = require('tap')
const { forEachRung, pair, fastsock, dialHost, rungHost } = require('../helpers/rungs')
const { once, sleep, within } = require('../helpers/util')

const getConnections = server => new Promise((resolve, reject) =>
  server.getConnections((err, n) => (err ? reject(err) : resolve(n))))

forEachRung(t, async (t, rung) => {
  const { server, client, serverSocket, port } = await pair(rung, { t })
  t.equal(await getConnections(server), 1, 'one connection')
  const second = fastsock.connect({ port, host: dialHost(rung), transports: [rung], transportTimeoutMs: 20000 })
  t.teardown(() => second.destroy())
  // The RDMA guest's emulated CPU, shared with other jobs, can take seconds to set a cross-host rung up.
  const slowMs = rungHost(rung) ? 30000 : 5000
  const started = Date.now()
  const [serverSocket2] = await within(Promise.all([once(server, 'connection', slowMs), once(second, 'connect', slowMs)]).then(([[s]]) => [s]), slowMs, 'second connection')
  t.comment(`second connection in ${Date.now() - started} ms`)
  t.equal(serverSocket2.transport, rung)
  t.equal(await getConnections(server), 2, 'two connections')

  let closed = false
  const closing = new Promise(resolve => server.close(err => { closed = true; resolve(err) }))
  t.equal(server.listening, false, 'no longer listening')
  await sleep(200)
  t.equal(closed, false, 'close callback waits while connections are open')
  t.equal(await getConnections(server), 2, 'both still counted')

  const refused = fastsock.connect({ port, host: dialHost(rung), transports: [rung, 'tcp'], transportTimeoutMs: 20000 })
  const [err] = await once(refused, 'error', slowMs)
  t.equal(err.code, 'ECONNREFUSED', 'a new connection is refused after close()')

  client.end()
  serverSocket.resume()
  await once(serverSocket, 'close')
  await sleep(50)
  t.equal(closed, false, 'still waiting for the second connection')
  t.equal(await getConnections(server), 1, 'one left')

  second.destroy()
  t.equal(await within(closing, 5000, 'server close callback'), undefined, 'close callback without error')
  t.ok(serverSocket2.destroyed, 'called back after the last connection closed')
})
