'use strict'
// FASTSOCK_TRANSPORTS sets the process's default chain (clients and servers), in a real child
// process; an invalid value is a warning and the full chain.
const t = require('tap')
const path = require('path')
const net = require('net')
const { fastsock, ALL_RUNGS, rungs, bestRung } = require('../helpers/rungs')
const { listen, spawnNode, quiet } = require('../helpers/util')

const CLIENT = path.join(__dirname, '..', 'fixtures', 'client.js')
const SERVER = path.join(__dirname, '..', 'fixtures', 'server.js')
const skip = rungs.includes('unix') ? false : 'the unix rung is not available here'

async function childConnect (t, port, env) {
  const child = spawnNode(t, [CLIENT, JSON.stringify({ port, host: '127.0.0.1', write: 'ping' })], { env })
  const msg = await child.waitFor(m => m.event === 'connect' || m.event === 'error')
  return { msg, child }
}

t.test('client side', { skip }, async t => {
  const server = fastsock.createServer({ transports: ALL_RUNGS }, quiet(s => s.pipe(s)))
  await listen(server, 0, '127.0.0.1')
  t.teardown(() => server.close())
  const { port } = server.address()

  t.test('FASTSOCK_TRANSPORTS=tcp', async t => {
    const { msg, child } = await childConnect(t, port, { FASTSOCK_TRANSPORTS: 'tcp' })
    t.equal(msg.transport, 'tcp')
    t.equal(child.messages.some(m => m.event === 'attempt' && m.transport === 'unix'), false, 'unix never attempted')
    t.same(await child.waitFor(m => m.event === 'data'), { event: 'data', text: 'ping' }, 'echo works')
  })

  t.test('FASTSOCK_TRANSPORTS=unix,tcp', async t => {
    const { msg } = await childConnect(t, port, { FASTSOCK_TRANSPORTS: 'unix,tcp' })
    t.equal(msg.transport, 'unix')
  })

  t.test('FASTSOCK_TRANSPORTS=tcp,unix', async t => {
    const { msg } = await childConnect(t, port, { FASTSOCK_TRANSPORTS: 'tcp,unix' })
    t.equal(msg.transport, 'tcp', 'order respected')
  })

  t.test('an explicit option wins over the variable', async t => {
    const child = spawnNode(t, [CLIENT, JSON.stringify({ port, host: '127.0.0.1', transports: ['unix'] })], { env: { FASTSOCK_TRANSPORTS: 'tcp' } })
    const msg = await child.waitFor(m => m.event === 'connect' || m.event === 'error')
    t.equal(msg.transport, 'unix')
  })

  t.test('an invalid value: warning, full chain', async t => {
    const { msg, child } = await childConnect(t, port, { FASTSOCK_TRANSPORTS: 'unix,warp' })
    t.equal(msg.transport, bestRung, 'the full chain is used')
    await child.waitFor(m => m.event === 'data')
    child.child.kill()
    await child.exited
    t.match(child.stderr(), /FASTSOCK_BAD_ENV|warp/, 'a warning on stderr names the problem')
  })
})

t.test('FASTSOCK_TRANSPORTS=unix and a plain net server: nothing connects', { skip }, async t => {
  const plain = net.createServer(quiet(s => s.destroy()))
  await listen(plain, 0, '127.0.0.1')
  t.teardown(() => plain.close())
  const { msg } = await childConnect(t, plain.address().port, { FASTSOCK_TRANSPORTS: 'unix' })
  t.same(msg.event, 'error')
  t.equal(msg.code, 'ERR_FASTSOCK_ALL_TRANSPORTS_FAILED')
})

t.test('server side: FASTSOCK_TRANSPORTS=tcp offers no side channel', { skip }, async t => {
  for (const [env, expected] of [['tcp', 'tcp'], ['unix,tcp', 'unix']]) {
    const srv = spawnNode(t, [SERVER], { env: { FASTSOCK_TRANSPORTS: env } })
    const { port } = await srv.waitFor(m => m.event === 'listening')
    fastsock.clearNegativeCache()
    const c = fastsock.connect({ port, host: '127.0.0.1', transports: ['unix', 'tcp'] })
    t.teardown(() => c.destroy())
    await new Promise((resolve, reject) => c.once('connect', resolve).once('error', reject))
    t.equal(c.transport, expected, `server with FASTSOCK_TRANSPORTS=${env}: client on ${expected}`)
    const conn = await srv.waitFor(m => m.event === 'connection')
    t.equal(conn.transport, expected, 'the server side agrees')
    c.destroy()
  }
})
