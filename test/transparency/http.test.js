'use strict'
// An unmodified http server and client under the hook, on every rung: both ends on the rung,
// keep-alive reuse, chunked bodies, pipelining, upgrade (after test-http-keep-alive,
// test-http-chunked, test-http-pipeline-*, test-http-upgrade-*).
const t = require('tap')
const { net, fastsock, forEachRung } = require('../helpers/hook')
const http = require('http')
const { once, within, collect } = require('../helpers/util')

async function httpServer (t, handler) {
  const server = http.createServer(handler)
  await new Promise(resolve => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => { server.closeAllConnections(); server.close() })
  return server
}

function get (options) {
  return within(new Promise((resolve, reject) => {
    const req = http.request(options, res => collect(res).then(body => resolve({ res, body: body.toString(), socket: req.socket }), reject))
    req.on('error', reject)
    if (options.body) req.write(options.body)
    req.end()
  }), 5000, 'http response')
}

t.test('request/response: both ends on the rung, keep-alive reuses the connection', async t => {
  forEachRung(t, async (t, rung) => {
    const serverSide = []
    const server = await httpServer(t, (req, res) => {
      serverSide.push(fastsock.transportOf(req.socket))
      res.end(`hello ${req.url}`)
    })
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
    t.teardown(() => agent.destroy())
    const port = server.address().port
    const a = await get({ port, host: '127.0.0.1', path: '/a', agent, transports: [rung] })
    const b = await get({ port, host: '127.0.0.1', path: '/b', agent, transports: [rung] })
    t.equal(a.body, 'hello /a')
    t.equal(b.body, 'hello /b')
    t.equal(fastsock.transportOf(a.socket), rung, 'client on the rung')
    t.same(serverSide, [rung, rung], 'server on the rung')
    t.equal(a.socket, b.socket, 'keep-alive: the second request reused the socket')
    t.ok(a.socket instanceof net.Socket)
  })
})

t.test('chunked request and response bodies', async t => {
  forEachRung(t, async (t, rung) => {
    const server = await httpServer(t, async (req, res) => {
      const body = await collect(req)
      t.equal(req.headers['transfer-encoding'], 'chunked')
      res.write('echo:')
      for (let i = 0; i < body.length; i += 1000) res.write(body.subarray(i, i + 1000))
      res.end()
    })
    const big = Buffer.alloc(200000, 'z')
    const r = await within(new Promise((resolve, reject) => {
      const req = http.request({ port: server.address().port, host: '127.0.0.1', method: 'POST', transports: [rung] }, res => {
        collect(res).then(body => resolve({ res, body }), reject)
      })
      req.on('error', reject)
      req.write(big.subarray(0, 100000))
      req.end(big.subarray(100000))
    }), 5000, 'response')
    t.equal(r.res.headers['transfer-encoding'], 'chunked')
    t.equal(r.body.length, 5 + big.length)
    t.equal(fastsock.transportOf(r.res.socket || r.res.req.socket), rung)
  })
})

t.test('pipelining: two requests in one write, answered in order', async t => {
  forEachRung(t, async (t, rung) => {
    const server = await httpServer(t, (req, res) => res.end(`${req.url}|${fastsock.transportOf(req.socket)}`))
    const c = net.connect({ port: server.address().port, host: '127.0.0.1', transports: [rung] })
    await once(c, 'connect')
    t.equal(c.transport, rung)
    c.end('GET /1 HTTP/1.1\r\nHost: x\r\n\r\nGET /2 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
    const raw = (await collect(c)).toString()
    const bodies = raw.split('\r\n\r\n').filter((_, i) => i > 0).map(s => s.split('HTTP/1.1')[0])
    t.same(bodies, [`/1|${rung}`, `/2|${rung}`])
  })
})

t.test('upgrade: the socket changes protocol and stays on the rung', async t => {
  forEachRung(t, async (t, rung) => {
    const server = await httpServer(t, () => {})
    server.on('upgrade', (req, socket, head) => {
      socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n')
      socket.write(`server:${fastsock.transportOf(socket)}`)
      socket.pipe(socket)
    })
    const req = http.request({ port: server.address().port, host: '127.0.0.1', headers: { Connection: 'Upgrade', Upgrade: 'echo' }, transports: [rung] })
    req.end()
    const [res, socket, head] = await once(req, 'upgrade')
    t.equal(res.statusCode, 101)
    t.equal(fastsock.transportOf(socket), rung)
    let first = head.toString()
    while (first.length < `server:${rung}`.length) first += (await once(socket, 'data'))[0]
    t.equal(first, `server:${rung}`)
    socket.write('ping')
    const [echo] = await once(socket, 'data')
    t.equal(echo.toString(), 'ping')
    socket.destroy()
  })
})
