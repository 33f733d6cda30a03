'use strict'
// writeSync / readIntoSync: the synchronous busy-poll pair, against a peer in a worker thread
// (its own event loop), and their refusals elsewhere.
const t = require('tap')
const { Worker } = require('worker_threads')
const { rungs, pair } = require('../helpers/rungs')
const fastsock = require('../..')

const skip = !rungs.includes('shm') && 'shm is not available here'

t.test('request/response with the sync pair against a worker', { skip }, async t => {
  const worker = new Worker(`
    const { parentPort } = require('worker_threads')
    const fastsock = require(${JSON.stringify(require.resolve('../..'))})
    const server = fastsock.createServer({ transports: ['shm'] }, s => s.pipe(s))
    server.listen(0, '127.0.0.1', () => parentPort.postMessage(server.address().port))
    parentPort.on('message', m => { if (m === 'stop') { server.close(); process.exit(0) } })
  `, { eval: true })
  t.teardown(() => worker.terminate())
  const port = await new Promise(resolve => worker.once('message', resolve))
  const c = fastsock.connect({ port, host: '127.0.0.1', transports: ['shm'] })
  await new Promise((resolve, reject) => c.once('connect', resolve).once('error', reject))
  t.equal(c.transport, 'shm')
  const out = new Float64Array(8)
  const back = new Float64Array(8)
  for (let i = 0; i < 1000; i++) {
    out.fill(i + 0.5)
    const w = c.writeSync(out)
    const n = c.readIntoSync(back, { spinUs: 100, timeoutMs: 5000 })
    if (w !== 64 || n !== 64 || back[7] !== i + 0.5) return t.fail(`round trip ${i}: wrote ${w}, read ${n} bytes, ${back[7]}`)
  }
  t.pass('1000 synchronous round trips of a Float64Array(8), every value intact')
  // Large: 3 MiB, more than a ring, in 256 KiB request/response steps (this thread blocks in
  // writeSync, so what it writes must fit the echo path before it reads back).
  const big = new Uint8Array(3 << 20).map((_, i) => i * 7)
  const got = new Uint8Array(big.length)
  const STEP = 256 << 10
  for (let off = 0; off < big.length; off += STEP) {
    c.writeSync(big.subarray(off, off + STEP), { timeoutMs: 5000 })
    if (c.readIntoSync(got.subarray(off, off + STEP), { timeoutMs: 5000 }) !== STEP) return t.fail(`short read at ${off}`)
  }
  t.equal(Buffer.compare(Buffer.from(got), Buffer.from(big)), 0, '3 MiB through the sync pair, intact')
  c.destroy()
})

t.test('readIntoSync times out when nothing comes', { skip }, async t => {
  const { client } = await pair('shm', { t })
  const t0 = Date.now()
  t.throws(() => client.readIntoSync(new Uint8Array(4), { spinUs: 10, timeoutMs: 100 }), { code: 'ETIMEDOUT' })
  t.ok(Date.now() - t0 >= 90, 'waited about timeoutMs')
})

t.test('the sync pair is refused off shm and with async writes queued', async t => {
  const { client } = await pair('tcp', { t })
  t.throws(() => client.writeSync(new Uint8Array(1)), { code: 'ERR_FASTSOCK_SYNC_UNAVAILABLE' })
  t.throws(() => client.readIntoSync(new Uint8Array(1)), { code: 'ERR_FASTSOCK_SYNC_UNAVAILABLE' })
})

t.test('a worker blocked in readIntoSync can be terminated (no abort)', { skip }, async t => {
  const { spawnNode } = require('../helpers/util')
  const child = spawnNode(t, ['-e', `
    const { Worker } = require('worker_threads')
    const fastsock = require(${JSON.stringify(require.resolve('../..'))})
    const w = new Worker(\`
      const { parentPort } = require('worker_threads')
      const fastsock = require(${JSON.stringify(require.resolve('../..'))})
      const server = fastsock.createServer({ transports: ['shm'] }, s => setImmediate(() => {
        const b = new Uint8Array(8)
        try { for (;;) { if (s.readIntoSync(b, { spinUs: 1000 }) < 8) break; s.writeSync(b) } } catch {}
      }))
      server.listen(0, '127.0.0.1', () => parentPort.postMessage(server.address().port))
    \`, { eval: true })
    w.once('message', port => {
      const c = fastsock.connect({ port, host: '127.0.0.1', transports: ['shm'] }, () => {
        c.writeSync(new Uint8Array(8)); c.readIntoSync(new Uint8Array(8))
        c.destroy()
        w.terminate().then(() => { console.log(JSON.stringify({ terminated: true })); process.exit(0) })
      })
    })
  `])
  await child.waitFor(m => m.terminated)
  const { code, signal } = await child.exited
  t.equal(signal, null, 'no abort')
  t.equal(code, 0)
})
