'use strict'
// The peer killed with SIGKILL mid-transfer: the survivor gets 'error' ECONNRESET and 'close'
// promptly (no hang), and what it received is an unbroken prefix of what the peer sent.
const t = require('tap')
const { rungs } = require('../helpers/rungs')
const { spawnNode, once, within } = require('../helpers/util')
const fastsock = require('../..')

t.test('SIGKILL of the sending peer', { skip: !rungs.includes('shm') && 'shm is not available here' }, async t => {
  const peer = spawnNode(t, [require.resolve('../fixtures/shm-peer.js'), 'stream'])
  const { port } = await peer.waitFor(m => m.event === 'listening')
  const c = fastsock.connect({ port, host: '127.0.0.1', transports: ['shm'] })
  await once(c, 'connect')
  t.equal(c.transport, 'shm')
  let expect = 0
  let broken = null
  let got = 0
  let tail = Buffer.alloc(0)
  c.on('data', d => {
    const b = tail.length ? Buffer.concat([tail, d]) : d
    const whole = b.length - (b.length % 4)
    for (let i = 0; i < whole; i += 4) {
      const v = b.readUInt32LE(i)
      if (v !== (expect >>> 0) && broken === null) broken = `at counter ${expect} got ${v}`
      expect++
    }
    tail = b.subarray(whole)
    got += d.length
  })
  await new Promise(resolve => setTimeout(resolve, 200))
  t.ok(got > 0, `data flowed before the kill (${got} bytes)`)
  const errored = once(c, 'error', 5000)
  const closed = within(new Promise(resolve => c.once('close', (...a) => resolve(a))), 5000, "'close'")
  const t0 = Date.now()
  peer.child.kill('SIGKILL')
  const [err] = await within(errored, 5000, "'error' after the peer died")
  t.equal(err.code, 'ECONNRESET', 'the survivor sees ECONNRESET')
  const [hadError] = await closed
  t.equal(hadError, true, "'close' with hadError")
  t.ok(Date.now() - t0 < 2000, `promptly (${Date.now() - t0} ms)`)
  t.equal(broken, null, 'the bytes received are an unbroken prefix of the stream')
})

t.test('SIGKILL of the receiving peer while we write', { skip: !rungs.includes('shm') && 'shm is not available here' }, async t => {
  const peer = spawnNode(t, [require.resolve('../fixtures/shm-peer.js'), 'echo'])
  const { port } = await peer.waitFor(m => m.event === 'listening')
  const c = fastsock.connect({ port, host: '127.0.0.1', transports: ['shm'] })
  await once(c, 'connect')
  c.resume()
  const chunk = Buffer.alloc(256 * 1024, 7)
  let stop = false
  const pump = () => { while (!stop && c.write(chunk)); if (!stop) c.once('drain', pump) }
  pump()
  await new Promise(resolve => setTimeout(resolve, 100))
  const errored = once(c, 'error', 5000)
  peer.child.kill('SIGKILL')
  const [err] = await errored
  stop = true
  t.ok(['ECONNRESET', 'EPIPE'].includes(err.code), `writer errors with ${err.code}`)
  await once(c, 'close', 5000)
})
