'use strict'
// Shared by the in-process reduction tests (coll-fake-reduce/-scan.test.js): one reduction case
// over the fake point-to-point layer, compared with a rank-order fold computed locally, and the
// exhaustive matrix (every algorithm × P = 1..7 × every op × every array kind × 0, 1, 7 elements;
// MAXLOC/MINLOC: 0, 1, 7 pairs). Inputs are integer-valued, so float sums are exact in any order.
const coll = require('../../dist/mpi/coll')
const { run } = require('./coll-fake')
const { KINDS, OPS, applies, input, fold, same } = require('./coll-ref')

const FIRST = coll.Op.create((inout, input) => {}, { commute: false })
const LAST = coll.Op.create((inout, input) => { inout.set(input) }, { commute: false })
const opOf = (name) => name === 'FIRST' ? FIRST : name === 'LAST' ? LAST : coll[name]
const ALL_OPS = [...OPS, 'FIRST', 'LAST']
const sizesFor = (op) => (op === 'MAXLOC' || op === 'MINLOC') ? [0, 2, 14] : [0, 1, 7]

const ALGS = {
  allreduce: ['recursiveDoubling', 'rabenseifner', 'ring', 'reduceBcast'],
  reduce: ['binomial', 'rabenseifner'],
  reduceScatterBlock: ['ring', 'reduceThenScatter'],
  scan: ['recursiveDoubling', 'linear'],
  exscan: ['recursiveDoubling', 'linear']
}

function prefix (op, ins, r, exclusive) { return fold(op, ins.slice(0, exclusive ? r : r + 1)) }

/** Run one case; resolves with a failure message or null. Errors ERR_MPI_COLL_ALGORITHM are returned as 'cannot'. */
async function oneCase (coll_, alg, P, opName, Kind, n, seed, segmentBytes = 48) {
  const op = opOf(opName)
  const root = seed % P
  const unit = op.unit
  const m = coll_ === 'reduceScatterBlock' ? n : n // elements per block for reduceScatterBlock
  const len = coll_ === 'reduceScatterBlock' ? P * m : n
  const ins = Array.from({ length: P }, (_, r) => input(Kind, len, r, seed, opName))
  if (unit === 2 && coll_ === 'reduceScatterBlock' && (m & 1)) return null
  let outs
  try {
    outs = await run(P, async (c, r) => {
      const opts = { algorithm: alg, segmentBytes }
      switch (coll_) {
        case 'allreduce': return await coll.allreduce(c, ins[r], new Kind(n), op, opts)
        case 'reduce': return await coll.reduce(c, ins[r], r === root ? new Kind(n) : null, op, root, opts)
        case 'reduceScatterBlock': return await coll.reduceScatterBlock(c, ins[r], new Kind(m), op, opts)
        case 'scan': return await coll.scan(c, ins[r], new Kind(n), op, opts)
        case 'exscan': { const o = new Kind(n); return await coll.exscan(c, ins[r], o, op, opts) }
      }
    }, { seed, maxDelay: seed % 4 === 0 ? 1 : 0 })
  } catch (e) {
    if (e.code === 'ERR_MPI_COLL_ALGORITHM') return 'cannot'
    return `threw ${e.code} ${e.message}`
  }
  for (let r = 0; r < P; r++) {
    let want
    if (coll_ === 'allreduce') want = fold(opName, ins)
    else if (coll_ === 'reduce') want = r === root ? fold(opName, ins) : null
    else if (coll_ === 'reduceScatterBlock') want = fold(opName, ins).subarray(r * m, (r + 1) * m)
    else if (coll_ === 'scan') want = prefix(opName, ins, r, false)
    else want = r === 0 ? new Kind(n) : prefix(opName, ins, r, true)
    const got = outs[r]
    if (want === null ? got !== null : !same(got, want)) {
      return `${coll_}/${alg} P=${P} ${opName} ${Kind.name} n=${n} root=${root} rank ${r}: got [${got && Array.from(got).slice(0, 8)}] want [${want && Array.from(want).slice(0, 8)}]`
    }
  }
  return null
}

/** The matrix for one collective as a tap subtest. */
function matrix (t, collective) {
  const algs = ALGS[collective]
  t.test(`${collective}: every algorithm × P 1..7 × op × kind × size`, async t => {
    const failures = []
    let cases = 0; let cannot = 0
    for (const alg of algs) {
      for (let P = 1; P <= 7; P++) {
        for (const opName of ALL_OPS) {
          for (const Kind of KINDS) {
            if (!applies(opName, Kind)) continue
            for (const n of sizesFor(opName)) {
              const res = await oneCase(collective, alg, P, opName, Kind, n, cases)
              cases++
              if (res === 'cannot') { cannot++; continue }
              if (res !== null) failures.push(res)
            }
          }
        }
      }
    }
    t.same(failures.slice(0, 10), [], `${cases} cases (${cannot} refused by a forced algorithm that cannot serve them), no failure`)
  })
}

module.exports = { ALGS, ALL_OPS, FIRST, LAST, opOf, sizesFor, oneCase, matrix }
