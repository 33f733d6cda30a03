'use strict'
// A squatter that answers every connection at once with a valid-looking ACCEPT still gets
// nothing: the client verifies before it writes a byte (HELLO included).
const t = require('tap')
const net = require('net')
const crypto = require('crypto')
const { fastsock, rungs } = require('../helpers/rungs')
const { listen, collect, sha256, connectOutcome } = require('../helpers/util')
const { squat } = require('../helpers/squatter')

t.test('squatter answering ACCEPT', { skip: rungs.includes('unix') ? false : 'the unix rung is not available here' }, async t => {
  fastsock.clearNegativeCache()
  const server = net.createServer(s => { s.on('error', () => {}); s.pipe(s) })
  await listen(server, 0, '127.0.0.1')
  t.teardown(() => server.close())
  const { port } = server.address()
  const squatter = await squat(t, '127.0.0.1', port, 'accept')
  for (const transports of [undefined, ['unix', 'tcp'], ['unix']]) {
    fastsock.clearNegativeCache()
    const c = fastsock.connect({ port, host: '127.0.0.1', ...(transports ? { transports } : {}) })
    t.teardown(() => c.destroy())
    const data = crypto.randomBytes(20000)
    c.write(data)
    const err = await connectOutcome(c)
    if (transports && !transports.includes('tcp')) {
      t.equal(err && err.code, 'ERR_FASTSOCK_ALL_TRANSPORTS_FAILED', 'unix only: an error')
    } else {
      t.equal(err, null, 'connected')
      t.equal(c.transport, 'tcp', `chain ${transports || 'default'}: tcp`)
      const back = collect(c)
      c.end()
      t.equal(sha256(await back), sha256(data), 'the data reached the real server')
    }
  }
  const rep = await squatter.report()
  t.ok(rep.connections >= 1, `the squatter was reached (${rep.connections} connections)`)
  t.equal(rep.bytes, 0, 'and received zero bytes')
  fastsock.clearNegativeCache()
})
