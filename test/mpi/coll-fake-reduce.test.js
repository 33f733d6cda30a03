'use strict'
// The reduction collectives allreduce and reduce over an in-process fake of the point-to-point
// layer (test/mpi/coll-fake.js): the exhaustive matrix (coll-cases.js), segmented pipelines,
// random floats within a stated tolerance, IN_PLACE, op errors. reduceScatterBlock, scan and
// exscan: coll-fake-scan.test.js.
const t = require('tap')
const coll = require('../../dist/mpi/coll')
const { run } = require('./coll-fake')
const { fold, same } = require('./coll-ref')
const { ALGS, oneCase, matrix } = require('./coll-cases')

matrix(t, 'allreduce')
matrix(t, 'reduce')

t.test('larger vectors, segmented pipelines (segmentBytes small), P 2..7, SUM/MAX/MAXLOC on Float64/Int32', async t => {
  const failures = []
  for (const [collective, algs] of Object.entries(ALGS)) {
    for (const alg of algs) {
      for (const P of [2, 3, 4, 5, 7]) {
        for (const [opName, Kind] of [['SUM', Float64Array], ['MAX', Int32Array], ['MAXLOC', Float64Array], ['LAST', Int16Array]]) {
          const res = await oneCase(collective, alg, P, opName, Kind, 1000 + 2 * P, P * 31, 256)
          if (res !== null && res !== 'cannot') failures.push(res)
        }
      }
    }
  }
  t.same(failures, [])
})

t.test('random floats: every allreduce algorithm within P·ε·Σ|a_i| of the exact sum (ε = 2^-52 Float64, 2^-23 Float32)', async t => {
  for (const alg of ALGS.allreduce) {
    for (const P of [3, 4, 7]) {
      for (const [Kind, eps] of [[Float64Array, 2 ** -52], [Float32Array, 2 ** -23]]) {
        const n = 301
        const ins = Array.from({ length: P }, (_, r) => Kind.from({ length: n }, (_, i) => Math.sin(r * 1000 + i) * 1e3))
        const outs = await run(P, (c, r) => coll.allreduce(c, ins[r], new Kind(n), coll.SUM, { algorithm: alg, segmentBytes: 128 }))
        const want = new Float64Array(n); const mag = new Float64Array(n)
        for (const a of ins) for (let i = 0; i < n; i++) { want[i] += a[i]; mag[i] += Math.abs(a[i]) }
        let worst = 0
        for (const o of outs) for (let i = 0; i < n; i++) worst = Math.max(worst, Math.abs(o[i] - want[i]) / (P * eps * mag[i]))
        t.ok(worst <= 1, `${alg} P=${P} ${Kind.name}: worst error ${worst.toFixed(3)} of the bound`)
        let agree = true
        for (let r = 1; r < P; r++) if (!same(outs[r], outs[0])) agree = false
        t.ok(agree, `${alg} P=${P} ${Kind.name}: every rank has the same bits`)
      }
    }
  }
})

t.test('IN_PLACE: allreduce, reduce at the root, scan, reduceScatterBlock', async t => {
  const P = 5
  const ins = Array.from({ length: P }, (_, r) => Int32Array.from({ length: 2 * P }, (_, i) => r * 100 + i))
  const sum = fold('SUM', ins)
  const a = await run(P, (c, r) => coll.allreduce(c, coll.IN_PLACE, Int32Array.from(ins[r])))
  for (const x of a) t.same(Array.from(x), Array.from(sum))
  const b = await run(P, (c, r) => r === 2 ? coll.reduce(c, coll.IN_PLACE, Int32Array.from(ins[r]), coll.SUM, 2) : coll.reduce(c, ins[r], null, coll.SUM, 2))
  t.same(Array.from(b[2]), Array.from(sum)); t.equal(b[0], null)
  const s = await run(P, (c, r) => coll.scan(c, coll.IN_PLACE, Int32Array.from(ins[r])))
  for (let r = 0; r < P; r++) t.same(Array.from(s[r]), Array.from(fold('SUM', ins.slice(0, r + 1))))
  const rs = await run(P, (c, r) => coll.reduceScatterBlock(c, coll.IN_PLACE, Int32Array.from(ins[r])))
  for (let r = 0; r < P; r++) t.same(Array.from(rs[r].subarray(0, 2)), Array.from(sum.subarray(2 * r, 2 * r + 2)))
})

t.test('ops: errors and MAXLOC tie rule', async t => {
  t.throws(() => coll.BAND.check(new Float64Array(2)), { code: 'ERR_MPI_OP' }, 'bitwise on floats')
  t.throws(() => coll.MAXLOC.check(new Float64Array(3)), { code: 'ERR_MPI_OP' }, 'odd MAXLOC length')
  t.throws(() => coll.SUM.check(new DataView(new ArrayBuffer(8))), { code: 'ERR_MPI_OP' }, 'DataView')
  // kinds are the global typed array constructors themselves: a Buffer or a subclass is not one
  class Vec extends Float64Array {}
  t.throws(() => coll.SUM.check(new Vec(2)), { code: 'ERR_MPI_OP' }, 'a Float64Array subclass')
  t.throws(() => coll.SUM.check(Buffer.alloc(2)), { code: 'ERR_MPI_OP' }, 'a Buffer')
  await t.rejects(run(2, (c) => coll.allreduce(c, new Vec(2), new Vec(2))), { code: 'ERR_INVALID_ARG_TYPE' }, 'allreduce of a subclass')
  await t.rejects(run(2, (c) => coll.allreduce(c, Buffer.alloc(2), Buffer.alloc(2))), { code: 'ERR_INVALID_ARG_TYPE' }, 'allreduce of Buffers')
  t.throws(() => coll.Op.create(42), { code: 'ERR_INVALID_ARG_TYPE' })
  await t.rejects(run(2, (c) => coll.allreduce(c, new Float32Array(2), new Float32Array(2), coll.BXOR)), { code: 'ERR_MPI_OP' })
  await t.rejects(run(2, (c) => coll.allreduce(c, new Float32Array(2), new Float32Array(2), 'SUM')), { code: 'ERR_INVALID_ARG_TYPE' })
  await t.rejects(run(2, (c) => coll.allreduce(c, new Float32Array(2), new Float64Array(2))), { code: 'ERR_INVALID_ARG_TYPE' })
  const outs = await run(3, (c, r) => coll.allreduce(c, Float64Array.of(5, r, 1, r), new Float64Array(4), coll.MAXLOC))
  t.same(Array.from(outs[2]), [5, 0, 1, 0], 'equal values: the lower index wins')
  const mins = await run(3, (c, r) => coll.allreduce(c, Int32Array.of(3 - r, r), new Int32Array(2), coll.MINLOC))
  t.same(Array.from(mins[0]), [1, 2])
})
