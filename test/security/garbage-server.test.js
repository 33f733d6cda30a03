'use strict'
// A side channel that passes verification (one child process owns both the TCP listener and the
// name) but answers HELLO badly: the client reports the failure in 'transportAttemptFailed'
// (ERR_FASTSOCK_HANDSHAKE; a timeout or a REJECT with their own codes) and falls back to TCP,
// where the same process echoes the bytes.
const t = require('tap')
const crypto = require('crypto')
const { fastsock, rungs } = require('../helpers/rungs')
const { collect, sha256, connectOutcome } = require('../helpers/util')
const { fakeServer } = require('../helpers/squatter')

const TIMEOUT_MS = 300
const modes = {
  garbage: 'ERR_FASTSOCK_HANDSHAKE',
  'wrong-type': 'ERR_FASTSOCK_HANDSHAKE',
  'wrong-version': 'ERR_FASTSOCK_HANDSHAKE',
  'bad-transport': 'ERR_FASTSOCK_HANDSHAKE',
  'bad-length': 'ERR_FASTSOCK_HANDSHAKE',
  close: 'ERR_FASTSOCK_HANDSHAKE',
  'reset-flag-not-eventfd': 'ERR_FASTSOCK_HANDSHAKE',
  'two-fds': 'ERR_FASTSOCK_HANDSHAKE',
  silent: 'ERR_FASTSOCK_TRANSPORT_TIMEOUT',
  reject: 'ERR_FASTSOCK_REJECTED'
}

for (const [mode, code] of Object.entries(modes)) {
  t.test(`side channel answers: ${mode}`, { skip: rungs.includes('unix') ? false : 'the unix rung is not available here' }, async t => {
    fastsock.clearNegativeCache()
    const fake = await fakeServer(t, mode)
    const c = fastsock.connect({ port: fake.port, host: '127.0.0.1', transports: ['unix', 'tcp'], transportTimeoutMs: TIMEOUT_MS })
    t.teardown(() => c.destroy())
    const failures = []
    c.on('transportAttemptFailed', e => failures.push(e))
    const err = await connectOutcome(c, 5000)
    t.equal(err, null, 'connected')
    t.equal(c.transport, 'tcp', 'fell back to tcp')
    t.equal(failures.length, 1, 'one failed attempt')
    t.equal(failures[0] && failures[0].transport, 'unix')
    t.equal(failures[0] && failures[0].error.code, code, `error code ${code}`)
    t.ok(fake.messages.some(m => m.event === 'hello'), 'verification passed: the client sent HELLO')
    const data = crypto.randomBytes(30000)
    const back = collect(c)
    c.end(data)
    t.equal(sha256(await back), sha256(data), 'the TCP fallback carries the bytes')
    fastsock.clearNegativeCache()
  })
}

t.test('the default chain against a garbage side channel ends on tcp', { skip: rungs.includes('unix') ? false : 'the unix rung is not available here' }, async t => {
  fastsock.clearNegativeCache()
  const fake = await fakeServer(t, 'garbage')
  const c = fastsock.connect({ port: fake.port, host: '127.0.0.1', transportTimeoutMs: TIMEOUT_MS })
  t.teardown(() => c.destroy())
  const failures = []
  c.on('transportAttemptFailed', e => failures.push(e.error.code))
  t.equal(await connectOutcome(c, 5000), null, 'connected')
  t.equal(c.transport, 'tcp')
  t.ok(failures.length >= 1, `fast rungs failed: ${failures}`)
  t.ok(failures.every(code => code === 'ERR_FASTSOCK_HANDSHAKE' || code === 'ERR_FASTSOCK_NOT_OFFERED'), 'each as a handshake failure')
  fastsock.clearNegativeCache()
})
