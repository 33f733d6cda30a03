'use strict'
// What Node's net gained after 20, mirrored on every rung (docs/node-versions.md): each subtest
// runs where the running Node has the feature and is skipped, saying so, where it has not.
// - Symbol.asyncDispose on sockets and servers (`await using`): the socket is destroyed and its
//   close awaited; the server stops listening.
// - the server's `blockList` (22): a client from a blocked address never becomes a 'connection',
//   whatever rung it asked for.
// - the socket's `blockList` (22): connecting to a blocked address fails with ERR_IP_BLOCKED on
//   every rung, before any rung is tried.
// - setTypeOfService()/getTypeOfService() (24): validated as Node does, and on a rung without a
//   kernel socket the value is kept and read back, as Node does for a socket without a handle.
// - net.BoundSocket (24): a server adopts a bound socket with listen(boundSocket), and clients
//   reach it on every rung.
// - a socket in a worker_threads postMessage() transfer list (24): Node moves TCP handles only, so
//   on the tcp rung the worker gets the connection; on a rung without a TCP handle the transfer
//   throws Node's ERR_WORKER_HANDLE_NOT_TRANSFERABLE, as for net's own pipe sockets, and the
//   socket stays usable here.
const t = require('tap')
const net = require('net')
const { forEachRung, pair, fastsock, ALL_RUNGS, dialHost } = require('../helpers/rungs')
const { once, within, sleep, listen } = require('../helpers/util')

const major = Number(process.versions.node.split('.')[0])
const has = {
  asyncDispose: typeof Symbol.asyncDispose === 'symbol' && typeof net.Socket.prototype[Symbol.asyncDispose] === 'function',
  blockList: major >= 22,
  tos: typeof net.Socket.prototype.setTypeOfService === 'function',
  boundSocket: typeof net.BoundSocket === 'function',
  transfer: Object.getOwnPropertySymbols(net.Socket.prototype).some(k => String(k) === 'Symbol(messaging_transfer_symbol)')
}
const skipUnless = (feature, what) => has[feature] ? {} : { skip: `Node ${process.versions.node} has no ${what}` }

