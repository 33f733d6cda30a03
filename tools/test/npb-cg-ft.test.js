'use strict'
// NPB's CG and FT kernels (tools/src/npb/kernels/cg.ts, ft.ts) run directly under `fastsock
// mpirun` (no driver): class S verifies on 1, 2 and 4 ranks with the reference's report lines,
// the blocking form too, and a corrupted result reports failure. Also the Fortran number
// formats the reports use, and the ranks each kernel refuses. No timing assertions.
const t = require('tap')
const path = require('path')
const { tools, run } = require('./helpers/cli')

const rank = path.join(__dirname, 'helpers', 'npb-cg-ft-rank.js')
const { fortranExp, fortranFixed } = require(path.join(tools, 'dist', 'npb', 'format.js'))
const { makeGrid } = require(path.join(tools, 'dist', 'npb', 'kernels', 'cg', 'matrix.js'))

/** Runs a kernel on `np` ranks; resolves with rank 0's KernelResult. */
async function job (t, np, kernel, cls, ...flags) {
  const env = flags.includes('timers') ? { env: { ...process.env, FASTSOCK_NPB_TIMERS: '1' } } : {}
  const res = await run(['mpirun', '-n', String(np), process.execPath, rank, kernel, cls, ...flags.filter((f) => f !== 'timers')], env)
  t.equal(res.code, 0, `${kernel} ${cls} -n ${np} ${flags.join(' ')}: exit 0${res.code === 0 ? '' : `\n${res.stderr}`}`)
  const line = res.stdout.split('\n').map((l) => l.replace(/^\[0\] /, '')).find((l) => l.startsWith('{'))
  t.ok(line, 'rank 0 printed its result')
  return JSON.parse(line)
}

t.test("the Fortran formats of CG's and FT's lines", async (t) => {
  t.equal(fortranExp(8.597177507864794, 20, 13), ' 0.8597177507865E+01', 'E20.13 (CG zeta)')
  t.equal(fortranExp(1.033104665906e-15, 20, 13), ' 0.1033104665906E-14', 'E20.13, negative exponent (CG error)')
  t.equal(fortranExp(0.13805568625814e-12, 21, 14), ' 0.13805568625814E-12', 'E21.14 (CG ||r||)')
  t.equal(fortranExp(554.6087004964, 22, 12, 'D', 1), '    5.546087004964D+02', '1PD22.12 (FT checksum)')
  t.equal(fortranFixed(9.998644157914, 20, 13), '     9.9986441579140', 'F20.13 (CG zeta per iteration)')
})

t.test("CG's process grid: NPB-MPI's partners", async (t) => {
  const g1 = makeGrid(1400, 1, 0)
  t.same([g1.nprows, g1.npcols, g1.l2npcols], [1, 1, 0], 'one rank: no exchange')
  const g2 = [0, 1].map((me) => makeGrid(1400, 2, me))
  t.same(g2.map((g) => [g.nprows, g.npcols, g.exchProc, g.reduceExchProc[0]]), [[1, 2, 0, 1], [1, 2, 1, 0]], '2 ranks: 1 x 2, transpose to itself, reduce with the other')
  t.same(g2.map((g) => [g.firstcol, g.lastcol, g.sendStart, g.sendLen, g.reduceSendStarts[0], g.reduceSendLengths[0]]), [[1, 700, 0, 700, 700, 700], [701, 1400, 700, 700, 0, 700]], '2 ranks: halves of the columns; each sends the other half of w')
  const g4 = [0, 1, 2, 3].map((me) => makeGrid(1400, 4, me))
  t.same(g4.map((g) => g.exchProc), [0, 2, 1, 3], '4 ranks (2 x 2): the transpose partners')
  t.same(g4.map((g) => g.reduceExchProc[0]), [1, 0, 3, 2], '4 ranks: the row partners')
})

