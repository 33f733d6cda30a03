'use strict'
// `pollUs` is the polling window's option on sockets and servers; `shmPollUs`, its old name,
// is still accepted (deprecated: the window is every polling rung's, not shm's), as are
// FASTSOCK_POLL_US and FASTSOCK_SHM_POLL_US (docs/api.md).
const t = require('tap')
const fastsock = require('..')

t.test('pollUs and its deprecated alias shmPollUs are validated under their own names', async t => {
  t.throws(() => new fastsock.Socket({ pollUs: -1 }), { code: 'ERR_OUT_OF_RANGE', message: /options\.pollUs/ })
  t.throws(() => new fastsock.Socket({ shmPollUs: -1 }), { code: 'ERR_OUT_OF_RANGE', message: /options\.shmPollUs/ })
  t.doesNotThrow(() => new fastsock.Socket({ pollUs: 0 }).destroy())
  t.doesNotThrow(() => new fastsock.Socket({ shmPollUs: 10 }).destroy())
})

t.test('a server takes either name', async t => {
  for (const opts of [{ pollUs: 0 }, { shmPollUs: 0 }]) {
    const server = fastsock.createServer(opts, s => s.end('ok'))
    await new Promise(resolve => server.listen(0, '127.0.0.1', resolve))
    const c = fastsock.connect({ port: server.address().port, host: '127.0.0.1', ...opts })
    const got = await new Promise((resolve, reject) => {
      let s = ''
      c.on('data', d => { s += d })
      c.on('end', () => resolve(s))
      c.on('error', reject)
    })
    t.equal(got, 'ok', `${Object.keys(opts)[0]}: served`)
    await new Promise(resolve => server.close(resolve))
  }
})