forEachRung(t, async (t, rung) => {
  t.test('socket[Symbol.asyncDispose]() destroys it and awaits its close', skipUnless('asyncDispose', 'Symbol.asyncDispose on net.Socket'), async t => {
    const { client, serverSocket } = await pair(rung, { t })
    const peerClosed = once(serverSocket, 'close', 5000)
    // Disposed before its end, the socket is destroyed with an AbortError, as net's.
    const errors = []
    client.on('error', err => errors.push(err.name))
    const closed = new Promise(resolve => client.once('close', resolve))
    await within(client[Symbol.asyncDispose](), 5000, 'asyncDispose')
    t.ok(client.destroyed, 'destroyed')
    await within(closed, 5000, "'close'")
    t.same(errors, ['AbortError'], "'error' with an AbortError, as net")
    await peerClosed
    t.pass('the peer saw the connection close')
  })

  t.test('server[Symbol.asyncDispose]() stops listening', skipUnless('asyncDispose', 'Symbol.asyncDispose on net.Server'), async t => {
    const { server, client } = await pair(rung, { t })
    client.destroy()
    await within(server[Symbol.asyncDispose](), 5000, 'server asyncDispose')
    t.equal(server.listening, false, 'not listening')
  })

  t.test("the server's blockList turns a blocked client away", skipUnless('blockList', "net.Server's blockList"), async t => {
    const blockList = new net.BlockList()
    blockList.addAddress(dialHost(rung))
    const server = fastsock.createServer({ transports: ALL_RUNGS, blockList })
    let connections = 0
    server.on('connection', s => { connections++; s.destroy() })
    t.teardown(() => new Promise(resolve => server.close(resolve)))
    await listen(server, 0, dialHost(rung) === '127.0.0.1' ? '127.0.0.1' : '0.0.0.0')
    const c = fastsock.connect({ port: server.address().port, host: dialHost(rung), transports: [rung, 'tcp'] })
    c.on('error', () => {}) // a reset or a refusal: either way not a connection
    c.resume()
    await once(c, 'close', 10000)
    await sleep(50)
    t.equal(connections, 0, "no 'connection' for a blocked address")
    t.equal(c.bytesRead, 0, 'the client read nothing')
  })

  t.test("the socket's blockList refuses a blocked address with ERR_IP_BLOCKED", skipUnless('blockList', "net.Socket's blockList"), async t => {
    const blockList = new net.BlockList()
    blockList.addAddress(dialHost(rung))
    const server = fastsock.createServer({ transports: ALL_RUNGS })
    let connections = 0
    server.on('connection', s => { connections++; s.destroy() })
    t.teardown(() => new Promise(resolve => server.close(resolve)))
    await listen(server, 0, dialHost(rung) === '127.0.0.1' ? '127.0.0.1' : '0.0.0.0')
    const c = fastsock.connect({ port: server.address().port, host: dialHost(rung), transports: [rung], blockList })
    const [err] = await once(c, 'error', 10000)
    t.equal(err.code, 'ERR_IP_BLOCKED', 'ERR_IP_BLOCKED, as net')
    await sleep(50)
    t.equal(connections, 0, 'the server saw no connection')
  })

  t.test('setTypeOfService()/getTypeOfService()', skipUnless('tos', 'setTypeOfService'), async t => {
    const { client, serverSocket } = await pair(rung, { t })
    t.throws(() => client.setTypeOfService(256), { code: 'ERR_OUT_OF_RANGE' }, 'validated as net')
    t.throws(() => client.setTypeOfService(NaN), { code: 'ERR_INVALID_ARG_TYPE' })
    t.equal(client.setTypeOfService(0x10), client, 'returns the socket')
    t.equal(client.getTypeOfService(), 0x10, 'reads back what was set')
    t.equal(serverSocket.setTypeOfService(0x08).getTypeOfService(), 0x08, 'on the accepted side too')
    client.write('after tos')
    const [chunk] = await once(serverSocket, 'data', 5000)
    t.equal(chunk.toString(), 'after tos', 'the connection still carries bytes')
  })

  t.test('setTypeOfService() before connect is kept', skipUnless('tos', 'setTypeOfService'), async t => {
    const { server } = await pair(rung, { t })
    const c = new fastsock.Socket({ transports: [rung] })
    t.teardown(() => c.destroy())
    c.setTypeOfService(0x20)
    c.connect(server.address().port, dialHost(rung))
    await once(c, 'connect', 10000)
    t.equal(c.transport, rung)
    t.equal(c.getTypeOfService(), 0x20, 'the value set before connect')
  })

  t.test('listen(new net.BoundSocket()) adopts it; clients reach it on this rung', skipUnless('boundSocket', 'net.BoundSocket'), async t => {
    const host = dialHost(rung) === '127.0.0.1' ? '127.0.0.1' : '0.0.0.0'
    const bound = new net.BoundSocket({ port: 0, host })
    const port = bound.address().port
    const server = fastsock.createServer({ transports: ALL_RUNGS }, s => s.end('hello'))
    t.teardown(() => new Promise(resolve => server.close(resolve)))
    await new Promise((resolve, reject) => server.once('error', reject).listen(bound, resolve))
    t.equal(server.address().port, port, "the server's address is the bound one")
    const c = fastsock.connect({ port, host: dialHost(rung), transports: [rung] })
    const chunks = []
    c.on('data', d => chunks.push(d))
    await once(c, 'end', 10000)
    t.equal(c.transport, rung, `connected on ${rung}`)
    t.equal(Buffer.concat(chunks).toString(), 'hello')
  })
  t.test('a socket in a worker postMessage() transfer list', skipUnless('transfer', 'transferable net.Socket'), async t => {
    const { Worker } = require('worker_threads')
    const { client, serverSocket } = await pair(rung, { t })
    serverSocket.on('data', d => serverSocket.write('echo:' + d))
    const w = new Worker(`
      const { parentPort } = require('worker_threads')
      parentPort.once('message', s => {
        s.once('data', d => { parentPort.postMessage(String(d)); s.destroy() })
        s.write('from the worker')
      })`, { eval: true })
    t.teardown(() => w.terminate())
    let thrown = null
    try { w.postMessage(client, [client]) } catch (err) { thrown = err }
    if (rung === 'tcp') {
      t.equal(thrown, null, 'the tcp rung transfers, as net')
      const [reply] = await once(w, 'message', 10000)
      t.equal(reply, 'echo:from the worker', 'the worker owns the connection')
    } else {
      t.equal(thrown?.code, 'ERR_WORKER_HANDLE_NOT_TRANSFERABLE', `${rung}: Node's error for a socket without a TCP handle`)
      client.write('still here')
      const [chunk] = await once(client, 'data', 5000)
      t.equal(chunk.toString(), 'echo:still here', 'the socket stays usable')
    }
  })
}, { loopback: true })
