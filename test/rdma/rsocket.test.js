'use strict'
// Rung rsocket end to end, inside ../shared/tools/rdma-vm (RDMAVM=1; RDMAVM_IP is rxe0's
// address): the pair really runs over rsockets, bytes are exact both ways, half-open works, a
// killed peer process ends the other side, a plain `net` server makes the chain fall to tcp at
// once, child processes spawned mid-stream leave the connection intact, and nothing leaks.
const t = require('tap')
const fs = require('fs')
const net = require('net')
const childProcess = require('child_process')
const { pair, availability } = require('../helpers/rungs')
const { once, within, collect, collectBytes, waitFor, listen, spawnNode, sleep } = require('../helpers/util')
const fastsock = require('../..')
const { native } = require('../../dist/native')

const IP = process.env.RDMAVM_IP
const rsocket = availability.find(a => a.name === 'rsocket')
const skip = !process.env.RDMAVM || !IP
  ? 'needs the RDMA guest (../shared/tools/rdma-vm/run.sh): RDMAVM is unset'
  : !rsocket.available && `rsocket is not available here: ${rsocket.reason}`
// The emulated CPU of the guest makes everything slow: bound by behaviour, not by speed.
const test = (name, fn) => t.test(name, { skip, timeout: 300000 }, fn)

/** Rows of /proc/net/tcp{,6} whose local or remote port is `port` and that are not LISTEN. */
function kernelTcpConnections (port) {
  const hex = port.toString(16).toUpperCase().padStart(4, '0')
  const rows = []
  for (const f of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = ''
    try { text = fs.readFileSync(f, 'utf8') } catch { continue }
    for (const line of text.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/)
      if (cols.length < 4) continue
      const [local, remote, state] = [cols[1], cols[2], cols[3]]
      if (state === '0A') continue // LISTEN: Node's own TCP listener
      if (local.endsWith(':' + hex) || remote.endsWith(':' + hex)) rows.push(line.trim())
    }
  }
  return rows
}

function pattern (bytes, seed) {
  const b = Buffer.allocUnsafe(bytes)
  let x = seed >>> 0
  for (let i = 0; i < bytes; i += 4) {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0
    b.writeUInt32LE(x, i)
  }
  return b
}

const openFds = () => fs.readdirSync('/proc/self/fd').length

test('a fastsock pair lands on rsocket, with no kernel TCP connection on the port', async t => {
  const { client, serverSocket, port } = await pair('rsocket', { t })
  t.equal(client.transport, 'rsocket')
  t.equal(serverSocket.transport, 'rsocket')
  t.equal(client.remoteAddress, IP, 'client reports the dialed address')
  t.equal(client.remotePort, port)
  t.equal(serverSocket.localPort, port)
  t.equal(serverSocket.remotePort, client.localPort, 'one 4-tuple at both ends')
  t.same(kernelTcpConnections(port), [], 'no TCP connection to or from the port in /proc/net/tcp')
  t.ok(native.rsocketThreads() >= 2, 'a bridge thread per end')
  client.write('ping')
  const [d] = await once(serverSocket, 'data', 60000)
  t.equal(d.toString(), 'ping')
})

test('8 MiB byte-exact both ways at once', async t => {
  const { client, serverSocket } = await pair('rsocket', { t })
  const up = pattern(8 << 20, 1)
  const down = pattern(8 << 20, 2)
  const gotUp = collect(serverSocket, 300000)
  const gotDown = collect(client, 300000)
  client.end(up)
  serverSocket.end(down)
  const [a, b] = await Promise.all([gotUp, gotDown])
  t.equal(a.length, up.length)
  t.ok(a.equals(up), 'client -> server exact')
  t.equal(b.length, down.length)
  t.ok(b.equals(down), 'server -> client exact')
  t.equal(client.bytesWritten, up.length)
  t.equal(client.bytesRead, down.length)
})

