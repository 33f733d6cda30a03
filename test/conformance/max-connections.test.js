'use strict'
// maxConnections: past the limit a connection is refused and the server emits 'drop' (with the
// connection's addresses, as Node does); the open connection keeps working, and once it closes
// a new one is accepted on the same rung. On a fast rung, the side channel turns the client
// away (REJECT Busy, not cached) and the TCP attempt that follows meets Node's own
// maxConnections handling. smc's listener is the TCP listener itself (an AF_SMC socket), so smc
// meets Node's own handling directly, like tcp.
const t = require('tap')
const { forEachRung, pair, fastsock } = require('../helpers/rungs')
const { once, within, sleep } = require('../helpers/util')

forEachRung(t, async (t, rung) => {
  const { server, client, serverSocket, port } = await pair(rung, { t })
  server.maxConnections = 1
  let connections = 0
  server.on('connection', () => connections++)
  const dropped = once(server, 'drop')

  const kernelListener = rung === 'tcp' || rung === 'smc'
  const second = fastsock.connect({ port, host: '127.0.0.1', transports: kernelListener ? [rung] : [rung, 'tcp'] })
  const attempts = []
  second.on('transportAttemptFailed', e => attempts.push(e))
  second.on('error', () => {})
  second.resume()
  const [drop] = await within(dropped, 5000, "'drop'")
  t.equal(drop.localPort, port, "'drop' names the server port")
  t.equal(drop.localAddress, '127.0.0.1')
  t.equal(drop.remoteAddress, '127.0.0.1')
  t.type(drop.remotePort, 'number')
  await within(new Promise(resolve => second.once('close', resolve)), 5000, 'the refused connection to close')
  t.equal(connections, 0, "no 'connection' for the refused one")
  if (!kernelListener) {
    t.equal(attempts.length, 1, `the ${rung} attempt failed first`)
    t.equal(attempts[0].error.code, 'ERR_FASTSOCK_REJECTED')
  }

  // the first connection still works
  serverSocket.pipe(serverSocket)
  client.write('still here')
  const [echo] = await once(client, 'data')
  t.equal(echo.toString(), 'still here')

  client.destroy()
  await once(serverSocket, 'close')
  await sleep(20)
  const third = fastsock.connect({ port, host: '127.0.0.1', transports: [rung] })
  t.teardown(() => third.destroy())
  const [[s3]] = await within(Promise.all([once(server, 'connection'), once(third, 'connect')]), 5000, 'a new connection after the first closed')
  t.equal(third.transport, rung, `accepted on ${rung} again (a busy refusal is not cached)`)
  t.equal(s3.transport, rung)
}, { loopback: true })

forEachRung(t, async (t, rung) => {
  const { server, client, port } = await pair(rung, { t })
  server.maxConnections = 1
  const second = fastsock.connect({ port, host: '127.0.0.1', transports: [rung] })
  const [err] = await once(second, 'error')
  if (rung === 'tcp') {
    t.ok(['ECONNRESET', 'EPIPE'].includes(err.code), `tcp: the kernel accepted, the server closed (${err.code})`)
  } else {
    t.equal(err.code, 'ERR_FASTSOCK_ALL_TRANSPORTS_FAILED', `${rung} only: nothing connected`)
    t.equal(err.errors[0].code, 'ERR_FASTSOCK_REJECTED', 'the side channel refused')
  }
  t.equal(client.destroyed, false, 'the first connection is untouched')
}, { only: ['unix'] })
