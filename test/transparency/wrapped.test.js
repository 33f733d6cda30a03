'use strict'
// Sockets Node's own C++ stream consumers wrap (TLSWrap: tls/https; nghttp2: http2, gRPC) on
// every rung, both ends asserted: which rung each kind of socket takes by default (a kernel handle
// first: docs/transparency.md, "Sockets TLS and HTTP/2 wrap"), TLS run natively over a kernel
// handle, https, http2 (h2c and over TLS: flow control with 16 MiB bodies, GOAWAY, a session
// destroyed mid-stream, half-close), and a gRPC round trip of each kind.
const t = require('tap')
const path = require('path')
const fs = require('fs')
const { fastsock, forEachRung, rungs } = require('../helpers/hook')
const https = require('https')
const http2 = require('http2')
const tls = require('tls')
const { once, within, collect, spawnNode, ROOT } = require('../helpers/util')

const FIX = path.join(__dirname, '..', 'fixtures', 'transparency')
const key = fs.readFileSync(path.join(FIX, 'key.pem'))
const cert = fs.readFileSync(path.join(FIX, 'cert.pem'))
const REGISTER = path.join(ROOT, 'dist', 'register.js')

/** The rung the default chain gives a socket TLS or HTTP/2 wraps: the first one with a kernel handle. */
const KERNEL = rungs.find(r => r !== 'shm' && r !== 'verbs') ?? 'tcp'

/** True when TLS runs over a JSStreamSocket (no kernel handle under TLSWrap). */
const throughJsStream = tlsSocket => tlsSocket._handle?._parentWrap?.constructor?.name === 'JSStreamSocket'

/** An h2c or h2 (TLS) server whose streams run `onStream`; closed at teardown. */
async function h2server (t, secure, onStream) {
  const server = secure ? http2.createSecureServer({ key, cert }) : http2.createServer()
  const sessions = []
  server.on('session', s => { sessions.push(s); s.on('error', () => {}) })
  server.on('stream', onStream)
  await new Promise(resolve => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => { for (const s of sessions) s.destroy(); server.close() })
  return { server, sessions, url: `${secure ? 'https://localhost' : 'http://127.0.0.1'}:${server.address().port}` }
}

/** One request on `session`: resolves with { headers, body }. */
function request (session, headers, body) {
  return new Promise((resolve, reject) => {
    const req = session.request(headers)
    let head = null
    req.on('response', h => { head = h })
    req.on('error', reject)
    collect(req, 20000).then(b => resolve({ headers: head, body: b }), reject)
    req.end(body)
  })
}

t.test('https: the default chain gives TLS a kernel handle, and TLS runs natively over it', async t => {
  const seen = []
  const server = https.createServer({ key, cert }, (req, res) => {
    seen.push([fastsock.transportOf(req.socket), throughJsStream(req.socket)])
    res.end('ok')
  })
  await new Promise(resolve => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => { server.closeAllConnections(); server.close() })
  const agent = new https.Agent({ keepAlive: true, maxSockets: 1 })
  t.teardown(() => agent.destroy())
  const client = []
  for (let i = 0; i < 3; i++) {
    await within(new Promise((resolve, reject) => {
      https.get({ host: 'localhost', port: server.address().port, ca: cert, agent }, res => {
        client.push([fastsock.transportOf(res.socket), throughJsStream(res.socket), res.socket.authorized])
        res.resume()
        res.on('end', resolve)
      }).on('error', reject)
    }), 5000, 'https response')
  }
  t.same(client[0], [KERNEL, false, true], `client: ${KERNEL}, TLSWrap over the kernel handle, certificate verified`)
  t.same(client[2], client[0], 'the keep-alive connection is reused')
  t.same(seen[0], [KERNEL, false], `server: ${KERNEL}, TLSWrap over the kernel handle`)
})

