'use strict'
// Short connections start on the kernel's socket (lib/lifetime.ts): against a fastsock echo
// server in another process, connections with the default chain that close at once move the
// destination to tcp; connections that carry more than SHORT_BYTES move it back to the fast
// rungs; a connect naming its rungs, and FASTSOCK_SHORT_CONNECTIONS=fast, keep the fast rungs;
// the bytes are the same on every rung.
const t = require('tap')
const { rungs } = require('../helpers/rungs')
const { spawnNode, once, within } = require('../helpers/util')
const fastsock = require('../..')
const { SHORT_BYTES, HISTORY, MIN_EVIDENCE } = require('../../dist/lifetime.js')

const fast = rungs.find(r => r === 'shm' || r === 'unix')
const skip = !fast && 'no side-channel rung is available here'

const SERVER = `
const fastsock = require('.')
const server = fastsock.createServer(s => { s.on('error', () => {}); s.pipe(s) })
server.listen(0, '127.0.0.1', () => process.stdout.write(JSON.stringify({ event: 'listening', port: server.address().port }) + '\\n'))
`

/** Connects, echoes `bytes` bytes, ends; resolves with the rung and whether the echo was exact. */
async function roundTrip (port, bytes, opts = {}) {
  const c = fastsock.connect({ port, host: '127.0.0.1', ...opts })
  c.on('error', () => {})
  await within(once(c, 'connect', 5000), 5000, 'connect')
  const transport = c.transport
  const out = Buffer.alloc(bytes)
  for (let i = 0; i < bytes; i++) out[i] = (i * 31 + 7) & 0xff
  const chunks = []
  let got = 0
  const done = new Promise(resolve => c.on('data', d => {
    chunks.push(d)
    got += d.length
    if (got >= bytes) resolve()
  }))
  c.write(out)
  await within(done, 5000, 'echo')
  c.end()
  await once(c, 'close')
  return { transport, exact: Buffer.concat(chunks).equals(out) }
}

t.test('short connections move to tcp, long ones move back', { skip }, async t => {
  fastsock.clearNegativeCache()
  const peer = spawnNode(t, ['-e', SERVER])
  const port = (await peer.waitFor(m => m.event === 'listening')).port
  const seen = []
  for (let i = 0; i < MIN_EVIDENCE + 2; i++) {
    const r = await roundTrip(port, 64)
    t.ok(r.exact, `short connection ${i + 1}: the echo is exact`)
    seen.push(r.transport)
  }
  t.not(seen[0], 'tcp', `the first connection uses a fast rung (${seen[0]})`)
  t.equal(seen[seen.length - 1], 'tcp', `after ${MIN_EVIDENCE} short ones, tcp (${seen.join(' ')})`)

  const named = await roundTrip(port, 64, { transports: [fast, 'tcp'] })
  t.equal(named.transport, fast, 'a connect that names its rungs gets them')

  const back = []
  for (let i = 0; i < HISTORY; i++) {
    const r = await roundTrip(port, SHORT_BYTES + 1024)
    t.ok(r.exact, `long connection ${i + 1}: the echo is exact`)
    back.push(r.transport)
  }
  t.equal(back[0], 'tcp', 'a long connection that started on tcp stays there')
  t.not(back[back.length - 1], 'tcp', `long connections move the destination back to a fast rung (${back.join(' ')})`)
  fastsock.clearNegativeCache()
})

t.test('FASTSOCK_SHORT_CONNECTIONS=fast keeps the fast rungs', { skip }, async t => {
  const peer = spawnNode(t, ['-e', SERVER])
  const port = (await peer.waitFor(m => m.event === 'listening')).port
  const client = spawnNode(t, ['-e', `
const fastsock = require('.')
;(async () => {
  const seen = []
  for (let i = 0; i < 6; i++) {
    const c = fastsock.connect(${port}, '127.0.0.1')
    await new Promise(r => c.once('connect', r))
    seen.push(c.transport)
    c.end()
    c.resume()
    await new Promise(r => c.once('close', r))
  }
  process.stdout.write(JSON.stringify({ event: 'done', seen }) + '\\n')
})()
`], { env: { FASTSOCK_SHORT_CONNECTIONS: 'fast' } })
  const done = await client.waitFor(m => m.event === 'done')
  t.notOk(done.seen.includes('tcp'), `no connection on tcp (${done.seen.join(' ')})`)
})
