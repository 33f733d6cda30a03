'use strict'
// end() reaches the peer as a FIN ('end', then 'close' without error); destroy() with data the
// destroyer never read reaches it as a reset. The expected outcome of each scenario is what plain
// `net` over loopback TCP does on this machine, observed in the same run, not a hard-coded list.
const t = require('tap')
const net = require('net')
const { forEachRung, pair } = require('../helpers/rungs')
const { sleep, listen, once, waitFor, within } = require('../helpers/util')

/** A plain net pair over loopback TCP, same shape as pair(). */
async function netPair (t) {
  const server = net.createServer()
  const accepted = new Promise(resolve => server.once('connection', resolve))
  await listen(server, 0, '127.0.0.1')
  const client = net.connect(server.address().port, '127.0.0.1')
  const [serverSocket] = await Promise.all([accepted, once(client, 'connect')])
  serverSocket.on('error', () => {})
  t.teardown(() => { client.destroy(); serverSocket.destroy(); server.close() })
  return { client, serverSocket }
}

/** Records what `sock` emits: 'end', 'error:<code>', 'close:<hadError>'. */
function observe (sock) {
  const events = []
  sock.on('data', () => {})
  sock.on('end', () => events.push('end'))
  sock.on('error', e => events.push(`error:${e.code}`))
  const closed = within(new Promise(resolve => sock.once('close', hadError => {
    events.push(`close:${hadError}`)
    resolve()
  })), 10000, "'close'")
  return { events, closed }
}

const scenarios = {
  'server end(): the client sees a FIN': async ({ client, serverSocket }) => {
    const o = observe(client)
    serverSocket.resume()
    serverSocket.end('last words')
    await o.closed
    return o.events
  },
  'server destroy() with nothing unread: the client sees a FIN': async ({ client, serverSocket }) => {
    const o = observe(client)
    serverSocket.resume()
    client.write('read by the server')
    await waitFor(() => serverSocket.bytesRead === 18, 5000, 'the server to read')
    serverSocket.destroy()
    await o.closed
    return o.events
  },
  'server destroy() with 1 MB unread: the client sees a reset': async ({ client, serverSocket }) => {
    const o = observe(client)
    serverSocket.pause()
    client.write(Buffer.alloc(1 << 20))
    await sleep(200)
    serverSocket.destroy()
    await o.closed
    return o.events
  },
  'server destroy() with 1 MB unread while the client keeps writing': async ({ client, serverSocket }) => {
    const o = observe(client)
    serverSocket.pause()
    client.write(Buffer.alloc(1 << 20))
    await sleep(200)
    serverSocket.destroy()
    await sleep(50)
    if (!client.destroyed) client.write('more')
    await o.closed
    return o.events
  },
  'client destroy() with 1 MB unread: the server sees a reset': async ({ client, serverSocket }) => {
    const o = observe(serverSocket)
    client.pause()
    serverSocket.write(Buffer.alloc(1 << 20))
    await sleep(200)
    client.destroy()
    await o.closed
    return o.events
  }
}

for (const [name, run] of Object.entries(scenarios)) {
  t.test(name, async t => {
    const expected = await run(await netPair(t))
    t.ok(expected.length > 0, `plain net over TCP: ${expected.join(' ')}`)
    // SMC (kernel) reports a peer's abort as end-of-stream, then EPIPE on the next write, where
    // TCP gives ECONNRESET: a kernel difference fastsock cannot change (docs/transports.md, smc).
    const resets = expected.some(e => e.includes('ECONNRESET'))
    forEachRung(t, async (t, rung) => {
      const got = await run(await pair(rung, { t }))
      t.same(got, expected, `${rung} behaves as net over TCP (${expected.join(' ')})`)
    }, resets ? { only: ['shm', 'unix', 'verbs', 'rsocket', 'sdp', 'tcp'] } : {})
  })
}
