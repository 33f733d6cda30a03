'use strict'
// readInto mixed with 'data' listeners, as documented (lib/readinto.ts, docs/api.md): while a
// request is pending, arriving bytes go to it and not to 'data'; what it does not need, and
// bytes arriving with no request pending, are ordinary 'data'.
const t = require('tap')
const { forEachRung, pair } = require('../helpers/rungs')
const { once, waitFor, sleep } = require('../helpers/util')

forEachRung(t, async (t, rung) => {
  const { client, serverSocket } = await pair(rung, { t })
  let seen = ''
  serverSocket.on('data', d => { seen += d.toString() })

  // 1. A pending request takes the first bytes of a chunk; the rest is 'data'.
  const first = serverSocket.readInto(new Uint8Array(10))
  client.write('AAAAAAAAAABBBBB')
  t.equal(Buffer.from(await first).toString(), 'AAAAAAAAAA', 'the request got its 10 bytes')
  await waitFor(() => seen.length >= 5, 3000, "'data' for the rest")
  t.equal(seen, 'BBBBB', "'data' got only what the request did not take")

  // 2. No request pending: bytes are 'data'.
  client.write('CCCC')
  await waitFor(() => seen.length >= 9, 3000, "'data'")
  t.equal(seen, 'BBBBBCCCC', "bytes with no request pending are 'data'")

  // 3. A request spanning several chunks: none of them is 'data'.
  const second = serverSocket.readInto(new Uint16Array(3))
  client.write('DD')
  await sleep(20)
  client.write('DDDD')
  await second
  await sleep(20)
  t.equal(seen, 'BBBBBCCCC', "bytes that went to the request never became 'data'")

  // 4. Paused with a 'data' listener: buffered bytes go to the next request first, not to 'data'.
  serverSocket.pause()
  client.write('xxxxxyyyyy')
  await waitFor(() => serverSocket.readableLength === 10, 3000, 'the bytes to be buffered')
  const third = serverSocket.readInto(new Uint8Array(5))
  t.equal(Buffer.from(await third).toString(), 'xxxxx', 'buffered bytes served first')
  t.equal(seen, 'BBBBBCCCC', "not emitted as 'data'")
  serverSocket.resume()
  await waitFor(() => seen.length >= 14, 3000, "'data' after resume")
  t.equal(seen, 'BBBBBCCCCyyyyy', "the rest flows as 'data' on resume")

  client.end()
  await once(serverSocket, 'end')
})
