'use strict'
// SHM_SETUP pipelined behind HELLO (docs/wire-protocol.md, "Pipelined SHM_SETUP"), against a
// fastsock server in another process: the first connect learns from ACCEPT that the server
// reads it, later ones send it with HELLO (one round trip); a server that picks unix, or
// rejects, after a pipelined SHM_SETUP closes its fds; the previous protocol still works both
// ways (a client that does not pipeline against this server, this client against a server whose
// ACCEPT has no flags).
const t = require('tap')
const fs = require('fs')
const path = require('path')
const diagnostics = require('diagnostics_channel')
const { rungs } = require('../helpers/rungs')
const { spawnNode, once, within, sleep } = require('../helpers/util')
const fastsock = require('../..')
const native = require('node-gyp-build')(path.join(__dirname, '..', '..'))
const wire = require('../../dist/wire.js')
const { channelName } = require('../../dist/sidechannel/names.js')
const { pooledSegments } = require('../../dist/transports/shm/pool.js')

const skip = !rungs.includes('shm') && 'shm is not available here'

// A fastsock echo server; FASTSOCK_TEST_MAX_CONNECTIONS sets maxConnections. On a line on stdin
// it prints its open fds (the memfds among them apart).
const SERVER = `
const fs = require('fs')
const fastsock = require('.')
const print = o => process.stdout.write(JSON.stringify(o) + '\\n')
const server = fastsock.createServer(s => { s.on('error', () => {}); print({ event: 'connection', transport: s.transport }); s.pipe(s) })
if (process.env.FASTSOCK_TEST_MAX_CONNECTIONS) server.maxConnections = Number(process.env.FASTSOCK_TEST_MAX_CONNECTIONS)
server.listen(0, '127.0.0.1', () => print({ event: 'listening', port: server.address().port }))
process.stdin.on('data', () => {
  const fds = fs.readdirSync('/proc/self/fd')
  const memfds = fds.filter(f => { try { return fs.readlinkSync('/proc/self/fd/' + f).includes('memfd:') } catch { return false } })
  print({ event: 'fds', n: fds.length, memfds: memfds.length })
})
`

function startServer (t, env = {}) {
  const peer = spawnNode(t, ['-e', SERVER], { env })
  let asked = 0
  return {
    peer,
    port: peer.waitFor(m => m.event === 'listening').then(m => m.port),
    /** The server's open fds now. */
    async fds () {
      const k = ++asked
      peer.child.stdin.write('fds\n')
      await peer.waitFor(m => m.event === 'fds' && peer.messages.filter(x => x.event === 'fds').length >= k)
      return peer.messages.filter(m => m.event === 'fds')[k - 1]
    }
  }
}

/** The set-up steps this process publishes while `fn` runs. */
async function stepsOf (fn) {
  const seen = []
  const on = m => seen.push(m.step)
  diagnostics.subscribe('fastsock:sidechannel-step', on)
  try {
    return { result: await fn(), steps: seen }
  } finally {
    diagnostics.unsubscribe('fastsock:sidechannel-step', on)
  }
}

/** Connects, echoes a few bytes, closes; resolves with the transport and the failed attempts. */
async function roundTrip (port, transports) {
  const failures = []
  const c = fastsock.connect({ port, host: '127.0.0.1', transports, transportTimeoutMs: 3000 })
  c.on('transportAttemptFailed', f => failures.push(f))
  c.on('error', () => {})
  await within(once(c, 'connect', 5000), 5000, 'connect')
  const transport = c.transport
  c.write('ping')
  const [d] = await within(once(c, 'data', 5000), 5000, 'echo')
  c.destroy()
  await once(c, 'close')
  return { transport, echoed: String(d), failures }
}

const myFds = () => fs.readdirSync('/proc/self/fd').length
// Segments only: the loop's ready list (memfd:fastsock-ready) stays open with its loop.
const myMemfds = () => fs.readdirSync('/proc/self/fd').filter(f => {
  try { return fs.readlinkSync(`/proc/self/fd/${f}`).includes('memfd:fastsock-shm') } catch { return false }
}).length

t.test('the first connect learns the flag, the next ones pipeline SHM_SETUP', { skip }, async t => {
  const s = startServer(t)
  const port = await s.port
  const first = await stepsOf(() => roundTrip(port, ['shm']))
  t.equal(first.result.transport, 'shm')
  t.equal(first.result.echoed, 'ping')
  t.ok(first.steps.includes('HELLO written') && !first.steps.includes('HELLO+SHM_SETUP written'), 'first connect: HELLO alone')
  for (let i = 0; i < 3; i++) {
    const next = await stepsOf(() => roundTrip(port, ['shm', 'unix', 'tcp']))
    t.equal(next.result.transport, 'shm', `connect ${i + 2} on shm`)
    t.equal(next.result.echoed, 'ping', 'data flows')
    t.ok(next.steps.includes('HELLO+SHM_SETUP written'), `connect ${i + 2}: SHM_SETUP went with HELLO`)
    t.same(next.result.failures, [], 'no attempt failed')
  }
})