t.test('https: keep-alive requests and a 1 MiB body each way on every rung', async t => {
  forEachRung(t, async (t, rung) => {
    const seen = []
    const server = https.createServer({ key, cert }, async (req, res) => {
      seen.push(fastsock.transportOf(req.socket))
      const body = await collect(req)
      res.end(body)
    })
    await new Promise(resolve => server.listen(0, '127.0.0.1', resolve))
    t.teardown(() => { server.closeAllConnections(); server.close() })
    const agent = new https.Agent({ keepAlive: true, maxSockets: 1 })
    t.teardown(() => agent.destroy())
    const big = Buffer.alloc(1 << 20)
    for (let i = 0; i < big.length; i += 4) big.writeUInt32LE(i, i)
    const sockets = new Set()
    for (const body of [Buffer.from('small'), big, Buffer.from('again')]) {
      const echoed = await within(new Promise((resolve, reject) => {
        const req = https.request({ host: 'localhost', port: server.address().port, method: 'POST', ca: cert, agent, transports: [rung], transportTimeoutMs: 10000 }, res => {
          sockets.add(res.socket)
          t.equal(fastsock.transportOf(res.socket), rung, 'client on the rung')
          if (rung !== 'shm' && rung !== 'verbs') t.notOk(throughJsStream(res.socket), 'TLS over the kernel handle')
          collect(res).then(resolve, reject)
        })
        req.on('error', reject)
        req.end(body)
      }), 15000, 'echo')
      t.equal(Buffer.compare(echoed, body), 0, `${body.length} bytes echoed intact`)
    }
    t.equal(sockets.size, 1, 'one keep-alive connection')
    t.same([...new Set(seen)], [rung], 'server on the rung')
  })
})

t.test('tls.connect over the default chain: end() or destroy() while the chain runs closes as Node\'s', async t => {
  const server = tls.createServer({ key, cert }, s => { s.on('error', () => {}); s.end('bye') })
  server.on('tlsClientError', () => {})
  await new Promise(resolve => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => server.close())
  for (const how of ['end', 'destroy']) {
    const c = tls.connect({ host: 'localhost', port: server.address().port, ca: cert })
    const errors = []
    c.on('error', e => errors.push(e.code))
    c[how]()
    await within(once(c, 'close'), 5000, `close after ${how}()`)
    t.same(errors, [], `${how}() at once: closed, no error (as Node's tls.connect)`)
  }
})

t.test('tls over the default chain: session resumption after the re-wrap (the session event, isSessionReused)', async t => {
  const server = tls.createServer({ key, cert }, s => { s.on('error', () => {}); s.end('hi') })
  await new Promise(resolve => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => server.close())
  const port = server.address().port
  const first = tls.connect({ host: 'localhost', port, ca: cert })
  first.on('error', () => {})
  const [session] = await within(once(first, 'session'), 5000, "the first connection's session")
  first.resume()
  await once(first, 'close', 5000)
  const second = tls.connect({ host: 'localhost', port, ca: cert, session })
  second.on('error', () => {})
  await within(once(second, 'secureConnect'), 5000, 'secureConnect')
  t.equal(fastsock.transportOf(second), KERNEL, `on ${KERNEL}`)
  t.notOk(throughJsStream(second), 'TLSWrap over the kernel handle')
  t.ok(second.isSessionReused(), 'the session was resumed')
  second.resume()
  await once(second, 'close', 5000)
})

