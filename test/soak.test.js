'use strict'
// No leak: connect / echo / close cycles on each rung, in one process (both ends), must leave the
// JS heap flat after GC. The heap is measured after cycle WARMUP_CYCLES (code compiled, caches
// and pools warm) and after the last cycle; the growth per closed connection must stay under
// PER_CONNECTION_BOUND_BYTES. Before the fix, an shm connection kept ~3.8 KB alive (the native
// endpoint's strong reference to its event callback held the stream and the socket), i.e.
// +7.6 MB over these cycles against a bound of 1 MB. bench/soak.js is the long version (10^5
// cycles, RSS, fds and mappings too).
const t = require('tap')
const v8 = require('v8')
const vm = require('vm')
const fastsock = require('..')
const { forEachRung } = require('./helpers/rungs')
const { within } = require('./helpers/util')

v8.setFlagsFromString('--expose-gc')
const gc = vm.runInNewContext('gc')

const WARMUP_CYCLES = 1000
const CYCLES = 3000
/** Bytes of heap growth allowed per connection after the warm-up (a leak of 1 KB+ fails). */
const PER_CONNECTION_BOUND_BYTES = 500
const MESSAGE = Buffer.alloc(100, 7)

/** The heap after full collections, with finalizers (native endpoints) given loop turns to run. */
async function heapAfterGc () {
  for (let i = 0; i < 3; i++) {
    gc()
    await new Promise(resolve => setImmediate(resolve))
  }
  gc()
  return process.memoryUsage().heapUsed
}

/** One cycle: connect on `rung`, send MESSAGE, read the echo, close; resolves at the client's 'close'. */
function cycle (port, rung) {
  return new Promise((resolve, reject) => {
    const c = fastsock.connect({ port, host: '127.0.0.1', transports: [rung] })
    let got = 0
    c.on('error', reject)
    c.on('connect', () => {
      if (c.transport !== rung) reject(new Error(`asked for ${rung}, got ${c.transport}`))
      c.write(MESSAGE)
    })
    c.on('data', d => { got += d.length; if (got >= MESSAGE.length) c.end() })
    c.on('close', () => got >= MESSAGE.length ? resolve() : reject(new Error(`echo incomplete: ${got} bytes`)))
  })
}

forEachRung(t, async (t, rung) => {
  const server = fastsock.createServer(s => { s.on('error', () => {}); s.pipe(s) })
  await new Promise(resolve => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise(resolve => server.close(resolve)))
  const port = server.address().port
  let warm = 0
  await within((async () => {
    for (let i = 1; i <= CYCLES; i++) {
      await cycle(port, rung)
      if (i === WARMUP_CYCLES) warm = await heapAfterGc()
    }
  })(), 60000, `${CYCLES} cycles on ${rung}`)
  const end = await heapAfterGc()
  const perConnection = (end - warm) / (CYCLES - WARMUP_CYCLES)
  t.comment(`${rung}: heap after GC ${(warm / 1e6).toFixed(2)} MB at cycle ${WARMUP_CYCLES}, ${(end / 1e6).toFixed(2)} MB at ${CYCLES} (${perConnection.toFixed(0)} B per connection)`)
  t.ok(perConnection < PER_CONNECTION_BOUND_BYTES, `${rung}: heap growth ${perConnection.toFixed(0)} B per closed connection < ${PER_CONNECTION_BOUND_BYTES} B`)
}, { only: ['shm', 'unix', 'tcp'], timeout: 90000 })