t.test('checkProcs refuses what NPB-MPI cannot run', async (t) => {
  const { kernel: cg } = require(path.join(tools, 'dist', 'npb', 'kernels', 'cg.js'))
  const { kernel: ft } = require(path.join(tools, 'dist', 'npb', 'kernels', 'ft.js'))
  for (const k of [cg, ft]) {
    t.equal(k.checkProcs('S', 4), null, `${k.name}: 4 ranks`)
    t.match(k.checkProcs('S', 3), /power of two/, `${k.name}: 3 ranks`)
  }
  t.match(ft.checkProcs('W', 64), /at most 32 ranks/, 'FT W: more ranks than z-planes')
})

t.test("CG's timers (FASTSOCK_NPB_TIMERS=1): rank 0's split of the timed region and its row sums", async (t) => {
  const r = await job(t, 2, 'cg', 'S', 'timers')
  t.equal(r.verified, true, 'verified')
  const split = r.lines.map((l) => /^ Rank 0: row sums ([\d.]+) s, reductions and transposes ([\d.]+) s, the rest \(compute\) (-?[\d.]+) s of ([\d.]+) s; CPU time ([\d.]+) s$/.exec(l)).find(Boolean)
  t.ok(split, `the split line (${r.lines.join(' | ')})`)
  if (split) {
    const [sums, transposes, rest, mine] = split.slice(1, 5).map(Number)
    t.ok(sums > 0 && transposes > 0 && rest > 0, 'every part took some time')
    t.ok(Math.abs(sums + transposes + rest - mine) < 0.003, 'the parts add up to the timed region')
    t.ok(mine <= r.seconds + 1e-3, 'rank 0\'s own time is at most the reported (maximum) time')
  }
  // 15 outer steps x (the initial rho, 25 x 2 in the CG iterations, the residual's) = 780 sums.
  const sums = r.lines.map((l) => /^ Rank 0: (\d+) row sums, µs p50 (\d+) p90 (\d+) p99 (\d+) max (\d+); (\d+) over 1 ms took ([\d.]+) ms$/.exec(l)).find(Boolean)
  t.ok(sums, 'the row sums line')
  if (sums) {
    const [n, p50, p90, p99, max] = sums.slice(1, 6).map(Number)
    t.equal(n, 780, 'every row sum of the timed region was timed')
    t.ok(p50 <= p90 && p90 <= p99 && p99 <= max, 'the percentiles are ordered')
  }
  const plain = await job(t, 2, 'cg', 'S')
  t.notOk(plain.lines.some((l) => l.startsWith(' Rank 0:')), 'without the variable: no timers lines')
})

for (const kernel of ['cg', 'ft']) {
  t.test(`${kernel} class S verifies on 1, 2 and 4 ranks`, async (t) => {
    for (const np of [1, 2, 4]) {
      const r = await job(t, np, kernel, 'S')
      t.equal(r.verified, true, `${np} ranks: verified`)
      t.ok(r.seconds > 0 && r.mops > 0, `${np} ranks: time and Mop/s`)
      if (kernel === 'cg') {
        t.equal(r.size, '1400')
        t.equal(r.iterations, 15)
        t.ok(r.lines.includes(' Zeta is     0.8597177507865E+01'), `${np} ranks: zeta as the reference prints it`)
      } else {
        t.equal(r.size, '64x64x64')
        t.equal(r.iterations, 6)
        t.ok(r.lines.includes(' T =    1     Checksum =    5.546087004964D+02    4.845363331978D+02'), `${np} ranks: the first checksum as the reference prints it`)
      }
    }
  })

  t.test(`${kernel}: the blocking form verifies; a corrupted result does not`, async (t) => {
    const b = await job(t, 2, kernel, 'S', 'blocking')
    t.equal(b.verified, true, 'blocking, 2 ranks: verified')
    const c = await job(t, 2, kernel, 'S', 'corrupt')
    t.equal(c.verified, false, 'corrupt: not verified')
    t.ok(c.lines.some((l) => /VERIFICATION FAILED|Result verification failed/.test(l)), 'corrupt: the failure line')
  })
}
