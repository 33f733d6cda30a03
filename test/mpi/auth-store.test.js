'use strict'
// The store's challenge and response (lib/mpi/store.ts with lib/mpi/auth.ts), against real
// second processes: a client with the wrong secret, one with none, and (as root) a process of
// another user (nobody) that sends a HELLO claiming rank 1 to a store without a secret: each is
// refused, and the real rank 1 still joins afterwards; a flood of silent connections holds at most
// maxUnproven of them and a rank still joins.
const t = require('tap')
const { spawn } = require('child_process')
const path = require('path')
const { StoreServer } = require('../../dist/mpi/store')
const auth = require('../../dist/mpi/auth')

const DIST = path.join(__dirname, '..', '..', 'dist', 'mpi')

/** Runs node `code` in a child (extra spawn options `opts`); resolves { code, out }. */
function child (code, env = {}, opts = {}) {
  return new Promise(resolve => {
    // As another user, through env -i: tap's process hooks (injected into children) cannot write as nobody.
    const p = opts.uid !== undefined
      ? spawn('env', ['-i', `PATH=${process.env.PATH}`, process.execPath, '-e', code], { stdio: ['ignore', 'pipe', 'pipe'], ...opts })
      : spawn(process.execPath, ['-e', code], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'], ...opts })
    let out = ''
    p.stdout.on('data', d => { out += d })
    p.stderr.on('data', d => { out += d })
    p.on('close', c => resolve({ code: c, out }))
  })
}

const CONNECT = (port, rank) => `
const { StoreClient } = require(${JSON.stringify(path.join(DIST, 'store'))})
const { discoverSecret } = require(${JSON.stringify(path.join(DIST, 'auth'))})
StoreClient.connect({ host: '127.0.0.1', port: ${port} }, { rank: ${rank}, timeoutMs: 3000, secret: discoverSecret()?.key ?? null })
  .then(async c => { await c.set('from/${rank}', 'x'); console.log('JOINED'); await c.finalizing(); await c.close() },
        e => { console.log('REFUSED', e.code, e.message); process.exitCode = 3 })`

t.test('with a secret: the wrong secret and no secret are refused, the right one joins', async t => {
  const secret = auth.newSecret()
  const key = auth.discoverSecret({ FASTSOCK_MPI_SECRET: secret }).key
  const server = await StoreServer.listen({ host: '127.0.0.1', port: 0 }, { secret: key })
  t.teardown(() => server.close({ graceMs: 0 }))
  const port = server.address.port
  const wrong = await child(CONNECT(port, 1), { FASTSOCK_MPI_SECRET: auth.newSecret() })
  t.equal(wrong.code, 3)
  t.match(wrong.out, /REFUSED ERR_MPI_LAUNCH .*did not prove the job's secret/, 'wrong secret: the server does not prove ours')
  const none = await child(CONNECT(port, 1), { FASTSOCK_MPI_SECRET: '' })
  t.equal(none.code, 3)
  t.match(none.out, /REFUSED ERR_MPI_LAUNCH/, 'no secret: refused')
  t.same(server.connectedRanks, [], 'neither registered rank 1')
  const right = await child(CONNECT(port, 1), { FASTSOCK_MPI_SECRET: secret })
  t.match(right.out, /JOINED/, 'the right secret joins as rank 1')
  t.equal(right.code, 0)
})

t.test('a raw client that never proves is cut, and its junk is not buffered', async t => {
  const key = auth.discoverSecret({ FASTSOCK_MPI_SECRET: auth.newSecret() }).key
  const server = await StoreServer.listen({ host: '127.0.0.1', port: 0 }, { secret: key })
  t.teardown(() => server.close({ graceMs: 0 }))
  // A frame claiming 1 MiB before any proof: over the handshake's limit, the server hangs up.
  const r = await child(`
const s = require('net').connect(${server.address.port}, '127.0.0.1', () => { const b = Buffer.alloc(9); b.writeUInt32LE(1 << 20, 0); b[4] = 2; s.write(b) })
s.on('close', () => console.log('CLOSED')); s.on('error', () => {})`)
  t.match(r.out, /CLOSED/)
})

const canSetuid = typeof process.getuid === 'function' && process.getuid() === 0
t.test('another user (nobody) gets nothing in a store without a secret', { skip: !canSetuid && 'needs root to run a child as nobody' }, async t => {
  const server = await StoreServer.listen({ host: '127.0.0.1', port: 0 }, { secret: null })
  t.teardown(() => server.close({ graceMs: 0 }))
  const port = server.address.port
  // The intruder speaks the protocol itself (it knows all of ps and /proc: address and port):
  // HELLO as rank 1, then PROVE with nothing.
  const intruder = await child(`
const net = require('net')
const s = net.connect(${port}, '127.0.0.1')
function frame (op, id, body) { const b = Buffer.alloc(9 + body.length); b.writeUInt32LE(5 + body.length, 0); b[4] = op; b.writeUInt32LE(id, 5); body.copy(b, 9); return b }
const hello = Buffer.alloc(12 + 32); hello.writeUInt32LE(0x534d5346, 0); hello.writeUInt32LE(3, 4); hello.writeInt32LE(1, 8)
s.on('connect', () => { s.write(frame(1, 1, hello)); s.write(frame(11, 2, Buffer.alloc(0))); s.write(frame(2, 3, Buffer.from('\\u0004\\u0000evil1'))) })
let got = Buffer.alloc(0); s.on('data', d => { got = Buffer.concat([got, d]) })
s.on('close', () => console.log('REPLY', got.toString('latin1').replace(/[^ -~]/g, '.'))); s.on('error', () => {})`, {}, { uid: 65534, gid: 65534 })
  t.match(intruder.out, /REPLY .*ERR_MPI_LAUNCH.*uid 65534/, `refused by uid: ${intruder.out.trim()}`)
  t.same(server.connectedRanks, [], 'the intruder holds no rank')
  const right = await child(CONNECT(port, 1), { FASTSOCK_MPI_SECRET: '' })
  t.match(right.out, /JOINED/, 'the real rank 1 still joins')
})

t.test('a flood of silent connections holds at most maxUnproven; a rank still joins', async t => {
  const secret = auth.newSecret()
  const key = auth.discoverSecret({ FASTSOCK_MPI_SECRET: secret }).key
  const server = await StoreServer.listen({ host: '127.0.0.1', port: 0 }, { secret: key, maxUnproven: 8 })
  t.teardown(() => server.close({ graceMs: 0 }))
  const net = require('net')
  const flood = []
  let cut = 0
  for (let i = 0; i < 40; i++) {
    const s = net.connect(server.address.port, '127.0.0.1')
    s.on('error', () => {})
    s.on('close', () => { cut++ })
    flood.push(s)
  }
  for (let i = 0; i < 500 && cut < 32; i++) await new Promise(resolve => setTimeout(resolve, 10))
  t.equal(server.evicted, 32, 'the 32 oldest were cut')
  t.equal(cut, 32)
  // A rank arriving now evicts the oldest silent one and proves itself.
  const right = await child(CONNECT(server.address.port, 1), { FASTSOCK_MPI_SECRET: secret })
  t.match(right.out, /JOINED/, 'the real rank 1 joins through the flood')
  t.same(server.connectedRanks, [], 'and left in order')
  for (const s of flood) s.destroy()
})
