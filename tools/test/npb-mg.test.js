'use strict'
// NPB MG (tools/src/npb/kernels/mg.ts): the report's Fortran E20.13 numbers against strings the
// NAS reference printed; each grid operator against a plain 27-point formula on random data (and
// their exact values on constants); the whole kernel at class S on 1, 2 and 4 ranks under the real
// `fastsock mpirun`, awaited and blocking, verified against NPB's L2 norm, and a corrupted run that
// must report UNSUCCESSFUL. Started as `node npb-mg.test.js rank CLASS [--blocking] [--corrupt]`,
// this file is the rank program those jobs run.
const path = require('path')
const { root, cli } = require('./helpers/cli')

const kernels = path.join(__dirname, '..', 'dist', 'npb', 'kernels')

if (process.argv[2] === 'rank') {
  const mpi = require(path.join(root, 'dist', 'mpi'))
  const { kernel } = require(path.join(kernels, 'mg.js'))
  const main = async () => {
    const comm = await mpi.init()
    const res = await kernel.run(mpi, comm, process.argv[3], {
      blocking: process.argv.includes('--blocking'),
      corrupt: process.argv.includes('--corrupt')
    })
    if (comm.rank === 0) process.stdout.write(JSON.stringify(res) + '\n')
    await mpi.finalize()
  }
  main().catch((err) => { console.error(err); process.exit(1) })
} else {
  tests()
}

