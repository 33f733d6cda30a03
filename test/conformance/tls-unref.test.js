'use strict'
// TLSSocket.ref/unref over a fastsock socket (tls.connect with the preload): a child process
// whose only handle is a connected, unref'd TLS socket exits by itself, as over TCP, including
// on rungs where TLS runs through Node's JSStreamSocket (shm; unix while the chain runs); a ref'd
// one stays until the server closes. Real child processes.
const t = require('tap')
const fs = require('fs')
const path = require('path')
const { forEachRung } = require('../helpers/hook')
const tls = require('tls')
const { sleep, spawnNode, within, listen } = require('../helpers/util')

const CLIENT = path.join(__dirname, '..', 'fixtures', 'tls-client.js')
const FIX = path.join(__dirname, '..', 'fixtures', 'transparency')
const key = fs.readFileSync(path.join(FIX, 'key.pem'))
const cert = fs.readFileSync(path.join(FIX, 'cert.pem'))

async function tlsServer (t) {
  const sockets = []
  const server = tls.createServer({ key, cert }, s => { sockets.push(s); s.on('error', () => {}) })
  await listen(server, 0, '127.0.0.1')
  t.teardown(() => new Promise(resolve => {
    for (const s of sockets) s.destroy()
    server.close(resolve)
  }))
  const secured = new Promise(resolve => server.once('secureConnection', resolve))
  return { port: server.address().port, secured }
}

forEachRung(t, async (t, rung) => {
  t.test('unref() once secure: the child exits while connected', async t => {
    const { port, secured } = await tlsServer(t)
    const child = spawnNode(t, [CLIENT, JSON.stringify({ port, transports: [rung], unref: 'after-connect' })])
    const msg = await child.waitFor(m => m.event === 'secure' || m.event === 'error', 10000)
    t.same(msg, { event: 'secure', transport: rung }, `TLS over ${rung}`)
    await within(secured, 5000, 'the server side of the TLS connection')
    const { code } = await within(child.exited, 5000, 'the child to exit on its own')
    t.equal(code, 0, 'exited normally')
    t.equal(child.messages.some(m => m.event === 'close'), false, 'the connection was still open when it exited')
  })

  // Node's own TLSSocket unrefs its handle at once, while the TCP connect is in flight: nothing
  // then holds the loop and the process exits (Node's test-https-agent-unref-socket).
  t.test('unref() before connect: the child exits, as over TCP', async t => {
    const { port } = await tlsServer(t)
    const child = spawnNode(t, [CLIENT, JSON.stringify({ port, transports: [rung], unref: 'before-connect' })])
    const { code } = await within(child.exited, 5000, 'the child to exit on its own')
    t.equal(code, 0, 'exited normally')
    t.equal(child.messages.some(m => m.event === 'error'), false, 'no error')
  })

  t.test('ref (default): the child stays while connected', async t => {
    const { port, secured } = await tlsServer(t)
    const child = spawnNode(t, [CLIENT, JSON.stringify({ port, transports: [rung] })])
    const msg = await child.waitFor(m => m.event === 'secure' || m.event === 'error', 10000)
    t.same(msg, { event: 'secure', transport: rung })
    const serverSocket = await within(secured, 5000, 'the server side')
    await sleep(700)
    t.equal(child.child.exitCode, null, 'still running after 700 ms')
    serverSocket.end()
    const { code } = await within(child.exited, 5000, 'the child to exit once the server closed')
    t.equal(code, 0)
  })
}, { loopback: true })
