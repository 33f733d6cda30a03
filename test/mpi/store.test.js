'use strict'
// lib/mpi/store.ts in one process: the operations (set/get/wait/add/check/deleteKey), their
// deadlines, registration, liveness events (rankLost on a drop without finalizing, none after
// finalizing, rankLost(0) when the server goes away), abort relay, retries while nobody listens,
// an unreachable store, a UNIX socket store, and garbage on the wire (a frame before HELLO
// included: the connection is closed). Across processes:
// store-procs.test.js.
const t = require('tap')
const fs = require('fs')
const net = require('net')
const os = require('os')
const path = require('path')
const { once } = require('events')
const { StoreServer, StoreClient, MAX_KEY } = require('../../dist/mpi/store.js')

const within = (p, ms, what) => Promise.race([p, new Promise((_resolve, reject) => setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms).unref())])
const eventOnce = (em, ev, ms = 3000) => within(once(em, ev), ms, `event ${ev}`)

async function setup (t, n = 2, addr = { host: '127.0.0.1', port: 0 }) {
  const server = await StoreServer.listen(addr)
  const clients = []
  for (let r = 0; r < n; r++) clients.push(await StoreClient.connect(server.address, { rank: r, timeoutMs: 5000 }))
  t.teardown(async () => {
    for (const c of clients) await c.close()
    await server.close({ graceMs: 0 })
  })
  return { server, clients }
}

t.test('set, get, wait, add, check, deleteKey', async t => {
  const { clients: [a, b] } = await setup(t)
  await a.set('s', 'hello')
  t.equal(Buffer.from(await b.get('s')).toString(), 'hello')
  const bytes = new Uint8Array([0, 255, 1, 2])
  await a.set('bin', bytes)
  t.same([...await b.get('bin')], [0, 255, 1, 2])
  await a.set('f64', new Float64Array([1.5]))
  t.equal(new Float64Array(new Uint8Array(await b.get('f64')).buffer)[0], 1.5)
  const big = Buffer.alloc(1 << 20, 7)
  await a.set('big', big)
  t.ok(Buffer.from(await b.get('big')).equals(big), '1 MiB value')
  await a.set('empty', '')
  t.equal((await b.get('empty')).length, 0)
  // get waits for a later set.
  const pending = b.get('later')
  await new Promise(resolve => setTimeout(resolve, 50))
  await a.set('later', 'now')
  t.equal(Buffer.from(await pending).toString(), 'now')
  // wait for several keys.
  const w = b.wait(['w1', 'w2', 's'])
  await a.set('w1', '1')
  let settled = false
  w.then(() => { settled = true })
  await new Promise(resolve => setTimeout(resolve, 30))
  t.notOk(settled, 'wait still waits for w2')
  await a.set('w2', '2')
  await w
  t.equal(await a.add('ctr', 1), 1)
  t.equal(await b.add('ctr', 5), 6)
  t.equal(await a.add('ctr', -2), 4)
  t.equal(Buffer.from(await b.get('ctr')).toString(), '4', 'a counter reads as decimal text')
  t.equal(await a.check(['ctr', 's']), true)
  t.equal(await a.check(['ctr', 'nope']), false)
  t.equal(await a.deleteKey('ctr'), true)
  t.equal(await a.deleteKey('ctr'), false)
  t.equal(await a.check(['ctr']), false)
  await t.rejects(a.add('s', 1), { code: 'ERR_MPI_PROTOCOL' }, 'add on a non-integer value')
  // concurrent adds give distinct values
  const got = await Promise.all(Array.from({ length: 20 }, (_v, i) => (i % 2 ? a : b).add('race', 1)))
  t.same(got.sort((x, y) => x - y), Array.from({ length: 20 }, (_v, i) => i + 1))
})

t.test('argument errors', async t => {
  const { clients: [a] } = await setup(t, 1)
  await t.rejects(a.set(5, 'x'), { code: 'ERR_INVALID_ARG_TYPE' })
  await t.rejects(a.set('k', 5), { code: 'ERR_INVALID_ARG_TYPE' })
  await t.rejects(a.get('x'.repeat(MAX_KEY + 1)), { code: 'ERR_OUT_OF_RANGE' })
  await t.rejects(a.add('k', 1.5), { code: 'ERR_INVALID_ARG_TYPE' })
  await t.rejects(a.get('k', { timeoutMs: 0 }), { code: 'ERR_OUT_OF_RANGE' })
  await t.rejects(StoreClient.connect({ host: '127.0.0.1', port: 1 }, { rank: 'x' }), { code: 'ERR_INVALID_ARG_TYPE' })
})

