'use strict'
// FASTSOCK_DEBUG=1 prints one line per decision on stderr ('fastsock <pid> <scope>: ...'),
// naming the rung chosen and why; without it, nothing.
const t = require('tap')
const path = require('path')
const net = require('net')
const { fastsock, ALL_RUNGS, rungs } = require('../helpers/rungs')
const { listen, spawnNode, within, quiet } = require('../helpers/util')

const CLIENT = path.join(__dirname, '..', 'fixtures', 'client.js')
const SERVER = path.join(__dirname, '..', 'fixtures', 'server.js')
const skip = rungs.includes('unix') ? false : 'the unix rung is not available here'

async function run (t, port, env) {
  const child = spawnNode(t, [CLIENT, JSON.stringify({ port, host: '127.0.0.1', write: 'x' })], { env })
  const msg = await child.waitFor(m => m.event === 'connect' || m.event === 'error')
  await child.waitFor(m => m.event === 'data')
  child.child.stdin.end()
  child.child.kill()
  await within(child.exited, 5000, 'child exit')
  const lines = child.stderr().split('\n').filter(Boolean)
  return { msg, lines, pid: child.child.pid }
}

function checkFormat (t, lines, pid) {
  const bad = lines.filter(l => !new RegExp(`^fastsock ${pid} [a-z]+: \\S`).test(l))
  t.same(bad, [], `every stderr line is 'fastsock ${pid} <scope>: <message>'`)
}

t.test('client to a fastsock server', { skip }, async t => {
  const server = fastsock.createServer({ transports: ALL_RUNGS }, quiet(s => s.pipe(s)))
  await listen(server, 0, '127.0.0.1')
  t.teardown(() => server.close())
  const { port } = server.address()
  const { msg, lines, pid } = await run(t, port, { FASTSOCK_DEBUG: '1', FASTSOCK_TRANSPORTS: 'unix,tcp' })
  t.equal(msg.transport, 'unix')
  checkFormat(t, lines, pid)
  t.ok(lines.some(l => l.includes('verified')), 'the verification is reported')
  t.ok(lines.some(l => l.includes(`127.0.0.1:${port} -> unix`)), 'the decision names the destination and rung')
})

t.test('client to a plain net server', async t => {
  const plain = net.createServer(quiet(s => s.pipe(s)))
  await listen(plain, 0, '127.0.0.1')
  t.teardown(() => plain.close())
  const { port } = plain.address()
  const { msg, lines, pid } = await run(t, port, { FASTSOCK_DEBUG: '1' })
  t.equal(msg.transport, 'tcp')
  checkFormat(t, lines, pid)
  t.ok(lines.some(l => l.includes(`127.0.0.1:${port} -> tcp`)), 'the tcp decision')
  if (rungs.includes('unix')) {
    t.ok(lines.some(l => /unix/.test(l) && /side channel|not offered/i.test(l)), 'why unix was not used')
  }
})

t.test('server side', { skip }, async t => {
  const srv = spawnNode(t, [SERVER], { env: { FASTSOCK_DEBUG: '1' } })
  const { port } = await srv.waitFor(m => m.event === 'listening')
  const c = fastsock.connect({ port, host: '127.0.0.1', transports: ['unix'] })
  t.teardown(() => c.destroy())
  await new Promise((resolve, reject) => c.once('connect', resolve).once('error', reject))
  await srv.waitFor(m => m.event === 'connection')
  srv.child.kill()
  await srv.exited
  const lines = srv.stderr().split('\n').filter(Boolean)
  checkFormat(t, lines, srv.child.pid)
  t.ok(lines.some(l => l.includes(`side channel listening on @fastsock/1/127.0.0.1/${port}`)), 'the side channel it bound')
})

t.test('without FASTSOCK_DEBUG: silent', async t => {
  const plain = net.createServer(quiet(s => s.pipe(s)))
  await listen(plain, 0, '127.0.0.1')
  t.teardown(() => plain.close())
  const { lines } = await run(t, plain.address().port, {})
  t.same(lines, [], 'nothing on stderr')
})
