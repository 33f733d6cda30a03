'use strict'
// Many connect/close cycles on shm leave no fd and no mapping behind (/proc/self/fd and
// /proc/self/maps return to their baseline), on both ends (both in this process).
const t = require('tap')
const fs = require('fs')
const { rungs, pair } = require('../helpers/rungs')
const { once, sleep } = require('../helpers/util')

const fdCount = () => fs.readdirSync('/proc/self/fd').length
const memfdMaps = () => fs.readFileSync('/proc/self/maps', 'utf8').split('\n').filter(l => l.includes('fastsock-shm')).length

t.test('connect/close cycles', { skip: !rungs.includes('shm') && 'shm is not available here', timeout: 60000 }, async t => {
  // Warm up (module loading, the first server) before taking the baseline.
  const warm = await pair('shm')
  await warm.close()
  await sleep(50)
  const fd0 = fdCount()
  const maps0 = memfdMaps()
  t.equal(maps0, 0, 'no segment mapped once the warm-up pair closed')
  const CYCLES = 150
  for (let i = 0; i < CYCLES; i++) {
    const p = await pair('shm')
    p.client.write('x')
    await once(p.serverSocket, 'data')
    if (i === 0) t.ok(memfdMaps() > 0, `a live pair maps its segment (${memfdMaps()} mappings)`)
    const closed = [once(p.client, 'close'), once(p.serverSocket, 'close')]
    p.client.end()
    p.serverSocket.end()
    await Promise.all(closed)
    await p.close()
  }
  await sleep(100) // uv_close callbacks
  t.equal(fdCount(), fd0, `fds back to ${fd0} after ${CYCLES} cycles`)
  t.equal(memfdMaps(), 0, 'no segment mapping left')
})
