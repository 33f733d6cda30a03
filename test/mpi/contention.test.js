'use strict'
// lib/mpi/contention.ts: a spin that returned well after its bound marks the CPUs contended for
// a pause that doubles while it recurs. Times are given (performance.now()-like ms), not measured.
const t = require('tap')
const c = require('../../dist/mpi/contention')

t.test('a late spin marks contention for a pause; a spin on time does not; recurrence doubles the pause', async t => {
  const m0 = c.contentionMarks()
  c.spinEnded(1000, 200, 1000.5) // 500 µs for a 200 µs bound: 300 µs late, not preempted
  t.equal(c.contentionMarks(), m0, 'on time (within 500 µs of its bound): no mark')
  t.notOk(c.contended(1000.6))
  c.spinEnded(1000, 200, 1003) // 3 ms for 200 µs
  t.equal(c.contentionMarks(), m0 + 1)
  t.ok(c.contended(1003), 'contended at once')
  t.ok(c.contended(1102), 'for the first pause (100 ms)')
  t.notOk(c.contended(1104), 'and not after it')
  c.spinEnded(1500, 200, 1503) // again within 1 s of the end of the pause: 200 ms
  t.ok(c.contended(1702))
  t.notOk(c.contended(1704))
  c.spinEnded(9000, 200, 9003) // long after: back to 100 ms
  t.ok(c.contended(9102))
  t.notOk(c.contended(9104))
})