t.test('a server that picks unix drops a pipelined SHM_SETUP and closes its fds', { skip }, async t => {
  const s = startServer(t, { FASTSOCK_TRANSPORTS: 'unix,tcp' })
  const port = await s.port
  await roundTrip(port, ['shm', 'unix', 'tcp']) // learns the flag (ACCEPT(unix) carries it too)
  await sleep(50)
  const before = await s.fds()
  const mine = myFds()
  for (let i = 0; i < 20; i++) {
    const r = await stepsOf(() => roundTrip(port, ['shm', 'unix', 'tcp']))
    t.equal(r.result.transport, 'unix', 'the server chose unix')
    t.equal(r.result.echoed, 'ping', 'data flows')
    if (i === 0) t.ok(r.steps.includes('HELLO+SHM_SETUP written'), 'the client pipelined SHM_SETUP')
  }
  await sleep(100)
  const after = await s.fds()
  t.equal(after.memfds, 0, 'the server holds no memfd')
  t.equal(after.n, before.n, `the server's fds are back to ${before.n}`)
  t.equal(myMemfds(), pooledSegments(), 'the client closed its unused segment (the memfds left are the pool\'s, made ahead)')
  t.equal(myFds(), mine, `the client's fds are back to ${mine}`)
})

t.test('REJECT after a pipelined SHM_SETUP: fds closed on both ends, the client falls back', { skip }, async t => {
  const s = startServer(t, { FASTSOCK_TEST_MAX_CONNECTIONS: '1' })
  const port = await s.port
  const held = fastsock.connect({ port, host: '127.0.0.1', transports: ['shm'] })
  await once(held, 'connect')
  t.equal(held.transport, 'shm')
  await s.peer.waitFor(m => m.event === 'connection')
  await sleep(50)
  const before = await s.fds()
  const mine = myFds()
  for (let i = 0; i < 5; i++) {
    const failures = []
    const r = await stepsOf(async () => {
      const c = fastsock.connect({ port, host: '127.0.0.1', transports: ['shm', 'tcp'] })
      c.on('transportAttemptFailed', f => failures.push(f))
      c.on('error', () => {})
      await once(c, 'connect')
      const transport = c.transport
      c.destroy()
      await once(c, 'close')
      return transport
    })
    t.equal(r.result, 'tcp', 'fell back to tcp')
    t.ok(r.steps.includes('HELLO+SHM_SETUP written'), 'SHM_SETUP was pipelined')
    t.ok(failures.some(f => f.transport === 'shm' && f.error.code === 'ERR_FASTSOCK_REJECTED' && /busy|maxConnections/i.test(f.error.message)),
      `shm was refused as busy: ${failures.map(f => f.error.message).join('; ')}`)
  }
  await sleep(100)
  const after = await s.fds()
  t.equal(after.memfds, before.memfds, 'the server kept no refused segment')
  t.equal(after.n, before.n, `the server's fds are back to ${before.n}`)
  t.equal(myFds(), mine, `the client's fds are back to ${mine}`)
  held.destroy()
})

/** A raw side-channel client of the real server (no verification: the test trusts its child). */
function rawSide (port) {
  const fd = native.connectAbstract(channelName('127.0.0.1', port))
  if (fd < 0) throw new Error(`side channel: ${fd}`)
  return fd
}

/** Reads until `want` messages are in (or the channel closes); resolves with them and their fds. */
function readMessages (fd, want, ms = 3000) {
  return within(new Promise((resolve, reject) => {
    let acc = Buffer.alloc(0)
    const fds = []
    const step = () => native.waitReadable(fd, ms, status => {
      if (status < 0) return reject(new Error(`waitReadable ${status}`))
      const r = native.recvFds(fd, 512, 4)
      if (typeof r === 'number') return reject(new Error(`recvFds ${r}`))
      fds.push(...r.fds)
      acc = Buffer.concat([acc, r.bytes])
      const out = []
      let off = 0
      let p
      while (off < acc.length && (p = wire.decode(acc.subarray(off)))) { out.push(p.message); off += p.bytes }
      if (out.length >= want || r.bytes.length === 0) return resolve({ messages: out, fds, rest: acc.length - off })
      step()
    })
    step()
  }), ms + 500, 'the server\'s reply')
}