test('half-open: each direction ends on its own', async t => {
  const { client, serverSocket } = await pair('rsocket', {
    t, serverOptions: { allowHalfOpen: true }, clientOptions: { allowHalfOpen: true }
  })
  const fromClient = collect(serverSocket, 60000)
  client.end('bye')
  t.equal((await fromClient).toString(), 'bye', 'server got the data, then end')
  t.equal(serverSocket.writable, true, 'server side still writable after the FIN')
  const fromServer = collect(client, 60000)
  serverSocket.write('late;')
  await sleep(50)
  serverSocket.end('done')
  t.equal((await fromServer).toString(), 'late;done', 'client read after its own end()')
  await once(client, 'close', 60000)
})

test('peer process SIGKILLed mid-stream: the other end errors or closes', async t => {
  t.test('server process killed, client here', async t => {
    const peer = spawnNode(t, ['test/fixtures/rsocket-peer.js', 'server'])
    const { port } = await peer.waitFor(m => m.event === 'listening', 120000)
    const c = fastsock.connect({ host: IP, port, transports: ['rsocket'], transportTimeoutMs: 30000 })
    const errors = []
    c.on('error', e => errors.push(e))
    await once(c, 'connect', 60000)
    t.equal(c.transport, 'rsocket')
    let got = 0
    c.on('data', d => { got += d.length })
    await peer.waitFor(m => m.event === 'streaming', 120000)
    await waitFor(() => got > 0, 60000, 'bytes from the peer')
    const closed = new Promise(resolve => c.once('close', resolve)) // events.once would reject on 'error'
    peer.child.kill('SIGKILL')
    await within(closed, 120000, "the client's 'close'")
    t.ok(got > 0, `closed after ${got} bytes`)
    if (errors.length) t.equal(errors[0].code, 'ECONNRESET', 'an error, if any, is a reset')
  })
  t.test('client process killed, server here', async t => {
    const server = fastsock.createServer({ transports: ['rsocket', 'tcp'] })
    t.teardown(() => server.close())
    await listen(server, 0, '0.0.0.0')
    const conn = once(server, 'connection', 120000)
    const peer = spawnNode(t, ['test/fixtures/rsocket-peer.js', 'client', IP, String(server.address().port)])
    const [s] = await conn
    t.equal(s.transport, 'rsocket')
    const errors = []
    s.on('error', e => errors.push(e))
    let got = 0
    s.on('data', d => { got += d.length })
    await peer.waitFor(m => m.event === 'streaming', 120000)
    await waitFor(() => got > 0, 60000, 'bytes from the peer')
    const closed = new Promise(resolve => s.once('close', resolve))
    peer.child.kill('SIGKILL')
    await within(closed, 120000, "the server socket's 'close'")
    t.ok(got > 0, `closed after ${got} bytes`)
    if (errors.length) t.equal(errors[0].code, 'ECONNRESET', 'an error, if any, is a reset')
  })
})

test('a plain net server on the port: rsocket is refused at once, the chain falls to tcp', async t => {
  const server = net.createServer(s => s.pipe(s))
  t.teardown(() => server.close())
  await listen(server, 0, '0.0.0.0')
  const port = server.address().port
  const c = fastsock.connect({ host: IP, port, transports: ['rsocket', 'tcp'], transportTimeoutMs: 60000 })
  t.teardown(() => c.destroy())
  const failed = once(c, 'transportAttemptFailed', 60000)
  const started = Date.now()
  const [ev] = await failed
  const ms = Date.now() - started
  t.equal(ev.transport, 'rsocket')
  t.equal(ev.error.notOffered, true, 'refused: not offered there')
  t.equal(ev.error.code, 'ECONNREFUSED')
  t.ok(ms < 60000, `failed in ${ms} ms, without waiting for the timeout`)
  await once(c, 'connect', 60000)
  t.equal(c.transport, 'tcp')
  c.write('x')
  const [d] = await once(c, 'data', 30000)
  t.equal(d.toString(), 'x', 'the plain server echoes over tcp')
})

