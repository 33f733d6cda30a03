'use strict'
// ref/unref: a child process whose only handle is a connected, unref'd socket exits by itself;
// with the socket ref'd it stays alive until the connection closes. Real child processes.
const t = require('tap')
const path = require('path')
const { forEachRung, pair, rungHost, dialHost } = require('../helpers/rungs')
const { sleep, spawnNode, within } = require('../helpers/util')

const CLIENT = path.join(__dirname, '..', 'fixtures', 'client.js')
// The cross-host rungs run in the RDMA guest's emulated CPU: a fresh child needs seconds to start
// and to set a connection up there (pair() gives its own client the same allowance).
const slow = rung => rungHost(rung) ? { transportTimeoutMs: 20000 } : {}
// In the RDMA guest (emulated CPU) a child needs seconds to start, whatever the rung.
// util's waits stretch by SLOWDOWN in the RDMA guest; an RDMA connect costs more there still.
const waitMs = rung => rungHost(rung) ? 12000 : 10000

forEachRung(t, async (t, rung) => {
  for (const when of ['after-connect', 'before-connect']) {
    t.test(`unref() ${when}: the child exits while connected`, async t => {
      const { server } = await pair(rung, { t })
      const { port } = server.address()
      const serverSide = new Promise(resolve => server.on('connection', resolve))
      const child = spawnNode(t, [CLIENT, JSON.stringify({ port, host: dialHost(rung), transports: [rung], unref: when, ...slow(rung) })])
      const msg = await child.waitFor(m => m.event === 'connect' || m.event === 'error', waitMs(rung))
      t.match(msg, { event: 'connect', transport: rung }, `connected on ${rung}`)
      const sock = await within(serverSide, 5000, 'the server-side socket')
      const { code } = await within(child.exited, 5000, 'the child to exit on its own')
      t.equal(code, 0, 'exited normally')
      t.equal(child.messages.some(m => m.event === 'close' || m.event === 'end'), false, 'the connection was still open when it exited')
      sock.destroy()
    })
  }

  t.test('ref (default): the child stays until the peer closes', async t => {
    const { server } = await pair(rung, { t })
    const { port } = server.address()
    const serverSide = new Promise(resolve => server.on('connection', resolve))
    const child = spawnNode(t, [CLIENT, JSON.stringify({ port, host: dialHost(rung), transports: [rung], ...slow(rung) })])
    const msg = await child.waitFor(m => m.event === 'connect' || m.event === 'error', waitMs(rung))
    t.equal(msg.transport, rung)
    const sock = await within(serverSide, 5000, 'the server-side socket')
    await sleep(700)
    t.equal(child.child.exitCode, null, 'still running 700 ms after connecting')
    sock.end()
    const { code } = await within(child.exited, 5000, 'the child to exit after the peer closed')
    t.equal(code, 0)
    t.ok(child.messages.some(m => m.event === 'end'), "the child saw 'end' first")
  })

  t.test('unref() then ref(): the child stays', async t => {
    const { server } = await pair(rung, { t })
    const { port } = server.address()
    const serverSide = new Promise(resolve => server.on('connection', resolve))
    const code = `
      const fastsock = require('.')
      const c = fastsock.connect({ port: ${port}, host: '${dialHost(rung)}', transports: ['${rung}'], transportTimeoutMs: ${slow(rung).transportTimeoutMs ?? 1000} }, () => {
        c.unref(); c.ref()
        process.stdout.write(JSON.stringify({ event: 'connect', transport: c.transport }) + '\\n')
      })
      c.resume()`
    const child = spawnNode(t, ['-e', code])
    const msg = await child.waitFor(m => m.event === 'connect', waitMs(rung))
    t.equal(msg.transport, rung)
    const sock = await within(serverSide, 5000, 'the server-side socket')
    await sleep(700)
    t.equal(child.child.exitCode, null, 'still running 700 ms after connecting')
    sock.destroy()
    await within(child.exited, 5000, 'the child to exit after the peer closed')
  })
}, { timeout: 150000 }) // four child processes per rung: in the RDMA guest each needs ~15 s