for (const secure of [false, true]) {
  const kind = secure ? 'h2 (TLS)' : 'h2c'
  // h2c: http2 wraps the client's socket before it connects, so it gets Node's TCP (a handle
  // from the start); h2 over TLS: tls.connect's socket, re-wrapped over the kernel handle.
  const want = secure ? KERNEL : 'tcp'
  t.test(`http2 ${kind}: the default chain takes ${want}, nghttp2 over a kernel handle on both ends`, async t => {
    const { url, sessions } = await h2server(t, secure, (stream) => {
      stream.respond({ ':status': 200 })
      const sock = stream.session.socket
      stream.end(JSON.stringify([fastsock.transportOf(sock), sock.stream !== undefined]))
    })
    const session = http2.connect(url, { ca: cert })
    t.teardown(() => session.destroy())
    const r = await within(request(session, { ':path': '/' }), 5000, 'response')
    t.same(JSON.parse(String(r.body)), [want, false], `server session on ${want}, no JSStreamSocket`)
    t.equal(fastsock.transportOf(session.socket), want, `client session on ${want}`)
    t.equal(session.socket.stream, undefined, 'client: no JSStreamSocket')
    if (secure) t.notOk(throughJsStream(session.socket), 'client TLS over the kernel handle')
    t.equal(sessions.length, 1)
  })

  t.test(`http2 ${kind} on every rung`, async t => {
    forEachRung(t, async (t, rung) => {
      const serverRungs = []
      const { url } = await h2server(t, secure, async (stream, headers) => {
        serverRungs.push(fastsock.transportOf(stream.session.socket))
        stream.on('error', () => {})
        const p = headers[':path']
        if (p === '/echo') {
          // Flow control: 16 MiB in, the same 16 MiB out, through 64 KiB windows.
          const body = await collect(stream, 60000)
          stream.respond({ ':status': 200 })
          stream.end(body)
        } else if (p === '/half-close') {
          // The client ended its side first; the answer comes after, in pieces.
          stream.resume()
          await once(stream, 'end', 5000).catch(() => {})
          stream.respond({ ':status': 200 })
          for (let i = 0; i < 5; i++) {
            stream.write(`part${i};`)
            await new Promise(resolve => setTimeout(resolve, 5))
          }
          stream.end()
        } else if (p === '/endless') {
          stream.respond({ ':status': 200 })
          const chunk = Buffer.alloc(16384, 1)
          const live = () => !stream.destroyed && !stream.closed
          const pump = () => { while (live() && stream.write(chunk)); if (live()) stream.once('drain', pump) }
          pump()
        } else if (p === '/goaway') {
          stream.respond({ ':status': 200 })
          stream.end('going')
          stream.session.goaway(http2.constants.NGHTTP2_NO_ERROR)
        } else {
          stream.respond({ ':status': 404 })
          stream.end()
        }
      })
      const opts = { ca: cert, transports: [rung], transportTimeoutMs: 10000 }

      const session = http2.connect(url, opts)
      t.teardown(() => session.destroy())
      const big = Buffer.alloc(16 << 20)
      for (let i = 0; i < big.length; i += 4096) big.writeUInt32LE(i, i)
      const echoed = await within(request(session, { ':path': '/echo', ':method': 'POST' }, big), 60000, '16 MiB echo')
      t.equal(echoed.body.length, big.length, '16 MiB back')
      t.equal(Buffer.compare(echoed.body, big), 0, 'intact, through flow control both ways')
      t.equal(fastsock.transportOf(session.socket), rung, 'client session on the rung')

      const half = await within(new Promise((resolve, reject) => {
        const req = session.request({ ':path': '/half-close', ':method': 'POST' })
        req.on('error', reject)
        req.end('request body')
        collect(req).then(resolve, reject)
      }), 5000, 'half-close')
      t.equal(String(half), 'part0;part1;part2;part3;part4;', 'the answer after the client ended its side')

      // session.destroy() mid-stream: the client's stream closes, the server's is aborted.
      const endless = session.request({ ':path': '/endless' })
      endless.on('error', () => {})
      await once(endless, 'data', 5000)
      session.destroy()
      await once(endless, 'close', 5000)
      t.ok(session.destroyed, 'client session destroyed mid-stream, its stream closed')

      // GOAWAY: a new session gets its answer, then the server's goaway.
      const s2 = http2.connect(url, opts)
      t.teardown(() => s2.destroy())
      const goaway = once(s2, 'goaway', 5000)
      const r = await within(request(s2, { ':path': '/goaway' }), 5000, 'goaway response')
      t.equal(String(r.body), 'going')
      const [code] = await goaway
      t.equal(code, http2.constants.NGHTTP2_NO_ERROR, 'GOAWAY with NO_ERROR')
      t.same([...new Set(serverRungs)], [rung], 'server sessions on the rung')
    }, { timeout: 120000 })
  })
}

t.test('gRPC (@grpc/grpc-js, unmodified): unary, server streaming, client streaming and bidi on every rung', async t => {
  const cases = [...rungs.filter(r => r !== 'tcp').map(r => [r, `${r},tcp`]), ['tcp', 'tcp'], ['default chain', null]]
  for (const [label, chain] of cases) {
    t.test(label, async t => {
      const env = { NODE_OPTIONS: `--require "${REGISTER}"` }
      if (chain) env.FASTSOCK_TRANSPORTS = chain
      const app = spawnNode(t, [path.join(FIX, 'grpc-app.js')], { env })
      const m = await app.waitFor(x => x.unary !== undefined, 30000)
      t.equal(m.unary, 'ping', 'unary')
      t.same(m.stream, { messages: 100, bytes: 100 * 16384 }, 'server streaming: 100 messages of 16 KiB')
      t.equal(m.clientStream, 50 * 1000 + (49 * 50) / 2, 'client streaming: every byte counted')
      t.same(m.bidi, { count: 64, inOrder: true }, 'bidi: 64 echoes in order')
      const want = chain ? label : KERNEL
      t.same(m.client, [want], `client channel on ${want}`)
      t.same(m.server, [want], `server side on ${want}`)
      t.equal((await app.exited).code, 0)
    })
  }
})
