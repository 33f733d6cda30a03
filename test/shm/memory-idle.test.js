'use strict'
// Ring memory follows the bytes in flight (docs/wire-protocol.md, "Ring memory"): after 4 MiB
// echoed through a server in another process, both rings have cycled through every page; once
// the connection is idle each producer gives its ring's free pages back (a hole punched in the
// memfd), so this process's shared memory and the pages of the segment (mincore) drop to a page
// or two per ring. Bytes stay intact across a punch, and an outstanding zero-copy loan is never
// punched. No timing asserted beyond "within a few seconds".
const fs = require('fs')
const crypto = require('crypto')
const t = require('tap')
const fastsock = require('../..')
const { rungs } = require('../helpers/rungs')
const { spawnNode, once, collectBytes, sha256, waitFor, sleep } = require('../helpers/util')

const skip = !rungs.includes('shm') && 'shm is not available here'
const MiB = 1 << 20
const PAGE = 4096

/** This process's resident shared memory (RssShmem of /proc/self/status), in bytes. */
function rssShmem () {
  const m = /RssShmem:\s+(\d+) kB/.exec(fs.readFileSync('/proc/self/status', 'utf8'))
  return m ? Number(m[1]) * 1024 : NaN
}

async function echoPeer (t) {
  const peer = spawnNode(t, [require.resolve('../fixtures/shm-peer.js'), 'echo'])
  const { port } = await peer.waitFor(m => m.event === 'listening')
  const c = fastsock.connect({ port, host: '127.0.0.1', transports: ['shm'] })
  t.teardown(() => c.destroy())
  await once(c, 'connect')
  t.equal(c.transport, 'shm')
  return c
}

/** Writes `n` random bytes and checks that the echo brings back the same bytes. */
async function echoRandom (t, c, n) {
  const data = crypto.randomBytes(n)
  const back = collectBytes(c, n, 30000)
  c.write(data)
  const got = await back
  t.equal(got.length, n, `${n} bytes echoed`)
  t.equal(sha256(got), sha256(data), `the ${n} bytes are intact`)
}

/** Both rings of `c` down to at most `pages` pages each (the punches of both processes). */
const trimmed = (c, pages) => () => {
  const m = c._fsShm.ep.memStats()
  return m.txResidentBytes <= pages * PAGE && m.rxResidentBytes <= pages * PAGE
}

t.test('an idle connection gives its ring pages back', { skip }, async t => {
  const base = rssShmem()
  const c = await echoPeer(t)
  await echoRandom(t, c, 4 * MiB)
  const busy = c._fsShm.ep.memStats()
  t.equal(busy.ringBytes, MiB, 'rings of the default 1 MiB')
  t.comment(`right after the echo: tx ${busy.txResidentBytes} B, rx ${busy.rxResidentBytes} B resident, RssShmem +${rssShmem() - base} B`)
  await waitFor(trimmed(c, 0), 5000, 'both rings given back (every page: they are drained)')
  const idle = c._fsShm.ep.memStats()
  t.ok(idle.trims >= 1, `this end punched its transmit ring (${idle.trims} times)`)
  t.ok(idle.trimmedBytes >= MiB, `${idle.trimmedBytes} bytes given back by this end`)
  const grown = rssShmem() - base
  t.ok(grown <= 64 * 1024, `this process's shared memory is back near where it started (+${grown} B; without the punch: +2 MiB or more)`)
})

t.test('bytes stay intact across a punch, at any head offset', { skip }, async t => {
  const c = await echoPeer(t)
  // Sizes that leave head in the middle of a page, then stream again over the punched pages.
  for (const n of [4 * MiB + 777, 3 * MiB + 1234, 2 * MiB - 99]) {
    await echoRandom(t, c, n)
    const trims = c._fsShm.ep.memStats().trims
    await waitFor(() => c._fsShm.ep.memStats().trims > trims, 5000, 'a punch of the transmit ring')
    await waitFor(trimmed(c, 0), 5000, 'both rings given back')
  }
  await echoRandom(t, c, 64 * 1024 + 1)
})

t.test('an outstanding zero-copy loan is never punched', { skip }, async t => {
  const c = await echoPeer(t)
  await echoRandom(t, c, 2 * MiB)
  await waitFor(trimmed(c, 0), 5000, 'both rings given back')
  await echoRandom(t, c, 64 * 1024) // traffic again: the idle timer watches the ring
  const n = 256 * 1024
  const loan = c.allocShared(n)
  t.ok(loan, 'a loan of 256 KiB')
  const data = crypto.randomBytes(n)
  loan.set(data)
  const trims = c._fsShm.ep.memStats().trims
  await sleep(600) // several idle ticks with the loan filled but not written
  t.equal(c._fsShm.ep.memStats().trims, trims, 'no punch while the loan is outstanding')
  const back = collectBytes(c, n, 30000)
  c.write(loan)
  t.equal(sha256(await back), sha256(data), 'the loaned bytes arrive intact')
})
