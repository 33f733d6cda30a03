'use strict'
// The verification cache (csrc/sidechannel.cc) must not outlive what it proved: a client
// verifies a real fastsock server in another process (the pair is cached), the server exits, a
// squatter binds the same side-channel name and a plain net server takes the TCP port. The
// next client must verify again, refuse the squatter, and reach the new server over TCP; the
// squatter receives zero bytes.
const t = require('tap')
const net = require('net')
const path = require('path')
const crypto = require('crypto')
const { fastsock, rungs } = require('../helpers/rungs')
const { spawnNode, listen, once, collect, sha256, within, sleep } = require('../helpers/util')
const { squat } = require('../helpers/squatter')

const skip = rungs.includes('unix') ? false : 'the unix rung is not available here'
const SERVER = path.join(__dirname, '..', 'fixtures', 'server.js')

async function roundTrip (t, port, data) {
  const c = fastsock.connect({ port, host: '127.0.0.1' })
  t.teardown(() => c.destroy())
  const failures = []
  c.on('transportAttemptFailed', e => failures.push(`${e.transport}:${e.error.code}`))
  await within(Promise.race([once(c, 'connect'), once(c, 'error').then(([e]) => { throw e })]), 5000, 'connect')
  const back = collect(c)
  c.end(data)
  return { transport: c.transport, back: await back, failures }
}

t.test('a squatter that binds the name after a verified server left is refused', { skip }, async t => {
  fastsock.clearNegativeCache()
  const real = spawnNode(t, [SERVER])
  const { port } = await real.waitFor(m => m.event === 'listening')
  const data = crypto.randomBytes(20000)
  const first = await roundTrip(t, port, data)
  t.not(first.transport, 'tcp', `the real server was verified (${first.transport})`)
  t.equal(sha256(first.back), sha256(data), 'and served the first client')

  real.child.kill('SIGKILL')
  await real.exited
  const squatter = await squat(t, '127.0.0.1', port)
  const server = net.createServer(s => { s.on('error', () => {}); s.pipe(s) })
  await listen(server, port, '127.0.0.1')
  t.teardown(() => server.close())
  fastsock.clearNegativeCache()

  const second = await roundTrip(t, port, data)
  t.equal(second.transport, 'tcp', 'the second client fell back to tcp')
  t.ok(second.failures.some(f => f.endsWith('ERR_FASTSOCK_UNVERIFIED_PEER')), `verification failed (${second.failures})`)
  t.equal(sha256(second.back), sha256(data), 'the data went to the new server and back')
  await sleep(50)
  const rep = await squatter.report()
  t.ok(rep.connections >= 1, 'the squatter was reached')
  t.equal(rep.bytes, 0, 'and received zero bytes')
})
