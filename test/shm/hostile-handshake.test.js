'use strict'
// A hostile peer on either side of the shm setup gets a clear error and a fallback, never a
// crash or a hang: a server that botches SHM_READY sends the client to the next rung; a client
// that sends bad segments gets REJECT, and the server keeps serving.
const t = require('tap')
const fs = require('fs')
const os = require('os')
const path = require('path')
const net = require('net')
const { rungs, pair } = require('../helpers/rungs')
const { spawnNode, once, within } = require('../helpers/util')
const fastsock = require('../..')
const native = require('node-gyp-build')(path.join(__dirname, '..', '..'))
const wire = require('../../dist/wire.js')
const { channelName } = require('../../dist/sidechannel/names.js')

const skip = !rungs.includes('shm') && 'shm is not available here'

for (const mode of ['garbage', 'close', 'silent']) {
  t.test(`server answers SHM_SETUP with ${mode}: the client falls back to tcp`, { skip }, async t => {
    const peer = spawnNode(t, [require.resolve('../fixtures/fake-shm-server.js'), mode])
    const { port } = await peer.waitFor(m => m.event === 'listening')
    const failures = []
    const c = fastsock.connect({ port, host: '127.0.0.1', transports: ['shm', 'unix', 'tcp'], transportTimeoutMs: 500 })
    c.on('transportAttemptFailed', f => failures.push(f))
    await within(once(c, 'connect', 5000), 5000, 'connect')
    t.equal(c.transport, 'tcp', 'landed on tcp')
    t.ok(failures.some(f => f.transport === 'shm' && /ERR_FASTSOCK_(HANDSHAKE|TRANSPORT_TIMEOUT)/.test(f.error.code)),
      `shm failed with a clear error: ${failures.map(f => `${f.transport}: ${f.error.code}`).join('; ')}`)
    const setup = await peer.waitFor(m => m.event === 'setup')
    t.equal(setup.fds, 3, 'the segment and the client loop\'s doorbell and ready list were offered')
    c.write('over tcp')
    const [d] = await once(c, 'data')
    t.equal(String(d), 'over tcp', 'data flows over the fallback')
    c.destroy()
  })
}

/** Connects to a real fastsock server's side channel as a hostile client; resolves after ACCEPT. */
async function hostileClient (port) {
  const fd = native.connectAbstract(channelName('127.0.0.1', port))
  if (fd < 0) throw new Error(`side channel: ${fd}`)
  const s = new net.Socket({ fd, readable: true, writable: true })
  s.write(wire.encodeHello({ capabilities: wire.CAP_SHM, family: 4, address: Uint8Array.from([127, 0, 0, 1]), port }))
  const [accept] = await once(s, 'data')
  const m = wire.decode(accept).message
  if (m.type !== wire.MessageType.Accept || m.transport !== wire.TRANSPORT_SHM) throw new Error('no ACCEPT(shm)')
  s.pause()
  s._handle.reading = false
  s._handle.readStop()
  return s
}

/**
 * The server's answer to what the hostile client sent: the decoded message (REJECT), or 'closed'.
 * Read natively: hostileClient stopped libuv's reading on this fd.
 */
function answer (s, ms = 3000) {
  const fd = s._handle.fd
  return within(new Promise(resolve => {
    native.waitReadable(fd, ms, () => {
      const r = native.recvFds(fd, 512, 0)
      if (typeof r === 'number' || r.bytes.length === 0) return resolve('closed')
      try { resolve(wire.decode(r.bytes).message) } catch { resolve({ garbage: true }) }
    })
  }), ms + 500, 'the server reacting')
}

const tmpFile = () => {
  const p = path.join(os.tmpdir(), `fastsock-hostile-${process.pid}-${Math.random()}`)
  const fd = fs.openSync(p, 'w+')
  fs.ftruncateSync(fd, 4096 + 8192)
  fs.unlinkSync(p)
  return fd
}

