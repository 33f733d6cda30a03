'use strict'
// NPB's generator (tools/src/npb/random.ts) is the reference's exact sequence x(k+1) = a·x(k)
// mod 2^46: randlc, vranlc (any multiplier, e.g. a power of 5^13) and power46 against BigInt.
const t = require('tap')
const path = require('path')
const r = require(path.join(__dirname, '..', 'dist', 'npb', 'random.js'))

const M = 1n << 46n

t.test('randlc and vranlc give a·x mod 2^46, bit for bit', async t => {
  const s = new Float64Array([314159265])
  let b = 314159265n
  let bad = -1
  for (let i = 0; i < 20000 && bad < 0; i++) {
    const v = r.randlc(s, r.A)
    b = (b * 1220703125n) % M
    if (BigInt(s[0]) !== b || v !== Number(b) * 2 ** -46) bad = i
  }
  t.equal(bad, -1, 'randlc: every step exact')
  const a = r.power46(r.A, 777)
  const y = new Float64Array(20000)
  const st = new Float64Array([271828183])
  r.vranlc(y.length, st, a, y, 0)
  let c = 271828183n
  const ab = BigInt(a)
  bad = -1
  for (let i = 0; i < y.length && bad < 0; i++) { c = (c * ab) % M; if (Number(c) * 2 ** -46 !== y[i]) bad = i }
  t.equal(bad, -1, 'vranlc with a^777: every value exact')
  t.equal(BigInt(st[0]), c, 'vranlc leaves the state at the last value')
})

t.test('power46 is a^n mod 2^46', async t => {
  for (const n of [0, 1, 2, 12345, 2 ** 20 + 7]) {
    let p = 1n
    let base = 1220703125n
    for (let k = BigInt(n); k > 0n; k >>= 1n) { if (k & 1n) p = (p * base) % M; base = (base * base) % M }
    t.equal(BigInt(r.power46(r.A, n)), p, `n = ${n}`)
  }
})
