'use strict'
// The collectives as one table (lib/mpi/coll/select.ts, invoke.ts; issue 32): every algorithm a
// public collective can choose has exactly one way to run (steps, which both tiers drive, or an
// awaited run); a user op's descriptor id does not depend on how many ops a process created
// before it; and lib/mpi/coll keeps no module-level mutable state but simd.ts's kernel table.
const t = require('tap')
const fs = require('fs')
const path = require('path')
const coll = require('../../dist/mpi/coll')
const { algorithmOf } = require('../../dist/mpi/coll/select')
const { run } = require('./coll-fake')

t.test('every chosen algorithm is a record that runs: steps or awaited, never both, never neither', async t => {
  for (const row of coll.algorithmTable()) {
    const rec = algorithmOf(row.collective, row.algorithm)
    const ways = [typeof rec.steps === 'function', typeof rec.awaited === 'function'].filter(Boolean).length
    t.equal(ways, 1, `${row.collective}/${row.algorithm}: one run`)
    if (rec.direct !== undefined) t.type(rec.steps, 'function', `${row.collective}/${row.algorithm}: a direct path is the steps' messages`)
  }
})

t.test("a user op's id is the same on ranks that created other ops before it", async t => {
  const fn = (inout, input) => { for (let i = 0; i < inout.length; i++) inout[i] = inout[i] * 2 + input[i] }
  const a = coll.Op.create(fn, { commute: false })
  coll.Op.create((x, y) => { x[0] += y[0] }) // one more op on "this rank" only
  const b = coll.Op.create(fn, { commute: false })
  t.equal(a.id, b.id, 'the same function and commute: the same id')
  t.equal(a.name, `USER${a.id}`)
  t.ok(a.id >= 100 && a.id < 0x1000000, 'outside the built-ins, within the descriptor\'s 24 bits')
  t.not(coll.Op.create(fn, { commute: true }).id, a.id, 'commute is part of it')
  t.not(coll.Op.create((x, y) => { for (let i = 0; i < x.length; i++) x[i] -= y[i] }).id, a.id, 'another function, another id')
  // two ranks whose processes created different numbers of ops before this one still agree
  const out = []
  await run(2, async (c, r) => {
    if (r === 1) coll.Op.create((x, y) => { x[0] *= y[0] })
    const op = coll.Op.create(fn, { commute: false })
    const v = Float64Array.of(r + 1, r + 2)
    out[r] = await coll.allreduce(c, coll.IN_PLACE, v, op)
  })
  t.same([...out[0]], [4, 7], 'rank order: (1, 2) ∘ (2, 3) = (1·2 + 2, 2·2 + 3)')
  t.same([...out[1]], [4, 7])
})

t.test('lib/mpi/coll: no module-level let or var but simd.ts\'s lazily built kernel table', async t => {
  const dir = path.join(__dirname, '..', '..', 'lib', 'mpi', 'coll')
  const found = []
  for (const f of fs.readdirSync(dir).filter((f) => f.endsWith('.ts'))) {
    const lines = fs.readFileSync(path.join(dir, f), 'utf8').split('\n')
    lines.forEach((l, i) => { if (/^(export\s+)?(let|var)\s/.test(l)) found.push(`${f}:${i + 1}: ${l.trim()}`) })
  }
  t.same(found.filter((l) => !l.startsWith('simd.ts:')), [], 'module-level mutable bindings')
  t.ok(found.length > 0, 'the scan sees simd.ts\'s table (it reads the sources)')
})