test('eight live rsocket connections in one process (more than an unfixed librdmacm service thread starts with): all on rsocket, nothing crashes', async t => {
  // rdma-core before 53 (and 44.7...) corrupts memory once an rsocket service thread grows its
  // poll set while it runs, i.e. past 3 rsockets (csrc/rdma/lib.h); the bridge pre-grows it.
  const p = native.rdmaProbe()
  t.comment(`librdmacm ${p.rdmacmVersion}: service-thread bug ${p.rsocketSvcBug ? 'present (worked around)' : 'fixed'}`)
  const server = fastsock.createServer({ transports: ['rsocket', 'tcp'] }, s => s.pipe(s))
  t.teardown(() => server.close())
  await listen(server, 0, '0.0.0.0')
  const port = server.address().port
  const clients = []
  t.teardown(() => { for (const c of clients) c.destroy() })
  for (let i = 1; i <= 8; i++) {
    const c = fastsock.connect({ host: IP, port, transports: ['rsocket'], transportTimeoutMs: 30000 })
    clients.push(c)
    await once(c, 'connect', 60000)
    const text = `hello from ${i}`
    const echo = collectBytes(c, text.length, 60000, 'the echo')
    c.write(text)
    t.equal((await echo).toString(), text, `connection ${i} on ${c.transport} echoes`)
  }
  t.same(clients.map(c => c.transport), Array(8).fill('rsocket'), 'every connection on rsocket, all open at once')
  // Each one still works once all are open.
  for (const [i, c] of clients.entries()) {
    const echo = collectBytes(c, 5, 60000, 'the second echo')
    c.write('again')
    t.equal((await echo).toString(), 'again', `connection ${i + 1} still echoes`)
  }
  server.close()
  // A server closed with live connections, then a new connection: refused, no crash.
  const refused = fastsock.connect({ host: IP, port, transports: ['rsocket', 'tcp'], transportTimeoutMs: 30000 })
  const [err] = await once(refused, 'error', 60000)
  t.equal(err.code, 'ECONNREFUSED', 'refused once the server closed')
})

test('children spawned while streaming leave the stream intact', async t => {
  const { client, serverSocket } = await pair('rsocket', { t })
  serverSocket.pipe(serverSocket)
  const data = pattern(4 << 20, 3)
  const echoed = collect(client, 300000)
  const chunk = 256 << 10
  for (let off = 0; off < data.length; off += chunk) {
    client.write(data.subarray(off, off + chunk))
    const r = childProcess.spawnSync('true')
    t.equal(r.status, 0, 'spawnSync(true)')
    if (off === 0) {
      const n = childProcess.spawnSync(process.execPath, ['-e', 'process.exit(7)'])
      t.equal(n.status, 7, 'a node child ran')
    }
    await sleep(5)
  }
  client.end()
  const got = await echoed
  t.equal(got.length, data.length)
  t.ok(got.equals(data), 'echo exact across the spawns')
})

test('no fd or thread leaks after 30 open/close cycles', async t => {
  const server = fastsock.createServer({ transports: ['rsocket', 'tcp'] }, s => {
    s.on('error', () => {})
    s.pipe(s)
  })
  t.teardown(() => server.close())
  await listen(server, 0, '0.0.0.0')
  const port = server.address().port
  const cycle = async () => {
    const c = fastsock.connect({ host: IP, port, transports: ['rsocket'], transportTimeoutMs: 30000 })
    await once(c, 'connect', 60000)
    if (c.transport !== 'rsocket') throw new Error(`landed on ${c.transport}`)
    c.end('hi')
    const got = await collect(c, 60000)
    if (got.toString() !== 'hi') throw new Error(`echo got ${got}`)
    await once(c, 'close', 60000).catch(() => {})
  }
  await cycle() // librdmacm opens its devices once per process: warm up first
  const threads0 = native.rsocketThreads()
  await waitFor(() => native.rsocketThreads() <= 1, 60000, 'bridges of the warm-up to end')
  const fds0 = openFds()
  for (let i = 0; i < 30; i++) await cycle()
  await waitFor(() => native.rsocketThreads() <= 1, 60000, 'every bridge thread to end')
  await waitFor(() => openFds() <= fds0, 30000, `fds back to ${fds0}`).catch(() => {})
  t.equal(openFds(), fds0, 'open fds back to the baseline')
  t.ok(threads0 >= 1, 'the listener thread ran')
  t.equal(native.rsocketThreads(), 1, 'only the accept thread is left')
})
