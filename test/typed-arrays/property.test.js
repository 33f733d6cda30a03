'use strict'
// Property (fast-check): for random arrays of random types, written in random chunkings (views of
// the array's type, odd byte windows through DataViews, cork/uncork) and read with random
// readInto splits, the reader ends with exactly the writer's bytes. On every rung.
const t = require('tap')
const fc = require('fast-check')
const { forEachRung, fastsock, ALL_RUNGS } = require('../helpers/rungs')
const { VIEW_TYPES, elementSize, bytesOf } = require('../helpers/typed')
const { listen, once, within } = require('../helpers/util')

const RUNS = 30

/** One random case: a view type, its bytes, a write chunking in bytes, read splits in elements. */
const caseArb = fc.integer({ min: 0, max: VIEW_TYPES.length - 1 }).chain(ti => {
  const T = VIEW_TYPES[ti]
  const size = elementSize(T)
  return fc.integer({ min: 1, max: 4096 }).chain(n => fc.record({
    T: fc.constant(T),
    bytes: fc.uint8Array({ minLength: n * size, maxLength: n * size }),
    writeCuts: fc.array(fc.integer({ min: 1, max: n * size }), { maxLength: 20 }),
    readCuts: fc.array(fc.integer({ min: 0, max: n }), { maxLength: 10 }),
    cork: fc.boolean(),
    dataView: fc.boolean()
  }))
})

forEachRung(t, async (t, rung) => {
  const server = fastsock.createServer({ transports: ALL_RUNGS })
  const accepted = []
  server.on('connection', s => { s.on('error', () => {}); accepted.push(s) })
  await listen(server, 0, '127.0.0.1')
  t.teardown(() => { accepted.forEach(s => s.destroy()); server.close() })
  const { port } = server.address()

  await fc.assert(fc.asyncProperty(caseArb, async ({ T, bytes, writeCuts, readCuts, cork, dataView }) => {
    const size = elementSize(T)
    const n = bytes.length / size
    const src = new T(bytes.buffer, bytes.byteOffset, T === DataView ? bytes.length : n)
    const conn = once(server, 'connection')
    const c = fastsock.connect({ port, host: '127.0.0.1', transports: [rung] })
    try {
      await once(c, 'connect')
      if (c.transport !== rung) throw new Error(`landed on ${c.transport}`)
      const [s] = await conn
      // Reader: random element splits, all queued at once.
      const target = new T(new ArrayBuffer(bytes.length))
      const cuts = [...new Set([0, ...readCuts, n])].sort((a, b) => a - b)
      const reads = []
      for (let i = 0; i + 1 < cuts.length; i++) reads.push(s.readInto(target, cuts[i], cuts[i + 1] - cuts[i]))
      // Writer: random byte chunks; element-aligned ones as views of T, others as DataViews.
      const wcuts = [...new Set([0, ...writeCuts, bytes.length])].sort((a, b) => a - b)
      if (cork) c.cork()
      for (let i = 0; i + 1 < wcuts.length; i++) {
        const [a, b] = [wcuts[i], wcuts[i + 1]]
        const aligned = a % size === 0 && b % size === 0
        const chunk = aligned && !dataView && T !== DataView
          ? new T(src.buffer, src.byteOffset + a, (b - a) / size)
          : new DataView(src.buffer, src.byteOffset + a, b - a)
        c.write(chunk)
      }
      if (cork) c.uncork()
      await within(Promise.all(reads), 5000, 'every readInto')
      return bytesOf(target).equals(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length))
    } finally {
      c.destroy()
    }
  }), { numRuns: RUNS })
  t.pass(`${RUNS} random cases on ${rung}: identical bytes`)
}, { timeout: 60000 })
