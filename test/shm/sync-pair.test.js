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
  // the same with the yielding spin (sched_yield() between polls)
  for (let i = 0; i < 1000; i++) {
    out.fill(i + 0.25)
    const w = c.writeSync(out, { yield: true })
    const n = c.readIntoSync(back, { spinUs: 100, timeoutMs: 5000, yield: true })
    if (w !== 64 || n !== 64 || back[7] !== i + 0.25) return t.fail(`yielding round trip ${i}: wrote ${w}, read ${n} bytes, ${back[7]}`)
  }
  t.pass('1000 round trips with { yield: true }, every value intact')
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
  // the yielding spin keeps the deadline too, spinning past it or not
  for (const spinUs of [10, 500000]) {
    const t1 = Date.now()
    t.throws(() => client.readIntoSync(new Uint8Array(4), { spinUs, timeoutMs: 100, yield: true }), { code: 'ETIMEDOUT' })
    const took = Date.now() - t1
    t.ok(took >= 90 && took < 2000, `yield, spinUs ${spinUs}: waited about timeoutMs (${took} ms)`)
  }
})

t.test('bad arguments are refused with code, before any byte moves', { skip }, async t => {
  const { client } = await pair('shm', { t })
  for (const [m, args, code] of [
    ['writeSync', ['abc'], 'ERR_INVALID_ARG_TYPE'],
    ['writeSync', [{ length: 4 }], 'ERR_INVALID_ARG_TYPE'],
    ['readIntoSync', [null], 'ERR_INVALID_ARG_TYPE'],
    ['writeSync', [new Uint8Array(4), 5], 'ERR_INVALID_ARG_TYPE'],
    ['readIntoSync', [new Uint8Array(4), { spinUs: '5' }], 'ERR_INVALID_ARG_TYPE'],
    ['writeSync', [new Uint8Array(4), { timeoutMs: -1 }], 'ERR_OUT_OF_RANGE'],
    ['readIntoSync', [new Uint8Array(4), { spinUs: NaN }], 'ERR_OUT_OF_RANGE'],
    ['readIntoSync', [new Uint8Array(4), { yield: 1 }], 'ERR_INVALID_ARG_TYPE'],
    ['writeSync', [new Uint8Array(4), { yield: 'yes' }], 'ERR_INVALID_ARG_TYPE']
  ]) t.throws(() => client[m](...args), { code }, `${m}(${args.map(a => typeof a).join(', ')}) -> ${code}`)
  t.equal(client.bytesWritten, 0, 'nothing was written')
  // Empty views of every kind are fine: nothing to move.
  t.equal(client.writeSync(new DataView(new ArrayBuffer(0))), 0)
  t.equal(client.readIntoSync(new Float64Array(0), { timeoutMs: 100 }), 0)
})

t.test('a full ring: writeSync times out with bytesWritten, and those bytes arrive', { skip }, async t => {
  const ringBytes = require('../../dist/config').configuredRingBytes()
  const { client, serverSocket } = await pair('shm', { t })
  // The server is on this thread's loop, which cannot run while writeSync blocks: it reads nothing.
  const err = t.throws(() => client.writeSync(new Uint8Array(ringBytes + 4096), { spinUs: 10, timeoutMs: 100 }), { code: 'ETIMEDOUT' })
  t.equal(err.bytesWritten, ringBytes, 'the ring filled up, then the wait timed out')
  let got = 0
  await new Promise(resolve => serverSocket.on('data', d => { got += d.length; if (got >= ringBytes) resolve() }))
  t.equal(got, ringBytes, 'every byte writeSync reported arrived')
})

t.test('a closed peer: readIntoSync sees EOF (fewer bytes), or ECONNRESET after a reset', { skip }, async t => {
  const a = await pair('shm', { t, clientOptions: { allowHalfOpen: true } })
  a.serverSocket.end(new Uint8Array([1, 2, 3]))
  await new Promise(resolve => setTimeout(resolve, 100)) // the client buffers the 3 bytes and EOF
  const b = new Uint8Array(8)
  t.equal(a.client.readIntoSync(b, { timeoutMs: 5000 }), 3, 'EOF after 3 of 8 bytes')
  t.same([...b.subarray(0, 3)], [1, 2, 3])
  t.equal(a.client.readIntoSync(b, { timeoutMs: 5000 }), 0, 'then EOF: 0 bytes')
  const r = await pair('shm', { t })
  r.serverSocket.write(new Uint8Array([9]))
  await new Promise(resolve => setTimeout(resolve, 50))
  r.client.pause()
  r.client.writeSync(new Uint8Array(4)) // unread by the server when it resets
  r.serverSocket.resetAndDestroy()
  const c = new Uint8Array(8)
  t.throws(() => r.client.readIntoSync(c, { timeoutMs: 5000 }), { code: 'ECONNRESET' })
  t.throws(() => { r.client.destroy(); r.client.writeSync(new Uint8Array(1)) }, { code: 'EPIPE' }, 'writeSync on a destroyed socket')
})

t.test('one writeSync of 8 MiB (8 rings) into a worker that reads with \'data\' events', { skip }, async t => {
  const worker = new Worker(`
    const { parentPort } = require('worker_threads')
    const fastsock = require(${JSON.stringify(require.resolve('../..'))})
    const server = fastsock.createServer({ transports: ['shm'] }, s => {
      let n = 0, sum = 0
      s.on('data', d => {
        for (let i = 0; i < d.length; i++) sum = (sum + d[i] * ((n + i) % 251)) % 1000000007
        n += d.length
        if (n === 8 << 20) s.end(Buffer.from(new Float64Array([n, sum]).buffer))
      })
    })
    server.listen(0, '127.0.0.1', () => parentPort.postMessage(server.address().port))
  `, { eval: true })
  t.teardown(() => worker.terminate())
  const port = await new Promise(resolve => worker.once('message', resolve))
  const c = fastsock.connect({ port, host: '127.0.0.1', transports: ['shm'] })
  await new Promise((resolve, reject) => c.once('connect', resolve).once('error', reject))
  const big = new Uint8Array(8 << 20).map((_, i) => (i * 31) & 255)
  let sum = 0
  for (let i = 0; i < big.length; i++) sum = (sum + big[i] * (i % 251)) % 1000000007
  t.equal(c.writeSync(big, { spinUs: 20, timeoutMs: 20000 }), big.length, 'all 8 MiB written in one call')
  const back = new Float64Array(2)
  t.equal(c.readIntoSync(back, { timeoutMs: 20000 }), 16)
  t.same([...back], [big.length, sum], 'the worker got every byte, in order')
  c.destroy()
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