t.test('deadlines: get and wait reject with ERR_MPI_STORE_TIMEOUT, the client stays usable', async t => {
  const { clients: [a, b] } = await setup(t)
  const t0 = Date.now()
  await t.rejects(b.get('never', { timeoutMs: 150 }), { code: 'ERR_MPI_STORE_TIMEOUT', message: /never/ })
  t.ok(Date.now() - t0 >= 140, 'not before its deadline')
  await t.rejects(b.wait(['x', 'y'], { timeoutMs: 100 }), { code: 'ERR_MPI_STORE_TIMEOUT' })
  // The cancelled waiters are gone: setting the keys now answers nobody twice.
  await a.set('never', '1')
  await a.set('x', '1')
  await a.set('y', '1')
  t.equal(Buffer.from(await b.get('never')).toString(), '1')
  await b.wait(['x', 'y'], { timeoutMs: 1000 })
})

t.test('registration: a rank registers once', async t => {
  const { server } = await setup(t, 2)
  t.same(server.connectedRanks, [0, 1])
  await t.rejects(StoreClient.connect(server.address, { rank: 1, timeoutMs: 2000 }), { code: 'ERR_MPI_LAUNCH', message: /rank 1 registered twice/ })
  const observer = await StoreClient.connect(server.address, { rank: -1, timeoutMs: 2000 })
  t.equal(observer.localAddress, '127.0.0.1')
  t.equal(observer.observedAddress, '127.0.0.1')
  await observer.close()
})

t.test('liveness: a drop without finalizing is reported, with it is not', async t => {
  const { server, clients: [a, b, c] } = await setup(t, 3)
  const serverLost = eventOnce(server, 'rankLost')
  const aLost = eventOnce(a, 'rankLost')
  const bLost = eventOnce(b, 'rankLost')
  await c.close() // no finalizing(): lost
  t.same(await aLost, [2])
  t.same(await bLost, [2])
  t.same(await serverLost, [2])
  // A late registrant hears of earlier losses.
  const d = await StoreClient.connect(server.address, { rank: 3, timeoutMs: 2000 })
  t.same(await eventOnce(d, 'rankLost'), [2], 'rank 3, registered after, is told rank 2 is lost')
  t.ok(d.lostRanks.has(2))
  await t.rejects(StoreClient.connect(server.address, { rank: 2, timeoutMs: 2000 }), { code: 'ERR_MPI_LAUNCH', message: /rank 2 was lost and cannot rejoin/ })
  // Orderly leave: no event.
  let told = false
  a.on('rankLost', r => { if (r === 1) told = true })
  await b.finalizing()
  await b.close()
  await new Promise(resolve => setTimeout(resolve, 200))
  t.notOk(told, 'rank 1 left after finalizing(): not reported')
  await d.close()
})

t.test('liveness: the server going away is rankLost(0) and fails pending operations', async t => {
  const server = await StoreServer.listen({ host: '127.0.0.1', port: 0 })
  const a = await StoreClient.connect(server.address, { rank: 1, timeoutMs: 2000 })
  const fin = await StoreClient.connect(server.address, { rank: 2, timeoutMs: 2000 })
  await fin.finalizing()
  let finTold = false
  fin.on('rankLost', () => { finTold = true })
  const pending = a.get('never')
  const lost = eventOnce(a, 'rankLost')
  await server.close({ graceMs: 0 })
  t.same(await lost, [0])
  await t.rejects(pending, { code: 'ERR_MPI_PEER_LOST', rank: 0 })
  await t.rejects(a.set('k', 'v'), { code: 'ERR_MPI_PEER_LOST' })
  t.notOk(finTold, 'a finalizing client is not told')
  await a.close()
  await fin.close()
  await t.rejects(a.get('k'), { code: 'ERR_MPI_STORE_CLOSED' })
})

t.test('server close waits for its clients up to graceMs', async t => {
  const server = await StoreServer.listen({ host: '127.0.0.1', port: 0 })
  const a = await StoreClient.connect(server.address, { rank: 1, timeoutMs: 2000 })
  const closing = server.close({ graceMs: 5000 })
  await new Promise(resolve => setTimeout(resolve, 100))
  await a.set('still', 'works')
  await a.finalizing()
  await a.close()
  await within(closing, 2000, 'close after the last client left')
  t.pass()
})

