'use strict'
// Half-open connections: with allowHalfOpen, an end() in one direction leaves the other open;
// without it, the side that receives the FIN ends its own side automatically.
const t = require('tap')
const { forEachRung, pair } = require('../helpers/rungs')
const { collect, once, sleep } = require('../helpers/util')

forEachRung(t, async (t, rung) => {
  t.test('client ends, server keeps writing (allowHalfOpen)', async t => {
    const { client, serverSocket } = await pair(rung, {
      t, serverOptions: { allowHalfOpen: true }, clientOptions: { allowHalfOpen: true }
    })
    const fromClient = collect(serverSocket)
    client.end('bye')
    t.equal((await fromClient).toString(), 'bye', 'server read the client data, then end')
    t.equal(serverSocket.writable, true, 'server side still writable after the FIN')
    const fromServer = collect(client)
    for (let i = 0; i < 5; i++) {
      serverSocket.write(`late ${i};`)
      await sleep(10)
    }
    serverSocket.end('done')
    t.equal((await fromServer).toString(), 'late 0;late 1;late 2;late 3;late 4;done')
    await once(client, 'close')
  })

  t.test('server ends, client keeps writing (allowHalfOpen)', async t => {
    const { client, serverSocket } = await pair(rung, {
      t, serverOptions: { allowHalfOpen: true }, clientOptions: { allowHalfOpen: true }
    })
    const fromServer = collect(client)
    serverSocket.end('server done')
    t.equal((await fromServer).toString(), 'server done')
    t.equal(client.writable, true, 'client side still writable after the FIN')
    const fromClient = collect(serverSocket)
    for (let i = 0; i < 5; i++) {
      client.write(`more ${i};`)
      await sleep(10)
    }
    client.end()
    t.equal((await fromClient).toString(), 'more 0;more 1;more 2;more 3;more 4;')
    await once(serverSocket, 'close')
  })

  t.test('without allowHalfOpen the server side ends itself on the client FIN', async t => {
    const { client, serverSocket } = await pair(rung, { t })
    const finished = once(serverSocket, 'finish')
    const clientEnded = once(client, 'end')
    client.resume()
    serverSocket.resume()
    client.end()
    await finished
    t.pass('server socket finished (auto end) without calling end()')
    await clientEnded
    t.pass('client saw the FIN back')
    await once(client, 'close')
  })

  t.test('without allowHalfOpen the client side ends itself on the server FIN', async t => {
    const { client, serverSocket } = await pair(rung, { t })
    const finished = once(client, 'finish')
    const serverEnded = once(serverSocket, 'end')
    client.resume()
    serverSocket.resume()
    serverSocket.end()
    await finished
    t.pass('client finished (auto end) without calling end()')
    await serverEnded
    t.pass('server saw the FIN back')
    await once(serverSocket, 'close')
  })
})