const hello = (port, capabilities) => wire.encodeHello({ capabilities, family: 4, address: Uint8Array.from([127, 0, 0, 1]), port })
const setup = () => {
  const memfd = native.shmCreateSegment(8192, 8192).memfd
  const bell = native.shmLoopDoorbell()
  return { bytes: wire.encodeShmSetup(8192, 8192, bell.id, bell.readyNodes), fds: [memfd, native.dupFd(bell.fd), native.dupFd(bell.readyFd)] }
}
const closeAll = fds => { for (const f of fds) native.closeFd(f) }

t.test('a client of the previous protocol (HELLO alone, SHM_SETUP after ACCEPT) is served as before', { skip }, async t => {
  const s = startServer(t)
  const port = await s.port
  const fd = rawSide(port)
  t.equal(native.sendFds(fd, hello(port, wire.CAP_SHM), []), wire.HELLO_BYTES)
  const a = await readMessages(fd, 1)
  t.equal(a.messages[0].type, wire.MessageType.Accept)
  t.equal(a.messages[0].transport, wire.TRANSPORT_SHM)
  t.equal(a.messages[0].flags & wire.ACCEPT_SHM_EARLY, wire.ACCEPT_SHM_EARLY, 'ACCEPT announces pipelined SHM_SETUP')
  t.equal(a.messages.length, 1, 'nothing but ACCEPT before SHM_SETUP')
  const su = setup()
  native.sendFds(fd, su.bytes, su.fds)
  closeAll(su.fds)
  const r = await readMessages(fd, 1)
  t.equal(r.messages[0].type, wire.MessageType.ShmReady, 'SHM_READY')
  t.equal(r.fds.length, 2, 'with the server loop\'s doorbell and ready list')
  t.ok(native.isEventfd(r.fds[0]))
  await s.peer.waitFor(m => m.event === 'connection' && m.transport === 'shm')
  closeAll(r.fds)
  native.closeFd(fd)
})

t.test('pipelined by hand: one reply (ACCEPT + SHM_READY), also when SHM_SETUP comes in a later write', { skip }, async t => {
  const s = startServer(t)
  const port = await s.port
  for (const split of [false, true]) {
    const fd = rawSide(port)
    const su = setup()
    const h = hello(port, wire.CAP_SHM | wire.CAP_SHM_EARLY)
    if (split) {
      native.sendFds(fd, h, [])
      await sleep(30)
      native.sendFds(fd, su.bytes, su.fds)
    } else {
      native.sendFds(fd, Buffer.concat([h, su.bytes]), su.fds)
    }
    closeAll(su.fds)
    const r = await readMessages(fd, 2)
    t.same(r.messages.map(m => m.type), [wire.MessageType.Accept, wire.MessageType.ShmReady], `${split ? 'split' : 'one write'}: ACCEPT then SHM_READY`)
    t.equal(r.fds.length, 2, 'the doorbell and the ready list came with them')
    closeAll(r.fds)
    native.closeFd(fd)
  }
  await s.peer.waitFor(m => s.peer.messages.filter(x => x.event === 'connection').length >= 2)
})

t.test('fds with a HELLO that announces no SHM_SETUP: REJECT Malformed, the fds closed', { skip }, async t => {
  const s = startServer(t)
  const port = await s.port
  await sleep(50)
  const before = await s.fds()
  const fd = rawSide(port)
  const su = setup()
  native.sendFds(fd, Buffer.concat([hello(port, wire.CAP_SHM), su.bytes]), su.fds)
  closeAll(su.fds)
  const r = await readMessages(fd, 1)
  t.equal(r.messages[0].type, wire.MessageType.Reject)
  t.equal(r.messages[0].reason, wire.RejectReason.Malformed)
  native.closeFd(fd)
  await sleep(100)
  const after = await s.fds()
  t.equal(after.n, before.n, 'the server kept none of the fds')
})

t.test('against a server of the previous protocol (ACCEPT without flags) the client never pipelines', { skip }, async t => {
  const peer = spawnNode(t, [require.resolve('../fixtures/fake-shm-server.js'), 'ok'])
  const { port } = await peer.waitFor(m => m.event === 'listening')
  for (let i = 0; i < 3; i++) {
    const c = fastsock.connect({ port, host: '127.0.0.1', transports: ['shm', 'tcp'], transportTimeoutMs: 1000 })
    c.on('error', () => {})
    await once(c, 'connect')
    t.equal(c.transport, 'shm', 'connected on shm')
    c.destroy()
    await once(c, 'close')
  }
  const hellos = peer.messages.filter(m => m.event === 'hello')
  t.equal(hellos.length, 3)
  for (const h of hellos) {
    t.equal(h.bytes, wire.HELLO_BYTES, 'HELLO alone')
    t.equal(h.capabilities & wire.CAP_SHM_EARLY, 0, 'no CAP_SHM_EARLY')
  }
})
