'use strict'
// Under the hook, a connect that goes straight to TCP gets Node's own socket: after a
// destination's connections proved short (lib/lifetime.ts), net.connect returns a socket of
// Node's own class (transport 'tcp', the bytes exact), and a server of Node's class (a core
// net.Server, in a preloaded process) accepts TCP connections as Node's own sockets; such
// connections still count in the destination's history (long ones move it back to a fast
// rung); fastsock.connect, the library's API, keeps fastsock's Socket.
const t = require('tap')
const { net, fastsock } = require('../helpers/hook')
const { rungs } = require('../helpers/rungs')
const { spawnNode, once, within } = require('../helpers/util')
const { originals } = require('../../dist/originals.js')
const { SHORT_BYTES, HISTORY, MIN_EVIDENCE } = require('../../dist/lifetime.js')

const fast = rungs.find(r => r === 'shm' || r === 'unix')
const skip = !fast && 'no side-channel rung is available here'

// A core net.Server under the hook: each connection first gets one line saying what the server's
// socket is, then its bytes echoed.
const SERVER = `
const net = require('net')
const { originals } = require('./dist/originals.js')
const server = net.createServer(s => {
  s.on('error', () => {})
  s.write(JSON.stringify({ node: Object.getPrototypeOf(s) === originals.Socket.prototype, transport: s.transport ?? null }) + '\\n')
  s.pipe(s)
})
server.listen(0, '127.0.0.1', () => process.stdout.write(JSON.stringify({ event: 'listening', port: server.address().port }) + '\\n'))
`

/** One connection made with `connectFn`: the server's line, `bytes` echoed; what each end was. */
async function roundTrip (connectFn, port, bytes) {
  const c = connectFn(port, '127.0.0.1')
  c.on('error', () => {})
  const client = { node: Object.getPrototypeOf(c) === originals.Socket.prototype }
  await within(once(c, 'connect', 5000), 5000, 'connect')
  client.transport = c.transport
  const out = Buffer.alloc(bytes)
  for (let i = 0; i < bytes; i++) out[i] = (i * 131 + 3) & 0xff
  const chunks = []
  let got = 0
  let want = Infinity
  const done = new Promise(resolve => c.on('data', d => {
    chunks.push(d)
    got += d.length
    if (want === Infinity) {
      const nl = Buffer.concat(chunks).indexOf(10)
      if (nl >= 0) want = nl + 1 + bytes
    }
    if (got >= want) resolve()
  }))
  c.write(out)
  await within(done, 5000, 'echo')
  c.end()
  await once(c, 'close', 5000)
  const all = Buffer.concat(chunks)
  const nl = all.indexOf(10)
  return { client, server: JSON.parse(String(all.subarray(0, nl))), exact: all.subarray(nl + 1).equals(out) }
}

t.test('short connections get Node\'s own sockets on both ends; long ones move the destination back', { skip }, async t => {
  fastsock.clearNegativeCache()
  const peer = spawnNode(t, ['-r', './dist/register.js', '-e', SERVER])
  const port = (await peer.waitFor(m => m.event === 'listening')).port
  const hook = (p, h) => net.connect(p, h)

  const first = await roundTrip(hook, port, 64)
  t.ok(first.exact, 'first connection: the echo is exact')
  t.notOk(first.client.node, 'the first connection to a destination is fastsock\'s (no history yet)')
  t.not(first.client.transport, 'tcp', `on a fast rung (${first.client.transport})`)
  t.same(first.server, { node: false, transport: first.client.transport }, 'the server\'s socket is fastsock\'s on that rung')
  for (let i = 1; i < MIN_EVIDENCE; i++) await roundTrip(hook, port, 64)

  const short = await roundTrip(hook, port, 64)
  t.ok(short.exact, 'the echo over Node\'s sockets is exact')
  t.same(short.client, { node: true, transport: 'tcp' }, 'net.connect: a socket of Node\'s own class, transport tcp')
  t.same(short.server, { node: true, transport: 'tcp' }, 'the core server accepted it as a socket of Node\'s own class, transport tcp')

  const api = await roundTrip((p, h) => fastsock.connect(p, h), port, 64)
  t.ok(api.exact, 'fastsock.connect: the echo is exact')
  t.same(api.client, { node: false, transport: 'tcp' }, 'fastsock.connect keeps fastsock\'s Socket (on tcp)')

  const back = []
  for (let i = 0; i < HISTORY; i++) {
    const r = await roundTrip(hook, port, SHORT_BYTES + 1024)
    t.ok(r.exact, `long connection ${i + 1}: the echo is exact`)
    back.push(r.client.node ? 'node' : r.client.transport)
  }
  t.equal(back[0], 'node', 'a long connection to a short destination starts on Node\'s socket')
  t.notOk(['node', 'tcp'].includes(back[back.length - 1]), `long connections on Node's sockets move the destination back to a fast rung (${back.join(' ')})`)
  fastsock.clearNegativeCache()
})

t.test('FASTSOCK_TRANSPORTS=tcp: every net.connect is Node\'s own', async t => {
  const child = spawnNode(t, ['-r', './dist/register.js', '-e', `
const net = require('net')
const { originals } = require('./dist/originals.js')
const server = originals.createServer(s => s.end('x')).listen(0, '127.0.0.1', () => {
  const c = net.connect(server.address().port, '127.0.0.1')
  const node = Object.getPrototypeOf(c) === originals.Socket.prototype
  c.on('connect', () => {
    process.stdout.write(JSON.stringify({ event: 'done', node, transport: c.transport }) + '\\n')
    c.destroy(); server.close()
  })
})`], { env: { FASTSOCK_TRANSPORTS: 'tcp' } })
  const m = await child.waitFor(m => m.event === 'done')
  t.same({ node: m.node, transport: m.transport }, { node: true, transport: 'tcp' })
})
