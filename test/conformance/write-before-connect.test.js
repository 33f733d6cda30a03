'use strict'
// Writes and end() issued before the connection is up are queued and delivered; end() right
// after connect() still delivers everything and 'finish' fires.
const t = require('tap')
const { forEachRung, fastsock, ALL_RUNGS, rungHost, dialHost } = require('../helpers/rungs')
const { once, collect, listen, within } = require('../helpers/util')

// The RDMA guest's emulated CPU, shared with other jobs, can take seconds to set a cross-host rung up.
const closeWithinMs = rung => rungHost(rung) ? 30000 : 5000

async function server (t, rung) {
  const srv = fastsock.createServer({ transports: ALL_RUNGS })
  const received = []
  srv.on('connection', s => {
    s.on('error', () => {})
    received.push({ transport: s.transport, data: collect(s) })
    s.on('end', () => s.end())
  })
  await listen(srv, 0, rungHost(rung) ? '0.0.0.0' : '127.0.0.1')
  t.teardown(() => srv.close())
  return { port: srv.address().port, received }
}

forEachRung(t, async (t, rung) => {
  t.test('write() before connect, end() in the connect callback', async t => {
    const { port, received } = await server(t, rung)
    const c = fastsock.connect({ port, host: dialHost(rung), transports: [rung], transportTimeoutMs: 20000 }, () => c.end('third'))
    t.teardown(() => c.destroy())
    t.equal(c.connecting, true)
    c.write('first,')
    c.write(Buffer.from('second,'))
    const finished = once(c, 'finish')
    c.resume()
    await finished
    t.equal(c.transport, rung)
    await once(c, 'close')
    t.equal(received.length, 1)
    t.equal(received[0].transport, rung)
    t.equal((await received[0].data).toString(), 'first,second,third')
  })

  t.test('end(data) right after connect()', async t => {
    const { port, received } = await server(t, rung)
    const c = fastsock.connect({ port, host: dialHost(rung), transports: [rung], transportTimeoutMs: 20000 })
    t.teardown(() => c.destroy())
    const events = []
    c.on('connect', () => events.push('connect'))
    c.on('finish', () => events.push('finish'))
    c.end('all at once', () => events.push('end callback'))
    c.resume()
    await within(new Promise(resolve => c.once('close', resolve)), closeWithinMs(rung), 'close')
    t.equal(c.transport, rung)
    t.same(events.filter(e => e !== 'end callback'), ['connect', 'finish'], "'connect' then 'finish'")
    t.ok(events.includes('end callback'), 'the end() callback ran')
    t.equal((await received[0].data).toString(), 'all at once')
    t.equal(received[0].transport, rung)
  })

  t.test('many writes before connect keep their order', async t => {
    const { port, received } = await server(t, rung)
    const c = fastsock.connect({ port, host: dialHost(rung), transports: [rung], transportTimeoutMs: 20000 })
    t.teardown(() => c.destroy())
    let expected = ''
    for (let i = 0; i < 500; i++) {
      c.write(`${i},`)
      expected += `${i},`
    }
    c.end()
    c.resume()
    await within(new Promise(resolve => c.once('close', resolve)), closeWithinMs(rung), 'close')
    t.equal((await received[0].data).toString(), expected)
  })
})
