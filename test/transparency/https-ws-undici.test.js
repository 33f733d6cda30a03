'use strict'
// https over a fast socket (tls.connect over fastsock; a TLS server over handle-less shm sockets),
// ws and undici end to end, and global fetch, on every rung, both ends asserted.
const t = require('tap')
const path = require('path')
const fs = require('fs')
const { fastsock, forEachRung } = require('../helpers/hook')
const https = require('https')
const http = require('http')
const { WebSocketServer, WebSocket } = require('ws')
const undici = require('undici')
const { once, within, collect } = require('../helpers/util')

const FIX = path.join(__dirname, '..', 'fixtures', 'transparency')
const key = fs.readFileSync(path.join(FIX, 'key.pem'))
const cert = fs.readFileSync(path.join(FIX, 'cert.pem'))

t.test('https: a TLS client and server over the rung', async t => {
  forEachRung(t, async (t, rung) => {
    const serverSide = []
    const server = https.createServer({ key, cert }, (req, res) => {
      serverSide.push([fastsock.transportOf(req.socket), req.socket.remoteAddress])
      res.end('secure')
    })
    await new Promise(resolve => server.listen(0, '127.0.0.1', resolve))
    t.teardown(() => { server.closeAllConnections(); server.close() })
    const r = await within(new Promise((resolve, reject) => {
      const req = https.get({ host: 'localhost', port: server.address().port, ca: cert, agent: false, transports: [rung] }, res => {
        const info = [fastsock.transportOf(res.socket), res.socket.remoteAddress, res.socket.authorized]
        // Wait for the client to close its end (agent: false) before the server is torn down: see
        // docs/transparency.md on writes after the peer closed, on unix.
        const closed = once(res.socket, 'close')
        collect(res).then(async body => { await closed; resolve({ body: body.toString(), info }) }, reject)
      })
      req.on('error', reject)
    }), 5000, 'https response')
    t.equal(r.body, 'secure')
    t.same(r.info, [rung, '127.0.0.1', true], 'client: on the rung, TCP view, certificate verified')
    t.same(serverSide, [[rung, '127.0.0.1']], 'server: on the rung, TCP view')
  })
})

t.test('https client to a refused port fails with ECONNREFUSED', async t => {
  const s = http.createServer()
  await new Promise(resolve => s.listen(0, '127.0.0.1', resolve))
  const port = s.address().port
  await new Promise(resolve => s.close(resolve))
  const req = https.get({ host: '127.0.0.1', port, agent: false })
  const [err] = await once(req, 'error')
  t.equal(err.code, 'ECONNREFUSED')
})

t.test('ws: an echo over the rung, both ends', async t => {
  forEachRung(t, async (t, rung) => {
    const server = http.createServer()
    const wss = new WebSocketServer({ server })
    const serverSide = []
    wss.on('connection', (ws, req) => {
      serverSide.push(fastsock.transportOf(req.socket))
      ws.on('message', m => ws.send(m))
    })
    await new Promise(resolve => server.listen(0, '127.0.0.1', resolve))
    t.teardown(() => { wss.close(); server.closeAllConnections(); server.close() })
    const ws = new WebSocket(`ws://127.0.0.1:${server.address().port}/`, { transports: [rung] })
    t.teardown(() => ws.terminate())
    await once(ws, 'open')
    t.equal(fastsock.transportOf(ws._socket), rung, 'client on the rung')
    const big = Buffer.alloc(300000, 7)
    ws.send(big)
    const [echo] = await once(ws, 'message')
    t.equal(Buffer.compare(Buffer.from(echo), big), 0, '300 kB echoed intact')
    t.same(serverSide, [rung], 'server on the rung')
  })
})

t.test('undici request and global fetch', async t => {
  forEachRung(t, async (t, rung) => {
    const serverSide = []
    const server = http.createServer((req, res) => { serverSide.push(fastsock.transportOf(req.socket)); res.end('u') })
    await new Promise(resolve => server.listen(0, '127.0.0.1', resolve))
    t.teardown(() => { server.closeAllConnections(); server.close() })
    const url = `http://127.0.0.1:${server.address().port}/`
    // undici's connector passes its own options to net.connect: choose the rung for this process.
    const dispatcher = new undici.Agent({ connect: { transports: [rung] } })
    t.teardown(() => dispatcher.close())
    const r = await undici.request(url, { dispatcher })
    t.equal(await r.body.text(), 'u')
    const f = await fetch(url)
    t.equal(await f.text(), 'u')
    t.equal(serverSide[0], rung, 'undici: server side on the rung')
    t.equal(serverSide[1], require('../helpers/rungs').bestRung, 'fetch (Node\'s bundled undici): the best rung')
  })
})