function tests () {
  const t = require('tap')
  const { execFile } = require('child_process')
  const { fortranExp } = require(path.join(kernels, '..', 'format.js'))
  const fortranE = (x) => fortranExp(x, 20, 13)
  const st = require(path.join(kernels, 'mg', 'stencils.js'))
  const { kernel } = require(path.join(kernels, 'mg.js'))

  t.test('fortranE writes E20.13 as gfortran does', async (t) => {
    t.equal(fortranE(0.5307707005734e-04), ' 0.5307707005734E-04')
    t.equal(fortranE(0.1662242314632e-12), ' 0.1662242314632E-12')
    t.equal(fortranE(2.4333653090694e-6), ' 0.2433365309069E-05', 'rounds to 13 digits')
    t.equal(fortranE(9.99999999999999e-6), ' 0.1000000000000E-04', 'rounding carries into the exponent')
    t.equal(fortranE(0), ' 0.0000000000000E+00')
    t.equal(fortranE(-12.5), '-0.1250000000000E+02')
    t.equal(fortranE(1.5e-120), ' 0.1500000000000-119', 'three-digit exponents drop the E')
    t.equal(fortranE(12.5).length, 20)
  })

  // A grid with ghosts, filled from a fixed LCG so runs are reproducible.
  function grid (n1, n2, n3, seed) {
    const g = new Float64Array(n1 * n2 * n3)
    let x = seed
    for (let i = 0; i < g.length; i++) { x = (x * 1103515245 + 12345) % 2147483648; g[i] = x / 2147483648 - 0.5 }
    return g
  }
  const at = (n1, n2) => (i1, i2, i3) => i1 + n1 * (i2 + n2 * i3)
  // Sum of g over the neighbours of (i1, i2, i3) at Manhattan distance d (1: faces, 2: edges, 3: corners).
  function shell (g, ix, i1, i2, i3, d) {
    let s = 0
    for (let c = -1; c <= 1; c++) {
      for (let b = -1; b <= 1; b++) {
        for (let a = -1; a <= 1; a++) if (Math.abs(a) + Math.abs(b) + Math.abs(c) === d) s += g[ix(i1 + a, i2 + b, i3 + c)]
      }
    }
    return s
  }
  const close = (t, got, want, what) => {
    let worst = 0
    for (let i = 0; i < want.length; i++) worst = Math.max(worst, Math.abs(got[i] - want[i]))
    t.ok(worst < 1e-13, `${what}: largest difference ${worst}`)
  }

  for (const n3 of [6, 7]) t.test(`resid and psinv match the 27-point formulas (${n3 - 2} interior planes)`, async (t) => {
    const [n1, n2] = [9, 7]
    const ix = at(n1, n2)
    const u = grid(n1, n2, n3, 1)
    const v = grid(n1, n2, n3, 2)
    const a = [-8 / 3, 0, 1 / 6, 1 / 12]
    const c = [-3 / 8, 1 / 32, -1 / 64, 0]
    const r = new Float64Array(u.length)
    st.resid(u, v, r, n1, n2, n3, a[0], a[2], a[3])
    const want = new Float64Array(u.length)
    const u2 = u.slice()
    const psi = u.slice()
    st.psinv(v, psi, n1, n2, n3, c[0], c[1], c[2])
    for (let i3 = 1; i3 < n3 - 1; i3++) {
      for (let i2 = 1; i2 < n2 - 1; i2++) {
        for (let i1 = 1; i1 < n1 - 1; i1++) {
          const p = ix(i1, i2, i3)
          want[p] = v[p] - a[0] * u[p] - a[2] * shell(u, ix, i1, i2, i3, 2) - a[3] * shell(u, ix, i1, i2, i3, 3)
          u2[p] = u[p] + c[0] * v[p] + c[1] * shell(v, ix, i1, i2, i3, 1) + c[2] * shell(v, ix, i1, i2, i3, 2)
        }
      }
    }
    close(t, r, want, 'resid')
    close(t, psi, u2, 'psinv')
    // In place (v = r), as the coarse levels call it.
    const rr = v.slice()
    st.resid(u, rr, rr, n1, n2, n3, a[0], a[2], a[3])
    const inner = (g) => g.filter((_, p) => { const i1 = p % n1; const i2 = Math.floor(p / n1) % n2; const i3 = Math.floor(p / (n1 * n2)); return i1 > 0 && i2 > 0 && i3 > 0 && i1 < n1 - 1 && i2 < n2 - 1 && i3 < n3 - 1 })
    close(t, inner(rr), inner(want), 'resid in place')
    // A constant is in A's null space (a0 + 12 a2 + 8 a3 = 0): r = v.
    const one = new Float64Array(u.length).fill(1)
    st.resid(one, v, r, n1, n2, n3, a[0], a[2], a[3])
    close(t, inner(r), inner(v), 'resid of a constant')
  })

  t.test('rprj3 and interp match the trilinear formulas', async (t) => {
    const [m1, m2, m3] = [6, 5, 4] // coarse, with ghosts
    const [n1, n2, n3] = [2 * m1 - 2, 2 * m2 - 2, 2 * m3 - 2]
    const fx = at(n1, n2)
    const cx = at(m1, m2)
    const r = grid(n1, n2, n3, 3)
    const s = new Float64Array(m1 * m2 * m3)
    st.rprj3(r, n1, n2, s, m1, m2, m3)
    const want = new Float64Array(s.length)
    for (let j3 = 1; j3 < m3 - 1; j3++) {
      for (let j2 = 1; j2 < m2 - 1; j2++) {
        for (let j1 = 1; j1 < m1 - 1; j1++) {
          const [i1, i2, i3] = [2 * j1, 2 * j2, 2 * j3]
          want[cx(j1, j2, j3)] = 0.5 * r[fx(i1, i2, i3)] + 0.25 * shell(r, fx, i1, i2, i3, 1) +
            0.125 * shell(r, fx, i1, i2, i3, 2) + 0.0625 * shell(r, fx, i1, i2, i3, 3)
        }
      }
    }
    close(t, s, want, 'rprj3')

    const z = grid(m1, m2, m3, 4)
    const u = grid(n1, n2, n3, 5)
    const got = u.slice()
    st.interp(z, m1, m2, m3, got, n1, n2)
    const wantU = u.slice()
    for (let i3 = 0; i3 < n3; i3++) {
      for (let i2 = 0; i2 < n2; i2++) {
        for (let i1 = 0; i1 < n1; i1++) {
          // Fine point i lies between coarse points floor(i/2) and ceil(i/2) in each axis: the mean of those corners.
          let sum = 0
          let cnt = 0
          for (const c3 of new Set([i3 >> 1, (i3 + 1) >> 1])) {
            for (const c2 of new Set([i2 >> 1, (i2 + 1) >> 1])) {
              for (const c1 of new Set([i1 >> 1, (i1 + 1) >> 1])) { sum += z[cx(c1, c2, c3)]; cnt++ }
            }
          }
          wantU[fx(i1, i2, i3)] += sum / cnt
        }
      }
    }
    close(t, got, wantU, 'interp')
  })

  t.test('checkProcs: powers of two up to 8 ranks', async (t) => {
    for (const np of [1, 2, 4, 8]) t.equal(kernel.checkProcs('S', np), null, `${np} ranks`)
    t.match(kernel.checkProcs('S', 3), /power of two/)
    t.match(kernel.checkProcs('A', 6), /power of two/)
    t.match(kernel.checkProcs('A', 16), /at most 8/)
    t.match(kernel.checkProcs('Z', 1), /no class Z/)
    await t.rejects(kernel.run({}, { size: 3, rank: 0 }, 'S', { blocking: false, corrupt: false }), { code: 'ERR_INVALID_ARG_VALUE', message: /power of two/ }, 'run refuses 3 ranks with a code')
  })

  const job = (np, args) => new Promise((resolve) => {
    execFile(process.execPath, [cli, 'mpirun', '-n', String(np), process.execPath, __filename, 'rank', ...args],
      { timeout: 120_000, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
        const line = stdout.split('\n').find((l) => l.includes('"verified"'))
        resolve({ err, stderr, res: line ? JSON.parse(line.slice(line.indexOf('{'))) : null })
      })
  })

  for (const np of [1, 2, 4]) {
    for (const mode of ['awaited', 'blocking']) {
      t.test(`class S on ${np} ranks (${mode}) verifies`, async (t) => {
        const { err, stderr, res } = await job(np, ['S', ...(mode === 'blocking' ? ['--blocking'] : [])])
        t.error(err, stderr)
        t.ok(res, 'rank 0 reported')
        if (!res) return
        t.equal(res.verified, true, 'verified')
        t.equal(res.size, '32x32x32')
        t.equal(res.iterations, 4)
        t.match(res.lines.join('\n'), /^ L2 Norm is {2}0\.53077070057\d\dE-04$/m, 'the L2 norm line')
        t.match(res.lines.join('\n'), /^ Error is {4}0\.\d{13}E-1\d$/m, 'the error line')
        t.ok(res.seconds > 0 && res.mops > 0, 'time and Mop/s')
      })
    }
  }

  t.test('a corrupted run on 2 ranks reports UNSUCCESSFUL', async (t) => {
    const { err, stderr, res } = await job(2, ['S', '--corrupt'])
    t.error(err, stderr)
    t.ok(res, 'rank 0 reported')
    if (!res) return
    t.equal(res.verified, false, 'not verified')
    t.match(res.lines.join('\n'), /The correct L2 Norm is {2}0\.5307707005734E-04/)
  })
}
