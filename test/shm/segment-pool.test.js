'use strict'
// The shm client's segments made ahead (lib/transports/shm/pool.ts): refilled after a connect,
// never more than POOL_MAX, each taken once (a memfd that went to a peer is not pooled again),
// and all closed once the process stops connecting.
const t = require('tap')
const fs = require('fs')
const fastsock = require('../..')
const { pooledSegments, takeSegment, POOL_MAX, POOL_IDLE_MS } = require('../../dist/transports/shm/pool')
const { native } = require('../../dist/native')
const { rungs } = require('../helpers/rungs')
const { once, sleep } = require('../helpers/util')

const memfds = () => fs.readdirSync('/proc/self/fd').filter(f => {
  try { return fs.readlinkSync(`/proc/self/fd/${f}`).includes('memfd:fastsock-shm') } catch { return false }
}).length

t.test('made ahead, bounded, taken once, freed when idle', { skip: !rungs.includes('shm') && 'shm is not available here', timeout: 30000 }, async t => {
  const server = fastsock.createServer(s => s.pipe(s))
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => server.close())
  const { port } = server.address()
  const connect = async () => {
    const c = fastsock.connect({ port, host: '127.0.0.1', transports: ['shm'] })
    await once(c, 'connect')
    t.equal(c.transport, 'shm')
    return c
  }
  ;(await connect()).destroy()
  await sleep(10)
  t.equal(pooledSegments(), POOL_MAX, 'refilled after a connect')
  const open = []
  for (let i = 0; i < 10; i++) open.push(await connect())
  await sleep(10)
  t.ok(pooledSegments() <= POOL_MAX, `never more than ${POOL_MAX} (${pooledSegments()})`)
  t.equal(memfds(), pooledSegments(), 'connected segments hold no memfd: only the pooled ones are open')
  for (const c of open) c.destroy()

  const a = takeSegment(1 << 20)
  const b = takeSegment(1 << 20)
  t.not(fs.fstatSync(a).ino, fs.fstatSync(b).ino, 'each take is a different memfd')
  native.closeFd(a)
  native.closeFd(b)

  await sleep(POOL_IDLE_MS + 1000)
  t.equal(pooledSegments(), 0, 'an idle process holds none')
  t.equal(memfds(), 0, 'and no memfd is left open')
})