t.test('abort is relayed to every other client', async t => {
  const { server, clients: [a, b, c] } = await setup(t, 3)
  const bAbort = eventOnce(b, 'abort')
  const cAbort = eventOnce(c, 'abort')
  const sAbort = eventOnce(server, 'abort')
  await a.abort(7, 'why it aborted')
  t.same(await bAbort, [7, 0, 'why it aborted'], 'with the rank and the reason')
  t.same(await cAbort, [7, 0, 'why it aborted'])
  t.same(await sAbort, [7, 0, 'why it aborted'])
})

t.test('connect retries until the server listens', async t => {
  const port = await new Promise(resolve => { const s = net.createServer().listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)) }) })
  const connecting = StoreClient.connect({ host: '127.0.0.1', port }, { rank: 1, timeoutMs: 5000 })
  await new Promise(resolve => setTimeout(resolve, 300))
  const server = await StoreServer.listen({ host: '127.0.0.1', port })
  const c = await connecting
  t.same(server.connectedRanks, [1])
  await c.close()
  await server.close({ graceMs: 0 })
})

t.test('an unreachable store: ERR_MPI_INIT_TIMEOUT after timeoutMs', async t => {
  const port = await new Promise(resolve => { const s = net.createServer().listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)) }) })
  const t0 = Date.now()
  await t.rejects(StoreClient.connect({ host: '127.0.0.1', port }, { rank: 1, timeoutMs: 400 }), { code: 'ERR_MPI_INIT_TIMEOUT', message: new RegExp(`127\\.0\\.0\\.1:${port}.*ECONNREFUSED|127\\.0\\.0\\.1:${port}`) })
  const took = Date.now() - t0
  t.ok(took >= 390 && took < 10000, `rejected after ${took} ms`)
})

t.test('a UNIX socket store in a private directory', async t => {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'fsmpi-store-'))
  t.teardown(() => fs.rmSync(base, { recursive: true, force: true }))
  const sock = path.join(base, 'priv', 'job.sock')
  const connecting = StoreClient.connect({ path: sock }, { rank: 1, timeoutMs: 5000, verifyDir: true })
  await new Promise(resolve => setTimeout(resolve, 100))
  const server = await StoreServer.listen({ path: sock }, { privateDir: true })
  t.equal(fs.statSync(path.dirname(sock)).mode & 0o777, 0o700)
  const c = await connecting
  t.equal(c.localAddress, '127.0.0.1')
  await c.set('k', 'v')
  const c0 = await StoreClient.connect({ path: sock }, { rank: 0, timeoutMs: 2000, verifyDir: true })
  t.equal(Buffer.from(await c0.get('k')).toString(), 'v')
  await c.close(); await c0.close()
  await server.close()
  t.notOk(fs.existsSync(sock), 'the socket file is removed at close')
  // A directory others can enter is refused by a verifying client.
  fs.chmodSync(path.dirname(sock), 0o755)
  await t.rejects(StoreClient.connect({ path: sock }, { rank: 1, timeoutMs: 500, verifyDir: true }), { code: 'ERR_MPI_LAUNCH' })
})

t.test('a port in use: ERR_MPI_LAUNCH', async t => {
  const s = await StoreServer.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => s.close({ graceMs: 0 }))
  await t.rejects(StoreServer.listen({ host: '127.0.0.1', port: s.address.port }), { code: 'ERR_MPI_LAUNCH', message: /in use/ })
})

t.test('garbage on the wire does not hurt the server', async t => {
  const { clients: [a] } = await setup(t, 1)
  const server = a.address
  for (const junk of [Buffer.from('GET / HTTP/1.1\r\n\r\n'), Buffer.from([1, 0, 0, 0, 1]), Buffer.from([255, 255, 255, 255, 1, 2, 3]), Buffer.from([8, 0, 0, 0, 2, 1, 0, 0, 0, 1, 0, 0x6b])]) {
    const s = net.connect(server.port, '127.0.0.1')
    s.on('error', () => {})
    await once(s, 'connect')
    s.write(junk)
    await within(once(s, 'close'), 3000, 'the server drops a garbage connection').catch(() => s.destroy())
  }
  await a.set('alive', '1')
  t.equal(Buffer.from(await a.get('alive')).toString(), '1')
})
