'use strict'
// pauseOnConnect: the server-side socket does not read until resume(); nothing is lost.
const t = require('tap')
const { forEachRung, pair } = require('../helpers/rungs')
const { collect, sleep } = require('../helpers/util')

forEachRung(t, async (t, rung) => {
  const { client, serverSocket } = await pair(rung, { t, serverOptions: { pauseOnConnect: true } })
  let early = 0
  const onData = d => { early += d.length }
  serverSocket.on('data', onData)
  client.write('written before the server resumes')
  await sleep(200)
  t.equal(early, 0, "no 'data' while paused, even with a 'data' listener")
  t.equal(serverSocket.bytesRead, 0, 'nothing read from the connection yet')
  serverSocket.removeListener('data', onData)
  const got = collect(serverSocket)
  serverSocket.resume()
  client.end(' and after')
  t.equal((await got).toString(), 'written before the server resumes and after')
})
