'use strict'
// NPB EP (tools/src/npb/kernels/ep.ts): its table-driven logarithm (ep/log.ts) against Math.log,
// and the counts per annulus, which NPB does not verify (only the sums are) but which the
// branch-free acceptance and annulus code must get right: class S on 1 and 3 ranks prints the
// NAS reference binary's counts. No timing assertions.
const t = require('tap')
const path = require('path')
const { tools, run } = require('./helpers/cli')

const { ln, lnWithHighWord, HIGH_WORD } = require(path.join(tools, 'dist', 'npb', 'kernels', 'ep', 'log.js'))
const rank = path.join(__dirname, 'helpers', 'npb-cg-ft-rank.js')

/** A small LCG, so the sample is the same on every run. */
function uniforms (n, seed) {
  const out = new Float64Array(n)
  let s = seed
  for (let i = 0; i < n; i++) { s = (Math.imul(s, 1664525) + 1013904223) >>> 0; out[i] = (s + 0.5) / 2 ** 32 }
  return out
}

t.test('ln: within 4 units in the last place of Math.log where |ln t| ≥ 1/2, 4e-16 absolute nearer 1', async (t) => {
  const u = uniforms(400000, 12345)
  const v = uniforms(400000, 777)
  let worstRel = 0
  let worstAbs = 0
  let where = 0
  for (let i = 0; i < u.length; i++) {
    // (0, 1] across exponents down to 2^-90 (EP's range: t = x² + y² of multiples of 2^-45), then (1, 2^60).
    const x = i % 3 === 0 ? u[i] * 2 ** -Math.floor(v[i] * 90) : i % 3 === 1 ? 1 - u[i] * 2 ** -Math.floor(v[i] * 40) : 1 + u[i] * 2 ** Math.floor(v[i] * 60)
    const want = Math.log(x)
    const got = ln(x)
    const err = Math.abs(got - want)
    if (Math.abs(want) >= 0.5) {
      const rel = err / Math.abs(want)
      if (rel > worstRel) { worstRel = rel; where = x }
    } else if (err > worstAbs) worstAbs = err
  }
  t.ok(worstRel <= 4 * Number.EPSILON, `relative error ${worstRel.toExponential(2)} (at ${where}) ≤ 4·2^-52 where |ln t| ≥ 1/2`)
  t.ok(worstAbs <= 4e-16, `absolute error ${worstAbs.toExponential(2)} ≤ 4e-16 where |ln t| < 1/2`)
  t.equal(ln(1), 0, 'ln 1 = 0')
  t.equal(ln(0.5), -Math.LN2, 'ln 1/2')
})

t.test('lnWithHighWord reads the word a Float64Array holds (the form EP calls)', async (t) => {
  const f = new Float64Array([0.3, 1e-20, 0.9999999, 1.0001])
  const w = new Int32Array(f.buffer)
  for (let i = 0; i < f.length; i++) {
    const got = lnWithHighWord(f[i], w[2 * i + HIGH_WORD])
    t.ok(Math.abs(got - Math.log(f[i])) <= 4 * Number.EPSILON * Math.abs(Math.log(f[i])), `ln ${f[i]}: ${got} against Math.log's ${Math.log(f[i])}`)
  }
})

// The NAS reference's EP.S (NPB 3.4, ep.S.x) prints these counts, pairs per square annulus l = 0..9.
const REFERENCE_COUNTS_S = [6140517, 5865300, 1100361, 68546, 1648, 17, 0, 0, 0, 0]

t.test("EP class S: the reference's counts per annulus and pair total, on 1 and 3 ranks", async (t) => {
  for (const np of [1, 3]) {
    const res = await run(['mpirun', '-n', String(np), process.execPath, rank, 'ep', 'S'], { timeout: 300_000 })
    t.equal(res.code, 0, `${np} ranks: exit 0${res.code === 0 ? '' : `\n${res.stderr}`}`)
    const line = res.stdout.split('\n').map((l) => l.replace(/^\[0\] /, '')).find((l) => l.startsWith('{'))
    if (!t.ok(line, 'rank 0 printed its result')) continue
    const r = JSON.parse(line)
    t.equal(r.verified, true, `${np} ranks: verified`)
    const counts = r.lines.filter((l) => /^\s*\d\s+\d+\.$/.test(l)).map((l) => Number(l.trim().split(/\s+/)[1].replace('.', '')))
    t.same(counts, REFERENCE_COUNTS_S, `${np} ranks: the counts`)
    const total = REFERENCE_COUNTS_S.reduce((a, b) => a + b, 0)
    t.ok(r.lines.some((l) => l === `No. Gaussian Pairs =${String(total).padStart(14)}.`), `${np} ranks: ${total} pairs`)
  }
})