// This loop's doorbell: its id, a dup of it, and a dup of its ready list (the loop owns the
// originals; a case closes what it sends).
const bell = {
  get id () { return native.shmLoopDoorbell().id },
  get fd () { return native.dupFd(native.shmLoopDoorbell().fd) },
  get nodes () { return native.shmLoopDoorbell().readyNodes },
  get ready () { return native.dupFd(native.shmLoopDoorbell().readyFd) }
}
/** SHM_SETUP for rings of c2s/s2c bytes, announcing this loop's doorbell and ready list. */
const setup = (c2s, s2c) => wire.encodeShmSetup(c2s, s2c, bell.id, bell.nodes)

const cases = {
  'a plain file instead of a sealed memfd': () => {
    const f = tmpFile()
    return { bytes: setup(4096, 4096), fds: [f, bell.fd, bell.ready] }
  },
  'ring sizes that do not fit the memfd': () => {
    const a = native.shmCreateSegment(8192, 8192)
    return { bytes: setup(1 << 20, 1 << 20), fds: [a.memfd, bell.fd, bell.ready] }
  },
  'ring sizes that are not powers of two': () => {
    const a = native.shmCreateSegment(8192, 8192)
    return { bytes: setup(12288, 4096), fds: [a.memfd, bell.fd, bell.ready] }
  },
  'a doorbell that is not an eventfd': () => {
    const a = native.shmCreateSegment(4096, 4096)
    return { bytes: setup(4096, 4096), fds: [a.memfd, tmpFile(), bell.ready] }
  },
  'a corrupted segment header': () => {
    const a = native.shmCreateSegment(4096, 4096)
    fs.writeSync(a.memfd, Buffer.from([0xde, 0xad, 0xbe, 0xef]), 0, 4, 0)
    return { bytes: setup(4096, 4096), fds: [a.memfd, bell.fd, bell.ready] }
  },
  'a ready list that is not a sealed memfd': () => {
    const a = native.shmCreateSegment(4096, 4096)
    return { bytes: setup(4096, 4096), fds: [a.memfd, bell.fd, tmpFile()] }
  },
  'a ready list smaller than it says': () => {
    const a = native.shmCreateSegment(4096, 4096)
    return { bytes: wire.encodeShmSetup(4096, 4096, bell.id, bell.nodes * 2), fds: [a.memfd, bell.fd, bell.ready] }
  },
  'SHM_SETUP with the previous layout (24 bytes, 2 fds)': () => {
    const a = native.shmCreateSegment(4096, 4096)
    const b = setup(4096, 4096).subarray(0, 24)
    b.writeUInt16LE(24, 6)
    return { bytes: b, fds: [a.memfd, bell.fd] }
  },
  'SHM_SETUP without its fds': () => ({ bytes: setup(4096, 4096), fds: [] }),
  'a truncated SHM_SETUP': () => ({ bytes: setup(4096, 4096).subarray(0, 10), fds: [] }),
  'a wrong protocol version': () => {
    const b = setup(4096, 4096)
    b[4] = 9
    return { bytes: b, fds: [] }
  }
}

t.test('hostile clients during the shm setup', { skip }, async t => {
  const { port, client, serverSocket } = await pair('shm', { t, serverOptions: { handshakeTimeoutMs: 300 } })
  serverSocket.pipe(serverSocket)
  for (const [what, make] of Object.entries(cases)) {
    const s = await hostileClient(port)
    const { bytes, fds } = make()
    const sent = native.sendFds(s._handle.fd, bytes, fds)
    for (const f of fds) native.closeFd(f)
    t.ok(sent > 0, `${what}: sent`)
    const a = await answer(s)
    t.ok(a === 'closed' || a.type === wire.MessageType.Reject, `${what}: refused (${a === 'closed' ? 'closed' : a.text})`)
    s.destroy()
  }
  // A client that sends nothing after ACCEPT(shm) is dropped after the handshake timeout.
  const silent = await hostileClient(port)
  t.equal(await answer(silent, 3000), 'closed', 'a silent client is dropped')
  // The server still serves, on shm, and the existing connection still works.
  client.write('still alive')
  const [d] = await once(client, 'data')
  t.equal(String(d), 'still alive', 'the established connection is unaffected')
  const c2 = fastsock.connect({ port, host: '127.0.0.1', transports: ['shm'] })
  await once(c2, 'connect')
  t.equal(c2.transport, 'shm', 'a new client still gets shm')
  c2.destroy()
})
