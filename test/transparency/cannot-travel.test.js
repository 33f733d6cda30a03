'use strict'
// Sockets that cannot travel fail loudly: child.send(msg, socket) of an shm socket (no kernel
// handle) or of a socket still running the chain throws ERR_FASTSOCK_NOT_TRANSFERABLE, where
// Node would drop it silently; a worker transfer throws as it always did. A socket on a kernel
// handle (unix, tcp) is sent as Node sends it.
const t = require('tap')
const path = require('path')
const { fork } = require('child_process')
const { Worker } = require('worker_threads')
const { net, forEachRung, netPair } = require('../helpers/hook')
const { within } = require('../helpers/util')

const CHILD = path.join(__dirname, '..', 'fixtures', 'transparency', 'ipc-child.js')

function childProc (t) {
  const c = fork(CHILD, [], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] })
  t.teardown(() => c.kill())
  return c
}

t.test('child_process send(msg, socket)', async t => {
  forEachRung(t, async (t, rung) => {
    const { serverSocket } = await netPair(t, rung)
    const child = childProc(t)
    if (rung === 'shm') {
      t.throws(() => child.send('sock', serverSocket), { code: 'ERR_FASTSOCK_NOT_TRANSFERABLE', message: /shm socket has no kernel handle/ })
      t.equal(serverSocket.destroyed, false, 'the socket stays with this process, usable')
    } else {
      child.send('sock', serverSocket)
      const [m] = await within(new Promise(resolve => child.once('message', (...a) => resolve(a))), 5000, 'child reply')
      t.same(m, { got: 'sock', handle: true }, `a ${rung} socket travels with its handle`)
    }
  })
})

t.test('a socket still connecting through the chain cannot be sent', async t => {
  const server = net.createServer()
  await new Promise(resolve => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => server.close())
  const c = net.connect({ port: server.address().port, host: '127.0.0.1' })
  t.teardown(() => c.destroy())
  const child = childProc(t)
  t.throws(() => child.send('sock', c), { code: 'ERR_FASTSOCK_NOT_TRANSFERABLE', message: /still connecting/ })
})

t.test('worker_threads: a socket cannot be posted (DataCloneError), on every rung', async t => {
  forEachRung(t, async (t, rung) => {
    const { client } = await netPair(t, rung)
    const w = new Worker('require("worker_threads").parentPort.on("message", () => {})', { eval: true })
    t.teardown(() => w.terminate())
    t.throws(() => w.postMessage(client), { name: 'DataCloneError' })
  })
})
