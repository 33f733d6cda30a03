'use strict'
// The vector reduction kernels (lib/mpi/coll/simd.ts, WebAssembly SIMD) against an independent
// per-element reference (coll-ref.js's elem, stored through the typed array as the scalar kernels
// store): arbitrary values (full integer ranges that wrap and clamp, NaN, ±Infinity and -0 for
// floats), offsets and lengths around the 16-byte vectors and the 64 KiB chunks.
const t = require('tap')
const fc = require('fast-check')
const { vectorKernel, SIMD_MIN_BYTES } = require('../../dist/mpi/coll/simd')
const mpi = require('../../dist/mpi')
const { elem } = require('./coll-ref')

const INT = ['Int8Array', 'Uint8Array', 'Uint8ClampedArray', 'Int16Array', 'Uint16Array', 'Int32Array', 'Uint32Array', 'BigInt64Array', 'BigUint64Array']
const FLOAT = ['Float32Array', 'Float64Array']
/** The (op, kind) pairs simd.ts serves: every other pair stays scalar. */
const SERVED = {
  SUM: [...INT, ...FLOAT],
  PROD: ['Int16Array', 'Uint16Array', 'Int32Array', 'Uint32Array', 'BigInt64Array', 'BigUint64Array', ...FLOAT],
  MIN: INT.filter(k => !k.startsWith('Big')),
  MAX: INT.filter(k => !k.startsWith('Big')),
  BAND: INT,
  BOR: INT,
  BXOR: INT
}

t.test('a vector kernel exists for every served pair, and none for float MIN/MAX or the logical ops', async t => {
  for (const [op, kinds] of Object.entries(SERVED)) for (const k of kinds) t.type(vectorKernel(op, k), 'function', `${op} ${k}`)
  for (const k of FLOAT) for (const op of ['MIN', 'MAX']) t.equal(vectorKernel(op, k), null, `${op} ${k} stays scalar`)
  for (const op of ['LAND', 'LOR', 'LXOR', 'MAXLOC']) t.equal(vectorKernel(op, 'Int32Array'), null, `${op} stays scalar`)
})

/** Bytes of a value of `kind` from 8 arbitrary bytes (so every bit pattern occurs). */
function filled (kind, n, bytes) {
  const C = globalThis[kind]
  const a = new C(n)
  const u8 = new Uint8Array(a.buffer)
  for (let i = 0; i < u8.length; i++) u8[i] = bytes[i % bytes.length] ^ (i * 131)
  if (FLOAT.includes(kind)) {
    // specials among the random patterns (every bit pattern is already a float, NaNs included)
    const sp = [NaN, Infinity, -Infinity, -0, 0, 1e-310, -1.5]
    for (let i = 0; i < n; i += 5) a[i] = sp[(i / 5) % sp.length]
  }
  return a
}

const same = (a, b) => a.length === b.length && a.every((x, i) => Object.is(x, b[i]) || (Number.isNaN(x) && Number.isNaN(b[i])))

t.test('vector kernels = the per-element reference (fast-check)', async t => {
  const pairs = Object.entries(SERVED).flatMap(([op, kinds]) => kinds.map(k => [op, k]))
  const arb = fc.record({
    pair: fc.constantFrom(...pairs),
    n: fc.oneof(fc.integer({ min: 0, max: 300 }), fc.integer({ min: 16380, max: 16400 }), fc.constantFrom(65536, 65537, 131075)),
    ao: fc.integer({ min: 0, max: 9 }),
    bo: fc.integer({ min: 0, max: 9 }),
    bytes: fc.uint8Array({ minLength: 8, maxLength: 64 })
  })
  let vectorRuns = 0
  await fc.assert(fc.property(arb, ({ pair: [op, kind], n, ao, bo, bytes }) => {
    const C = globalThis[kind]
    const a = filled(kind, n + ao + 3, bytes)
    const b = filled(kind, n + bo + 5, bytes.map(x => x * 7 + 1))
    const expect = new C(a)
    for (let i = 0; i < n; i++) expect[ao + i] = elem(op, C, a[ao + i], b[bo + i])
    mpi[op].apply(a, ao, b, bo, n, true)
    if (n * C.BYTES_PER_ELEMENT >= SIMD_MIN_BYTES) vectorRuns++
    return same(a, expect)
  }), { numRuns: 400 })
  t.ok(vectorRuns > 100, `${vectorRuns} of 400 cases ran the vector kernels`)
})
