'use strict'
// A readInto the stream cannot fill is rejected with ERR_FASTSOCK_READINTO and bytesRead: the
// peer ends early, the peer resets, the socket is destroyed, or readInto comes after the end.
const t = require('tap')
const { forEachRung, pair, fastsock } = require('../helpers/rungs')
const { once, sleep } = require('../helpers/util')

function checkErr (t, err, bytesRead) {
  t.ok(err instanceof fastsock.FastsockError, 'a FastsockError')
  t.equal(err.code, 'ERR_FASTSOCK_READINTO')
  t.equal(err.bytesRead, bytesRead, `bytesRead ${bytesRead}`)
}

forEachRung(t, async (t, rung) => {
  t.test('the peer ends early', async t => {
    const { client, serverSocket } = await pair(rung, { t })
    const view = new Uint8Array(100)
    const read = serverSocket.readInto(view)
    client.end(Buffer.alloc(30, 7))
    const err = await read.then(() => null, e => e)
    checkErr(t, err, 30)
    t.ok(view.subarray(0, 30).every(b => b === 7), 'the 30 bytes are in the view')
    t.ok(view.subarray(30).every(b => b === 0), 'nothing else')
  })

  t.test('several pending requests: the full one resolves, the rest reject', async t => {
    const { client, serverSocket } = await pair(rung, { t })
    const a = serverSocket.readInto(new Uint8Array(20))
    const b = serverSocket.readInto(new Uint8Array(20))
    const c = serverSocket.readInto(new Uint8Array(20))
    client.end(Buffer.alloc(30, 1))
    t.equal((await a).length, 20, 'first resolves')
    checkErr(t, await b.then(() => null, e => e), 10)
    checkErr(t, await c.then(() => null, e => e), 0)
  })

  t.test('readInto after the end', async t => {
    const { client, serverSocket } = await pair(rung, { t })
    serverSocket.resume()
    client.end()
    await once(serverSocket, 'end')
    checkErr(t, await serverSocket.readInto(new Float64Array(1)).then(() => null, e => e), 0)
  })

  t.test('the callback form gets the error', async t => {
    const { client, serverSocket } = await pair(rung, { t })
    const err = await new Promise(resolve => {
      serverSocket.readInto(new Int32Array(4), (e, v) => resolve(e))
      client.end(Buffer.alloc(6))
    })
    checkErr(t, err, 6)
  })

  t.test('the socket is destroyed locally', async t => {
    const { serverSocket } = await pair(rung, { t })
    const read = serverSocket.readInto(new Uint8Array(8))
    await sleep(10)
    serverSocket.destroy()
    checkErr(t, await read.then(() => null, e => e), 0)
    checkErr(t, await serverSocket.readInto(new Uint8Array(1)).then(() => null, e => e), 0)
  })

  t.test('the peer resets the connection', async t => {
    const { client, serverSocket } = await pair(rung, { t })
    const read = client.readInto(new Uint8Array(8))
    serverSocket.pause()
    client.write(Buffer.alloc(1 << 20)) // unread by the server: its destroy() is a reset
    await sleep(100)
    serverSocket.destroy()
    const err = await read.then(() => null, e => e)
    checkErr(t, err, 0)
  })
})
