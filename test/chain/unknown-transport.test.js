'use strict'
// An unknown rung name (or an empty list) throws ERR_FASTSOCK_UNKNOWN_TRANSPORT synchronously,
// from connect(), new Socket() and createServer().
const t = require('tap')
const { fastsock } = require('../helpers/rungs')

const bad = [['nope'], ['unix', 'tcpp'], 'unix,bogus', [], '', ['UNIX'], [42]]

for (const transports of bad) {
  t.test(JSON.stringify(transports), async t => {
    const check = { code: 'ERR_FASTSOCK_UNKNOWN_TRANSPORT', name: 'FastsockError' }
    t.throws(() => fastsock.connect({ port: 1, host: '127.0.0.1', transports }), check, 'connect()')
    t.throws(() => new fastsock.Socket({ transports }), check, 'new Socket()')
    t.throws(() => fastsock.createServer({ transports }), check, 'createServer()')
  })
}

t.test('the error is a FastsockError naming the known rungs', async t => {
  try {
    fastsock.connect({ port: 1, transports: ['warp'] })
    t.fail('did not throw')
  } catch (err) {
    t.ok(err instanceof fastsock.FastsockError)
    t.ok(err instanceof Error)
    t.match(err.message, /warp/)
    for (const name of fastsock.TRANSPORT_NAMES) t.match(err.message, name)
  }
})

t.test('known names are accepted in any order', async t => {
  const s = new fastsock.Socket({ transports: [...fastsock.TRANSPORT_NAMES].reverse() })
  t.equal(s.transport, null, 'transport is null before connecting')
  s.destroy()
})
