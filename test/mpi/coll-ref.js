'use strict'
// Reference results for the collectives' tests, computed locally from every rank's input by a
// plain rank-order fold (independent of lib/mpi/coll/ops.ts's kernels), and input generators.

const KINDS = [Int8Array, Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array, Uint32Array,
  Float32Array, Float64Array, BigInt64Array, BigUint64Array]
const FLOAT = new Set([Float32Array, Float64Array])
const BIG = new Set([BigInt64Array, BigUint64Array])
const SIGNED = new Set([Int8Array, Int16Array, Int32Array, Float32Array, Float64Array, BigInt64Array])
const OPS = ['SUM', 'PROD', 'MIN', 'MAX', 'LAND', 'LOR', 'LXOR', 'BAND', 'BOR', 'BXOR', 'MAXLOC', 'MINLOC']

function applies (op, Kind) { return !(FLOAT.has(Kind) && (op === 'BAND' || op === 'BOR' || op === 'BXOR')) }

/** Input of `rank` for a test: n elements of Kind, integer-valued (so float sums are exact). */
function input (Kind, n, rank, seed, op) {
  const a = new Kind(n)
  let x = (seed * 7919 + rank * 104729 + 13) >>> 0
  const rnd = () => { x = (Math.imul(x, 1103515245) + 12345) >>> 0; return x >>> 8 }
  const loc = op === 'MAXLOC' || op === 'MINLOC'
  for (let i = 0; i < n; i++) {
    let v
    if (loc && (i & 1) === 1) v = rank // the index of a pair: this rank
    else if (op === 'PROD') v = rnd() % 3 + (SIGNED.has(Kind) ? -1 : 0) // -1..1 or 0..2
    else if (op === 'LAND' || op === 'LOR' || op === 'LXOR') v = rnd() % 3 === 0 ? 0 : rnd() % 5
    else if (loc) v = rnd() % 4 // few distinct values: ties happen
    else v = rnd() % 100 - (SIGNED.has(Kind) ? 50 : 0)
    a[i] = BIG.has(Kind) ? BigInt(v) : v
  }
  return a
}

function elem (op, Kind, x, y) {
  const big = BIG.has(Kind)
  const z = big ? 0n : 0; const one = big ? 1n : 1
  switch (op) {
    case 'SUM': return x + y
    case 'PROD':
      if (Kind === Int32Array) return Number(BigInt.asIntN(32, BigInt(x) * BigInt(y)))
      if (Kind === Uint32Array) return Number(BigInt.asUintN(32, BigInt(x) * BigInt(y)))
      return x * y
    case 'MIN': return y < x ? y : x
    case 'MAX': return y > x ? y : x
    case 'LAND': return (x !== z && y !== z) ? one : z
    case 'LOR': return (x !== z || y !== z) ? one : z
    case 'LXOR': return ((x !== z) !== (y !== z)) ? one : z
    case 'BAND': return x & y
    case 'BOR': return x | y
    case 'BXOR': return x ^ y
    case 'FIRST': return x
    case 'LAST': return y
  }
  throw new Error(op)
}

/** The fold a_0 ∘ a_1 ∘ ... of `arrays` (rank order) for op name. */
function fold (op, arrays) {
  const Kind = arrays[0].constructor
  const acc = new Kind(arrays[0])
  for (let r = 1; r < arrays.length; r++) {
    const b = arrays[r]
    if (op === 'MAXLOC' || op === 'MINLOC') {
      for (let i = 0; i < acc.length; i += 2) {
        const better = op === 'MAXLOC' ? b[i] > acc[i] : b[i] < acc[i]
        if (better || (b[i] === acc[i] && b[i + 1] < acc[i + 1])) { acc[i] = b[i]; acc[i + 1] = b[i + 1] }
      }
    } else {
      for (let i = 0; i < acc.length; i++) acc[i] = elem(op, Kind, acc[i], b[i])
    }
  }
  return acc
}

function same (a, b) {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i] && !(Number.isNaN(a[i]) && Number.isNaN(b[i]))) return false
  return true
}

module.exports = { KINDS, FLOAT, BIG, OPS, applies, input, elem, fold, same }
