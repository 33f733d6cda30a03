'use strict'
// bytesRead counts the bytes that arrive together with the connection's set-up: a server that
// writes at once on 'connection' can have its first bytes read in the same receive as the
// side channel's reply (they are handed to the stream, not read through the handle); they are
// the application's and count like every later byte.
const t = require('tap')
const { fastsock, forEachRung, rungHost, dialHost } = require('../helpers/rungs')
const { collect } = require('../helpers/util')

forEachRung(t, async (t, rung) => {
  const first = Buffer.alloc(100, 1)
  const rest = Buffer.alloc(50, 2)
  const server = fastsock.createServer(s => { s.write(first); setTimeout(() => s.end(rest), 50) })
  await new Promise(resolve => server.listen(0, rungHost(rung) ? '0.0.0.0' : '127.0.0.1', resolve))
  t.teardown(() => server.close())
  const c = fastsock.connect({ port: server.address().port, host: dialHost(rung), transports: [rung] })
  const seen = []
  c.on('data', d => seen.push([d.length, c.bytesRead]))
  const got = await collect(c)
  t.equal(got.length, first.length + rest.length, 'every byte arrived')
  let total = 0
  for (const [n, counted] of seen) {
    total += n
    t.ok(counted >= total, `bytesRead (${counted}) counts the ${total} bytes delivered so far`)
  }
  t.equal(c.bytesRead, first.length + rest.length, 'bytesRead at the end: every byte, once')
})
